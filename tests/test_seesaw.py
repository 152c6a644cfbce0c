"""mlacourse.seesaw: the register wall, the seesaw's step order against float64 references
(on NaN-poisoned paged caches), and the schedule model's rules and figures."""
import math

import numpy as np
import pytest

from mlacourse import seesaw as S
from mlacourse.attention import attention
from mlacourse.hardware import GPUS
from mlacourse.paged import gather_paged, make_paged_cache


# ---- the register wall ---------------------------------------------------------------------

def test_a_64x512_fp32_output_is_half_the_register_file():
    assert S.accumulator_registers() == 64 * 512 == 32_768 == S.REGS_PER_SM // 2


def test_register_layouts():
    one, pingpong, seesaw = S.REGISTER_LAYOUTS
    # one warpgroup: 32,768 values over 128 threads = 256 registers each, past the 255 cap
    assert one.o == 32_768 // 128 == 256 and not one.fits and one.left < 0
    # ping-pong: two such accumulators are every register of the SM
    assert pingpong.o_per_sm == 2 * 32_768 == S.REGS_PER_SM and not pingpong.fits
    # seesaw: half each, 128 per thread; S [64, 64] fp32 = 32, P bf16 = 16, state 6
    assert (seesaw.o, seesaw.s, seesaw.p, seesaw.state) == (128, 32, 16, 6)
    assert seesaw.used == 182 and seesaw.left == 255 - 182 and seesaw.fits
    assert seesaw.per_sm == 2 * 128 * 182 <= S.REGS_PER_SM


def test_register_split_between_two_warpgroups():
    """Triton's rule: the default warpgroup gets the pair's 2 x cap less the worker's share, in
    multiples of 8. Its own cap for 8 warps (65,536 / 256 = 256) is one past ptxas's limit: dropped."""
    assert S.register_split(256, 256) == dict(cap=256, default=256, worker=256, honoured=False, valid=False,
                                              per_sm=65_536)
    split = S.register_split(255, 248)  # version 6: MAXNREG and WG1_REGS
    assert split["valid"] and (split["default"], split["worker"]) == (256, 248)  # 255 + 7 -> 256
    assert split["per_sm"] == 128 * (256 + 248) <= S.REGS_PER_SM
    assert S.register_split(255, 240)["default"] == 264 and not S.register_split(255, 240)["valid"]  # past 256
    assert S.register_split(248, 240)["default"] == 256 and S.register_split(248, 240)["valid"]


def test_version_6_partitions_floor_and_what_the_compiler_made():
    """The floor at each warpgroup's busiest point (warpgroup 0 keeps P0 in fp32 and in bf16 while
    its product runs) against the recorded compile: both shares hold their code without a spill."""
    wg0, wg1 = S.seesaw_partitions("3.6.0")
    assert wg0.floor == 128 + 32 + 16 + 6 == 182 and wg1.floor == 128 + 32 + 6 == 166
    assert wg0.floor > wg1.floor and wg0.setmaxnreg > wg1.setmaxnreg  # the split follows the need
    for p in (wg0, wg1):
        assert p.floor < p.registers_named <= p.setmaxnreg and p.loop_local_ops == 0
    c = S.COMPILED_V6["3.6.0"]
    assert S.register_split(c["maxnreg"], c["setmaxnreg"][1])["default"] == c["setmaxnreg"][0]
    equal = S.COMPILED_V6_EQUAL_SHARES["3.6.0"]
    assert not S.register_split(equal["maxnreg"], equal["setmaxnreg"][1])["honoured"]
    assert equal["loop_local_ops"][0] > 0 and equal["spill_bytes"] > 0


def test_register_picture_is_drawn():
    import matplotlib
    matplotlib.use("Agg")
    fig = S.draw_register_budget()
    assert len(fig.axes) == 2 and len(fig.axes[0].patches) == 4 * len(S.REGISTER_LAYOUTS)


def test_steps_follow_the_blog_numbering():
    assert [s.number for s in S.SEESAW_STEPS] == list(range(12))
    by = {s.number: s for s in S.SEESAW_STEPS}
    assert {n for n, s in by.items() if s.warpgroup == 0 and n} == {1, 3, 4, 5, 9, 11}
    assert {n for n, s in by.items() if s.warpgroup == 1} == {2, 6, 7, 8, 10}
    assert "tensor" in by[10].unit and by[3].unit == "CUDA"


# ---- exactness -----------------------------------------------------------------------------

def tiles_of(k, vis, block):
    return [(k[i:i + block], vis[:, i:i + block]) for i in range(0, k.shape[0], block)]


@pytest.mark.parametrize("n, block", [(0, 64), (1, 64), (63, 64), (64, 64), (65, 64), (128, 64), (129, 64),
                                      (300, 64), (77, 16)])
def test_seesaw_order_equals_softmax_attention(n, block):
    rng = np.random.default_rng(n)
    M, d = 6, 576
    q = rng.standard_normal((M, d))
    k = rng.standard_normal((n, d))
    vis = rng.random((M, n)) < 0.8
    vis[0] = False  # a row that sees nothing: out 0, lse -inf
    scale = 192 ** -0.5
    out, lse = S.seesaw_attend(q, tiles_of(k, vis, block), scale)
    ref_out, ref_lse = attention(q, k, k[:, :512], scale, vis)
    assert np.all(out[0] == 0) and lse[0] == -np.inf
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(lse[1:], ref_lse[1:], rtol=1e-12)


def test_max_moving_in_either_tile_and_huge_scores():
    """Scores in the thousands: the max rises in K1 of one pair and in K0 of the next."""
    rng = np.random.default_rng(7)
    q = rng.standard_normal((4, 576))
    k = rng.standard_normal((256, 576))
    k[100] = 40 * q[0] / np.linalg.norm(q[0])  # tile 1 of pair 0 holds row 0's max
    k[150] = 80 * q[1] / np.linalg.norm(q[1])  # tile 0 of pair 1 holds row 1's max
    vis = np.ones((4, 256), bool)
    trace = []
    out, lse = S.seesaw_attend(q, tiles_of(k, vis, 64), 1.0, trace=trace)
    ref_out, ref_lse = attention(q, k, k[:, :512], 1.0)
    np.testing.assert_allclose(out, ref_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-12)
    assert trace[0]["a1"][0] < 1e-10 and trace[1]["a0"][1] < 1e-10, "the rescale factors were exercised"


def test_the_printed_sign_is_wrong():
    """The blog prints scale = exp(m_new - m); with it the result is not attention."""
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((3, 576)), rng.standard_normal((200, 576))
    vis = np.ones((3, 200), bool)
    ref, _ = attention(q, k, k[:, :512], 0.1)
    good, _ = S.seesaw_attend(q, tiles_of(k, vis, 64), 0.1)
    bad, _ = S.seesaw_attend(q, tiles_of(k, vis, 64), 0.1, printed_sign=True)
    assert np.abs(good - ref).max() < 1e-12 and np.abs(bad - ref).max() > 1e-3


def _reference_paged(q, kv, bt, sl, scale, causal):
    """Independent float64 reference: gather each sequence (mlacourse.paged), softmax attention."""
    b, s_q, h_q, _ = q.shape
    out = np.zeros((b, s_q, h_q, 512))
    lse = np.full((b, h_q, s_q), -np.inf)
    for i in range(b):
        rows = gather_paged(kv, bt, sl, i)[:, 0]  # [n, 576]
        n = len(rows)
        mask = None
        if causal:
            mask = (np.arange(n)[None, :] <= np.arange(s_q)[:, None] + n - s_q)[:, None, :]  # [s_q, 1, n]
        o, l_ = attention(q[i], rows, rows[:, :512], scale, mask)  # [s_q, h_q, 512], [s_q, h_q]
        out[i], lse[i] = o, l_.T
    return out, lse


@pytest.mark.parametrize("lens, page, s_q, h_q, causal", [
    ([0, 1, 63, 64, 65, 128, 129, 300], 64, 1, 16, False),
    ([1, 2, 70, 200], 64, 2, 8, True),
    ([5, 500, 257], 128, 1, 4, True),
    ([1] * 5 + [1000], 256, 1, 2, False),
])
def test_seesaw_decode_on_poisoned_paged_caches(lens, page, s_q, h_q, causal):
    """Exactly the seesaw's order, in FlashMLA's test conditions: on caches whose unused slots are NaN and
    whose unused block-table entries are out of range, equals the float64 reference to 1e-6."""
    rng = np.random.default_rng(len(lens) + page)
    seqs = [rng.standard_normal((n, 1, 576)) for n in lens]
    kv, bt, sl = make_paged_cache(seqs, page, rng)
    assert np.isnan(kv).any() and (bt == 2**31 - 1).any()
    q = rng.standard_normal((len(lens), s_q, h_q, 576))
    scale = 192 ** -0.5
    out, lse = S.seesaw_decode(q, kv, bt, sl, scale, causal)
    ref_out, ref_lse = _reference_paged(q, kv, bt, sl, scale, causal)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, ref_out, rtol=1e-6, atol=1e-6)
    assert np.array_equal(np.isneginf(lse), np.isneginf(ref_lse))
    fin = np.isfinite(ref_lse)
    np.testing.assert_allclose(lse[fin], ref_lse[fin], rtol=1e-6, atol=1e-6)
    torch = pytest.importorskip("torch")
    from kernels.reference import reference_decode  # the kernels' own float64 reference
    k_out, k_lse = reference_decode(torch.from_numpy(q), torch.from_numpy(kv), torch.from_numpy(bt),
                                    torch.from_numpy(sl), 512, scale, causal)
    np.testing.assert_allclose(out, k_out.numpy(), rtol=1e-6, atol=1e-6)


# ---- the schedule model --------------------------------------------------------------------

def test_unit_costs_match_the_datasheets():
    c = S.SMCosts()
    # 4096 FLOP/clock/SM x 132 SMs x 1.83 GHz = the H100/H800 dense bf16 peak
    assert c.tensor_flop_per_clock * 132 * c.clock_hz == pytest.approx(GPUS["H800"].bf16_tflops * 1e12, rel=1e-3)
    # 16 exp2/clock/SM: FlashAttention-3's 3.9 TFLOPS of special functions on an H100 SXM5
    assert c.mufu_per_clock * 132 * c.clock_hz / 1e12 == pytest.approx(3.9, rel=0.01)
    assert c.mma(64, 64, 576) == 2 * 64 * 64 * 576 / 4096 == 1152


@pytest.mark.parametrize("n_blocks", [1, 2, 5, 16])
def test_timelines_obey_the_rules(n_blocks):
    c = S.SMCosts()
    for name, tl in S.run_schedules(n_blocks, c).items():
        ends = {o.name: o.end for o in tl.ops}
        for o in tl.ops:
            assert all(o.start >= ends[d] - 1e-9 for d in o.deps), f"{name}: {o.name} starts before its inputs"
        for unit in ("tensor", "CUDA"):
            spans = sorted((o.start, o.end) for o in tl.ops if o.unit == unit)
            assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:])), f"{name}: {unit} runs two ops at once"
        for w in (0, 1):  # program order within a warpgroup
            mine = [o for o in tl.ops if o.warpgroup == w]
            order = [o.name for o in S.PROGRAMS[name](n_blocks, c)[w]]
            placed = sorted(mine, key=lambda o: order.index(o.name))
            tensor = [o for o in placed if o.unit == "tensor"]
            assert all(a.start <= b.start + 1e-9 for a, b in zip(tensor, tensor[1:])), f"{name}: WG{w} reordered"
            cuda = [o for o in placed if o.unit == "CUDA"]
            assert all(a.end <= b.start + 1e-9 for a, b in zip(cuda, cuda[1:])), f"{name}: WG{w} overlaps itself"
        # every schedule does the same tensor-core work: QK^T + PV of every block
        blocks = n_blocks if name != "seesaw" else 2 * ((n_blocks + 1) // 2)
        assert tl.tensor_busy == pytest.approx(blocks * (c.mma(64, 64, 576) + c.mma(64, 512, 64)))


def test_the_models_figures():
    r = S.run_schedules(16)
    serial, pp, ss = r["serial"], r["ping-pong (if registers allowed)"], r["seesaw"]
    c = S.SMCosts()
    # serial: per block QK, softmax, the O_L rescale, then both halves of PV (the O_R rescale overlaps PV_L)
    per_block = c.mma(64, 64, 576) + c.rowmax(4096) + c.exp(4096) + c.scale(64 * 256) + c.mma(64, 512, 64)
    assert serial.makespan == pytest.approx(16 * per_block)
    assert 0.80 < serial.tensor_utilization < 0.82
    assert pp.tensor_utilization == pytest.approx(1.0, abs=0.01)
    assert 0.98 < ss.tensor_utilization < 1.0
    gain = serial.makespan / ss.makespan
    assert 1.2 < gain < 1.25  # FlashMLA measured 660 / 580 = 1.138 on an H800


def test_deadlock_is_an_error():
    a = [S.Op("x", 0, "CUDA", 1.0, ("y",))]
    b = [S.Op("y", 1, "CUDA", 1.0, ("x",))]
    with pytest.raises(ValueError, match="deadlock"):
        S.simulate([a, b], "cycle")


def test_timeline_picture_is_drawn():
    import matplotlib
    matplotlib.use("Agg")
    fig = S.draw_timeline(S.run_schedules(4))
    assert len(fig.axes) == 3 and all("tensor cores busy" in ax.get_title() for ax in fig.axes)
    assert math.isfinite(fig.axes[0].get_xlim()[1])
