"""The schedule and HBM-traffic model of the decode kernels, on CPU (no GPU needed).

  python -m kernels.schedule_report            the table (markdown) for BENCHMARKS.md
  python -m kernels.schedule_report --png P    and the chapter-6 plot: work per SM, grid and plan

For each length distribution (b=128): per-SM work max/mean, programs, split pieces, and
the modelled HBM bytes per cache byte (mlacourse.schedule: programs placed on 132 SMs in
launch order, KV-tile reads replayed through a 50 MB LRU L2), for three designs:

  v3 sequence fastest   version 3's grid (b, row_blocks, splits) launched with the sequence on
                 the grid's x axis, which CUDA launches fastest: a sequence's row blocks run b apart
  v3 row block fastest  the same grid with the row blocks of a sequence adjacent in launch
                 order, as kernels/mla_decode.py launches it
  v4 planned     persistent programs over mla_decode_plan (FlashMLA's get_mla_metadata)
  v4 batch-invariant   the same, no sequence cut (batch_invariant=True): the price of
                 bitwise-reproducible results, chapter 8
  v4, 2 per SM   h_q <= 16 only: the 16-row kernels fit two programs per SM
                 (mlacourse.schedule.resident_programs on the compile report's figures), so the
                 plan has 264 parts sharing 132 SMs

The goals set for version 4: imbalance <= 1.05 and HBM bytes 1.00x the cache at h_q=128.
A model, not a measurement: the real L2 is not an ideal LRU, and work time per block is
taken as constant."""
from __future__ import annotations

import sys

import numpy as np

from mlacourse.schedule import lengths_bench, lengths_flashmla, schedule_stats

NUM_SMS = 132
B = 128
DESIGNS = (("v3 sequence fastest", dict(design="splitkv", seq_fastest=True)),
           ("v3 row block fastest", dict(design="splitkv", seq_fastest=False)),
           ("v4 planned", dict(design="planned")),
           ("v4 batch-invariant", dict(design="planned", batch_invariant=True)),
           ("v4, 2 per SM", dict(design="planned", programs_per_sm=2)))
TWO_PER_SM_MAX_ROWS = 16  # query rows per program of the kernels that fit two per SM (block_m 16)
GOAL_IMBALANCE = 1.05
GOAL_HBM = 1.00


def batches(seed: int = 0):
    """(label, lengths, s_q) of the report: the bench's clipped normal and FlashMLA's unclipped
    one for each mean s_k, plus two skewed batches."""
    rng = np.random.default_rng(seed)
    out = []
    for mean in (4096, 8192, 16384, 32768):
        for name, draw in (("bench", lengths_bench), ("flashmla", lengths_flashmla)):
            lens = draw(rng, B, mean, 1)
            out.append((f"{name} mean {mean}", lens, 1))
    out.append(("one 16K among 1s", np.array([1] * (B - 1) + [16384]), 1))
    out.append(("flashmla mean 8192, s_q=2", lengths_flashmla(rng, B, 8192, 2), 2))
    return out


def rows(h_qs=(16, 128), seed: int = 0):
    """One dict per (batch, h_q, design) with the model's numbers."""
    table = []
    for label, lens, s_q in batches(seed):
        for h_q in h_qs:
            for design, kw in DESIGNS:
                if kw.get("programs_per_sm", 1) > 1 and s_q * h_q > TWO_PER_SM_MAX_ROWS:
                    continue
                st = schedule_stats(cache_seqlens=lens, h_q=h_q, s_q=s_q, num_sms=NUM_SMS, **kw)
                table.append(dict(batch=label, s_q=s_q, h_q=h_q, design=design, max_sk=int(lens.max()),
                                  mean_sk=float(lens.mean()), programs=st.programs, splits=st.splits,
                                  split_seqs=st.split_seqs, work_max=st.work_max, work_mean=st.work_mean,
                                  imbalance=st.imbalance, hbm=st.hbm_per_kv, partial_mb=st.partial_bytes / 1e6))
    return table


def format_table(table) -> str:
    lines = ["| batch (b=128) | max s_k | s_q | h_q | design | programs | split pieces | per-SM work max/mean "
             "| HBM bytes / cache bytes | partials written+read (MB) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        lines.append(f"| {r['batch']} | {r['max_sk']} | {r['s_q']} | {r['h_q']} | {r['design']} | {r['programs']} "
                     f"| {r['splits']} | {r['work_max']:.0f}/{r['work_mean']:.1f} = {r['imbalance']:.3f} "
                     f"| {r['hbm']:.2f} | {r['partial_mb']:.1f} |")
    return "\n".join(lines)


def goals_met(table):
    """(ok, failures): on the bench's and FlashMLA's distributions, every v4 row within the
    imbalance goal and HBM 1.00x at h_q=128. The skewed batch is reported, not held to the
    goal: its whole work is ~7 blocks per SM, and one piece costs at least overhead + 1 = 6."""
    bad = []
    for r in table:
        if r["design"] != "v4 planned" or not r["batch"].startswith(("bench", "flashmla")):
            continue
        if r["imbalance"] > GOAL_IMBALANCE:
            bad.append(f"{r['batch']} h_q={r['h_q']}: imbalance {r['imbalance']:.3f} > {GOAL_IMBALANCE}")
        if r["h_q"] == 128 and round(r["hbm"], 2) > GOAL_HBM:
            bad.append(f"{r['batch']} h_q=128: HBM {r['hbm']:.3f}x > {GOAL_HBM}")
    return not bad, bad


def plot_work_per_sm(path=None, seed: int = 0, h_q: int = 128):
    """Bar chart: work per SM of version 3's grid (sequence fastest) and of the plan, on FlashMLA's 8K batch
    (mlacourse.kernel_diagrams draws it; chapter 6 shows the same picture)."""
    import matplotlib
    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlacourse.kernel_diagrams import draw_work_per_sm
    fig = draw_work_per_sm(lengths_flashmla(np.random.default_rng(seed), B, 8192, 1), h_q, NUM_SMS)
    if path is not None:
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return fig


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    table = rows()
    print(format_table(table))
    ok, bad = goals_met(table)
    print("\ngoals for version 4 (on the bench's and FlashMLA's batches: imbalance <= 1.05, HBM 1.00x at h_q=128):",
          "met" if ok else "NOT met")
    for b in bad:
        print("  " + b)
    if "--png" in argv:
        path = argv[argv.index("--png") + 1]
        plot_work_per_sm(path)
        print(f"wrote {path}")
    return table


if __name__ == "__main__":
    main()
