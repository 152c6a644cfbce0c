"""Why split-KV makes one sequence's result depend on the rest of its batch, in numpy.

The planner (mlacourse.schedule.plan_decode) cuts a sequence where a share boundary falls,
and where that is depends on every other sequence's length. Each piece is an online softmax
over its own tiles; the combine then sums the pieces' normalized outputs weighted by their
log-sum-exps. In exact arithmetic the cut does not matter (mlacourse.attention.merge_attention);
in float32 every cut rounds differently. With batch_invariant=True nothing is cut, and a
sequence's result is the same bits in any batch. Plain numpy (it runs in the browser)."""
from __future__ import annotations

import numpy as np

from .schedule import Plan


def pieces_of(plan: Plan, seq: int, seqlen: int) -> list:
    """The (first token, end token) ranges the plan gives sequence `seq`, in order."""
    out = []
    for s, b0, b1, _ in plan.segments.tolist():
        if s == seq:
            out.append((b0 * plan.block_n, min(b1 * plan.block_n, seqlen)))
    return out


D_V = 512  # V = the first 512 of a cache row's 576 columns


def _online(q, rows, lo: int, hi: int, scale, tile: int, dtype):
    """One piece the way a kernel program computes it: tiles in order, running max / sum,
    the accumulator rescaled when the max moves; then normalized. Returns (out [M, d_v], lse [M])."""
    M = q.shape[0]
    m = np.full(M, -np.inf, dtype=dtype)
    l = np.zeros(M, dtype=dtype)
    acc = np.zeros((M, D_V), dtype=dtype)
    for t in range(lo, hi, tile):
        k = rows[t:min(t + tile, hi)]  # [n, 576]
        s = (q @ k.T) * dtype(scale)  # [M, n]
        m_new = np.maximum(m, s.max(axis=1))
        alpha = np.exp(m - m_new)  # 0 on the first tile (m = -inf)
        p = np.exp(s - m_new[:, None])
        l = l * alpha + p.sum(axis=1)
        acc = acc * alpha[:, None] + p @ k[:, :D_V]
        m = m_new
    return acc / l[:, None], m + np.log(l)


def decode_by_pieces(q, rows, pieces, scale: float, tile: int = 64, dtype=np.float32):
    """Attention of q [M, 576] over rows [n, 576] computed piece by piece and combined as the
    kernels do, every operation in `dtype`. pieces: (first, end) token ranges covering 0..n
    in order (non-empty). One piece: no combine (the kernel writes it directly)."""
    q = np.asarray(q, dtype=dtype)
    rows = np.asarray(rows, dtype=dtype)
    parts = [_online(q, rows, lo, hi, scale, tile, dtype) for lo, hi in pieces]
    if len(parts) == 1:
        return parts[0]
    lses = np.stack([lse for _, lse in parts])  # [pieces, M]
    top = lses.max(axis=0)
    w = np.exp(lses - top)  # [pieces, M]
    total = w.sum(axis=0)
    out = np.zeros_like(parts[0][0])
    for (o, _), wi in zip(parts, w):  # in piece order, as the combine kernel loops
        out = out + (wi / total)[:, None] * o
    return out, top + np.log(total)


def cancelling_rows(n: int, rng: np.random.Generator, big: float = 2.0**20, d: int = 576) -> np.ndarray:
    """Cache rows [n, d] on which the cut certainly shows: standard normal values, plus `big`
    in every value column (the first 512) of row 0 and minus `big` in those of row n-1.
    With a query of zeros every score is 0, so the exact output is the mean of the value
    columns, where the two bigs cancel. A float32 accumulator that holds +big keeps only 24
    bits (its last place is big * 2**-23 = 0.125 for 2**20), so the small values added to it
    while it holds big lose their low bits, and which ones those are -- the tiles before the
    first cut -- depends on where the sequence was cut. The result moves by about
    0.125 / n, which survives even a bf16 output's rounding: a case where the cut changes
    the result, not one where it may. (big is a power of two, exact in bf16.)"""
    if n < 2:
        raise ValueError(f"need n >= 2 rows (one +big, one -big), got {n}")
    rows = rng.standard_normal((n, d))
    rows[0, :D_V] += big
    rows[-1, :D_V] -= big
    return rows


def bits_differ(a, b) -> tuple:
    """(how many elements differ in their bits, largest |a - b|)."""
    a, b = np.asarray(a), np.asarray(b)
    return int(np.count_nonzero(a != b)), float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())


def draw_pieces(rows_of_pieces, seqlen: int, title: str = ""):
    """One bar per labelled plan: the token ranges it cuts one sequence into. rows_of_pieces:
    [(label, [(first, end), ...]), ...]. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.7 + 0.5 * len(rows_of_pieces)))
    colors = plt.get_cmap("tab10")
    for y, (label, pieces) in enumerate(rows_of_pieces):
        for i, (lo, hi) in enumerate(pieces):
            ax.broken_barh([(lo, hi - lo)], (y - 0.35, 0.7), facecolors=colors(i % 10), edgecolor="k", lw=0.5)
            ax.text((lo + hi) / 2, y, f"{lo}-{hi}", ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(rows_of_pieces)), [label for label, _ in rows_of_pieces], fontsize=8)
    ax.set_xlim(0, seqlen)
    ax.invert_yaxis()
    ax.set_xlabel("tokens of the followed sequence")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
