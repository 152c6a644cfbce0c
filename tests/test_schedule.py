"""The planner (mlacourse.schedule.plan_decode, numpy) and the schedule/traffic report.

The plan must cover every (sequence, KV block) exactly once, in order, cut a sequence only
where a share boundary falls, give each split sequence contiguous partial slots, and stay
within the imbalance goal; the report (python -m kernels.schedule_report) must meet version
4's goals (imbalance <= 1.05, HBM bytes 1.00x the cache at h_q=128) on the bench's and
FlashMLA's length distributions."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlacourse import schedule as S


def check_plan(lens, h_q, s_q, num_sms, block_n=64, overhead=S.FIXED_OVERHEAD_BLOCKS):
    plan = S.plan_decode(lens, h_q, s_q, num_sms, block_n=block_n, overhead=overhead)
    blocks = S.cdiv(np.asarray(lens), block_n)
    assert plan.num_parts == max(1, num_sms // plan.row_blocks) and len(plan.part_start) == plan.num_parts + 1
    assert plan.part_start[0] == 0 and plan.part_start[-1] == len(plan.segments)
    assert np.all(np.diff(plan.part_start) >= 0)
    covered = {}
    for seq, b0, b1, slot in plan.segments.tolist():
        covered.setdefault(seq, []).append((b0, b1, slot))
    assert sorted(covered) == list(range(len(lens))), "every sequence appears (zero-length ones too)"
    for seq, pieces in covered.items():
        ranges = [(b0, b1) for b0, b1, _ in pieces]
        assert ranges[0][0] == 0 and ranges[-1][1] == blocks[seq], (seq, ranges)
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:])), f"seq {seq}: gap or overlap {ranges}"
        slots = [s for _, _, s in pieces]
        if len(pieces) == 1:
            assert slots == [-1], "an unsplit sequence writes its output directly"
        else:
            base = slots[0]
            assert slots == list(range(base, base + len(pieces))), "a split sequence's slots are contiguous"
            assert [seq, base, len(pieces)] in plan.combine.tolist()
    assert len(plan.combine) == sum(len(p) > 1 for p in covered.values())
    seq_of_slot = S.plan_seq_of_slot(plan)
    assert np.all(seq_of_slot >= 0) and len(seq_of_slot) == plan.num_slots
    # work per part = its blocks + overhead per piece
    for p in range(plan.num_parts):
        segs = plan.segments[plan.part_start[p]:plan.part_start[p + 1]]
        assert plan.part_work[p] == int((segs[:, 2] - segs[:, 1]).sum() + overhead * len(segs))
    return plan


@pytest.mark.parametrize("lens, h_q, s_q, num_sms", [
    ([0, 1, 0, 1], 16, 1, 4),
    ([1] * 127 + [16384], 128, 1, 132),
    ([8192] * 128, 128, 1, 132),
    ([5000], 64, 2, 132),  # one sequence: cut across every part
    ([0] * 10, 16, 1, 3),
    ([100, 200, 300], 128, 4, 7),  # 8 row blocks on 7 SMs: one part
])
def test_plan_covers_everything_once(lens, h_q, s_q, num_sms):
    check_plan(lens, h_q, s_q, num_sms)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(lens=st.lists(st.integers(0, 5000), min_size=1, max_size=40), h_q=st.sampled_from([1, 16, 64, 128]),
       s_q=st.integers(1, 3), num_sms=st.integers(1, 140), block_n=st.sampled_from([16, 64]),
       overhead=st.integers(0, 8))
def test_plan_properties_random(lens, h_q, s_q, num_sms, block_n, overhead):
    plan = check_plan(lens, h_q, s_q, num_sms, block_n, overhead)
    total = int(plan.part_work.sum())
    # a full part has less than overhead + 1 left over, so the smallest feasible budget, and the
    # busiest part, is within 2 * (overhead + 1) of the mean (a plan that ignored balance would not be)
    assert plan.part_work.max() <= S.cdiv(total, plan.num_parts) + 2 * (overhead + 1)


def test_plan_is_balanced_on_real_batches():
    rng = np.random.default_rng(1)
    for mean in (4096, 16384):
        for draw in (S.lengths_bench, S.lengths_flashmla):
            lens = draw(rng, 128, mean, 1)
            for h_q in (16, 128):
                plan = check_plan(lens, h_q, 1, 132)
                work = plan.part_work
                assert work.max() / (work.sum() / plan.num_parts) <= 1.05


def test_flashmla_lengths_are_not_clipped():
    lens = S.lengths_flashmla(np.random.default_rng(0), 4096, 8192, 2)
    assert lens.min() >= 2 and lens.max() > 2 * 8192, "FlashMLA draws max(normal, s_q) with no upper clip"
    clipped = S.lengths_bench(np.random.default_rng(0), 4096, 8192, 2)
    assert clipped.max() <= 2 * 8192


def test_l2_model_counts_reuse():
    tile = 1000
    # the same 10 tiles twice: with room for all of them the second pass hits, with room for 5 it misses
    reads = [(t, k) for t, k in enumerate(list(range(10)) * 2)]
    assert S.l2_traffic(reads, 10 * tile, tile) == 10 * tile
    assert S.l2_traffic(reads, 5 * tile, tile) == 20 * tile


def test_the_grid_launched_sequence_fastest_reads_the_cache_twice_at_128_heads():
    """Version 3's grid with the sequence fastest: the two row blocks of a sequence run 128
    programs apart and the model re-reads its KV from HBM; adjacent row blocks read it once."""
    lens = S.lengths_flashmla(np.random.default_rng(0), 128, 8192, 1)
    seq_fastest = S.schedule_stats("splitkv", lens, 128, 1, seq_fastest=True)
    adjacent = S.schedule_stats("splitkv", lens, 128, 1, seq_fastest=False)
    planned = S.schedule_stats("planned", lens, 128, 1)
    assert seq_fastest.hbm_per_kv > 1.9 and adjacent.hbm_per_kv < 1.01 and planned.hbm_per_kv < 1.01
    assert planned.imbalance < 1.05 < seq_fastest.imbalance
    assert planned.partial_bytes < seq_fastest.partial_bytes / 2


def test_schedule_report_meets_the_goals(capsys):
    from kernels import schedule_report
    table = schedule_report.main([])
    text = capsys.readouterr().out
    assert "| v4 planned |" in text and "| v3 sequence fastest |" in text
    ok, bad = schedule_report.goals_met(table)
    assert ok, bad
    v4 = [r for r in table if r["design"] == "v4 planned" and r["batch"].startswith(("bench", "flashmla"))]
    assert len(v4) == 18 and max(r["imbalance"] for r in v4) <= 1.05
    seq_fastest = [r for r in table if r["design"] == "v3 sequence fastest" and r["h_q"] == 128 and r["s_q"] == 1
                   and r["batch"].startswith(("bench", "flashmla"))]
    assert min(r["hbm"] for r in seq_fastest) > 1.9, "the model must show the sequence-fastest grid's double read"


def test_work_per_sm_plot(tmp_path):
    from kernels import schedule_report
    png = tmp_path / "w.png"
    schedule_report.plot_work_per_sm(str(png))
    assert png.stat().st_size > 5000
    on_grid, planned = S.work_per_sm(S.lengths_flashmla(np.random.default_rng(0), 128, 8192, 1), 128)
    assert len(on_grid) == len(planned) == 132
    assert planned.max() / planned.mean() < 1.05 < on_grid.max() / on_grid.mean()


# ---- batch invariance: fixed split size, and a case whose cut certainly shows --------------

def test_fixed_split_pieces_depend_on_the_sequence_alone():
    a = S.fixed_split_pieces([300, 5000, 0], split_blocks=16, block_n=64)
    b = S.fixed_split_pieces([5000, 7, 300], split_blocks=16, block_n=64)
    seq_a = [(b0, b1) for s, b0, b1 in a if s == 1]
    seq_b = [(b0, b1) for s, b0, b1 in b if s == 0]
    assert seq_a == seq_b == [(0, 16), (16, 32), (32, 48), (48, 64), (64, 79)]  # 5000 tokens = 79 blocks
    assert [(b0, b1) for s, b0, b1 in a if s == 0] == [(0, 5)] and [(b0, b1) for s, b0, b1 in a if s == 2] == [(0, 0)]
    with pytest.raises(ValueError):
        S.fixed_split_pieces([10], split_blocks=0)


def test_fixed_split_keeps_parallelism_on_the_skewed_batch():
    skewed = np.array([1] * 127 + [16384])
    plan = S.schedule_stats("planned", skewed, 128, 1)
    uncut = S.schedule_stats("planned", skewed, 128, 1, batch_invariant=True)
    fixed = S.schedule_stats("fixed", skewed, 128, 1, split_blocks=4)
    assert fixed.work_max < uncut.work_max / 10  # one 16K sequence no longer sits on one SM
    assert plan.work_max <= fixed.work_max  # the planner, free to cut anywhere, is still best
    assert fixed.split_seqs == 1 and fixed.splits == 64  # 256 blocks in pieces of 4
    with pytest.raises(ValueError, match="split_blocks"):
        S.schedule_stats("fixed", skewed, 128, 1)


def test_cancelling_rows_make_every_cut_show():
    from mlacourse import batch_invariance as bi
    rows = bi.cancelling_rows(300, np.random.default_rng(5)).astype(np.float32)
    q = np.zeros((4, 576), np.float32)  # every score 0: out = the mean of the value columns
    cuts = ([(0, 300)], [(0, 64), (64, 300)], [(0, 192), (192, 300)])
    outs = [bi.decode_by_pieces(q, rows, cut, 0.05) for cut in cuts]
    exact = rows[:, :512].astype(np.float64).mean(axis=0)
    for o, lse in outs:
        assert np.abs(o - exact).max() < 8 * 0.125 / 300  # float32-close to the exact mean ...
        assert np.allclose(lse, np.log(300), atol=1e-5)
    for i in range(len(outs)):
        for j in range(i + 1, len(outs)):  # ... and every two cuts differ in most values
            n_diff, _ = bi.bits_differ(outs[i][0], outs[j][0])
            assert n_diff > 0.8 * outs[i][0].size, (cuts[i], cuts[j], n_diff)
    with pytest.raises(ValueError):
        bi.cancelling_rows(1, np.random.default_rng(0))
