"""Pictures for chapter 6 (the decode kernel), drawn with matplotlib from numpy only, so
they also render in the browser. Every number in them comes from mlacourse.schedule.

  draw_kernel_map     the grid of persistent programs and their pieces of sequences (a plan),
                      one program's tiles (Q block x KV tile -> S -> P -> O), and the block
                      table that maps a sequence's tokens to cache pages
  draw_work_per_sm    busy time per SM, version 3's grid vs the plan"""
from __future__ import annotations

import numpy as np

from .schedule import plan_decode, work_per_sm


def draw_work_per_sm(cache_seqlens, h_q: int = 128, num_sms: int = 132, s_q: int = 1):
    """Two bar charts of modelled busy time per SM (KV blocks + overhead): version 3's grid
    (b, row blocks, splits), launched sequence fastest, and the plan's persistent parts.
    Returns the figure."""
    import matplotlib.pyplot as plt

    on_grid, planned = work_per_sm(cache_seqlens, h_q, s_q, num_sms)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True)
    for ax, w, title, color in ((axes[0], on_grid, "version 3: grid (b, row blocks, splits)", "tab:blue"),
                                (axes[1], planned, "version 4: mla_decode_plan, persistent parts", "tab:green")):
        ax.bar(np.arange(len(w)), w, width=1.0, color=color)
        ax.axhline(w.mean(), color="k", lw=1, ls="--", label=f"mean {w.mean():.0f}")
        ax.set_title(f"{title}\nbusiest / mean = {w.max() / w.mean():.3f}", fontsize=9)
        ax.set_xlabel("SM")
        ax.legend(fontsize=8, loc="lower right")
    axes[0].set_ylabel("work (64-key blocks + overhead)")
    fig.suptitle(f"b={len(cache_seqlens)}, h_q={h_q}, {num_sms} SMs (a model, not a measurement)", fontsize=10)
    fig.tight_layout()
    return fig


def draw_kernel_map(cache_seqlens=(300, 40, 700, 0, 180, 520), num_sms: int = 6, h_q: int = 128,
                    page: int = 64, seed: int = 0):
    """Three panels: (1) a plan for a small batch on num_sms SMs -- each persistent part's
    pieces of sequences, split ones hatched (they go through the combine step); (2) one
    program's tile products; (3) the block table of one sequence pointing into shuffled pages."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle

    lens = np.asarray(cache_seqlens)
    plan = plan_decode(lens, h_q, 1, num_sms)
    colors = plt.get_cmap("tab10")
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), gridspec_kw=dict(width_ratios=[1.3, 1.2, 1.1]))

    # (1) the grid: programs (row block, part) -> pieces of sequences
    ax = axes[0]
    split = set(plan.combine[:, 0].tolist())
    y = 0
    for p in range(plan.num_parts):
        segs = plan.segments[plan.part_start[p]:plan.part_start[p + 1]]
        for m in range(plan.row_blocks):
            x = 0
            for seq, b0, b1, slot in segs.tolist():
                w = b1 - b0 + plan.overhead
                ax.add_patch(Rectangle((x, y), plan.overhead, 0.8, color="lightgray"))
                ax.add_patch(Rectangle((x + plan.overhead, y), b1 - b0, 0.8, facecolor=colors(seq % 10),
                                       hatch="//" if seq in split else None, ec="k", lw=0.5))
                if b1 - b0 >= 3:
                    ax.text(x + plan.overhead + (b1 - b0) / 2, y + 0.4, f"seq {seq}", ha="center", va="center",
                            fontsize=7)
                x += w
            ax.text(-0.5, y + 0.4, f"part {p}, rows {m * plan.block_m}-{(m + 1) * plan.block_m - 1}",
                    ha="right", va="center", fontsize=7)
            y += 1
    ax.set_xlim(0, max(plan.part_work.max(), 1) + 1)
    ax.set_ylim(-0.2, y)
    ax.invert_yaxis()
    ax.set_yticks([])
    ax.set_xlabel("work: KV blocks of 64 keys (gray: fixed cost of a piece)")
    ax.set_title(f"the grid: {plan.num_parts} parts x {plan.row_blocks} row blocks = {plan.programs} programs\n"
                 f"lengths {list(map(int, lens))}; hatched = split, merged by the combine", fontsize=9)

    # (2) one program, one KV tile
    ax = axes[1]
    boxes = [((0.0, 2.2), (1.6, 1.0), "Q block\n[64 rows, 576]", "tab:blue"),
             ((2.2, 2.2), (1.0, 1.8), "K tile$^T$\n[576, 64]", "tab:orange"),
             ((3.8, 2.2), (1.0, 1.0), "S = QK$^T$\n[64, 64]\nonline\nsoftmax -> P", "tab:purple"),
             ((2.2, 0.0), (1.6, 1.0), "V tile = K[:, :512]\n[64, 512]", "tab:orange"),
             ((4.4, 0.0), (1.6, 1.0), "O += P V\n[64, 512] fp32\n(registers)", "tab:green")]
    for (x0, y0), (w, h), label, c in boxes:
        ax.add_patch(Rectangle((x0, y0), w, h, color=c, alpha=0.35, ec="k"))
        ax.text(x0 + w / 2, y0 + h / 2, label, ha="center", va="center", fontsize=8)
    for a, b in (((1.6, 2.7), (2.2, 2.7)), ((3.2, 2.7), (3.8, 2.7)), ((4.3, 2.2), (5.0, 1.0)),
                 ((3.8, 0.5), (4.4, 0.5))):
        ax.add_patch(FancyArrowPatch(a, b, arrowstyle="->", mutation_scale=12))
    ax.text(0.0, 4.3, "one program: 64 query rows (heads x query tokens)\nshare every KV tile: "
            "one HBM read serves all of them", fontsize=8, va="top")
    ax.set_xlim(-0.2, 6.2)
    ax.set_ylim(-0.3, 4.4)
    ax.axis("off")
    ax.set_title("the tiles: two tensor-core products per 64-key tile", fontsize=9)

    # (3) the block table of one sequence
    ax = axes[2]
    n = int(lens.max())
    n_pages = -(-n // page)
    rng = np.random.default_rng(seed)
    table = rng.permutation(n_pages + 3)[:n_pages]
    for j in range(n_pages):
        ax.add_patch(Rectangle((0, -j), 1.2, 0.8, color="tab:blue", alpha=0.3, ec="k"))
        last = min(page, n - j * page)
        ax.text(0.6, -j + 0.4, f"tokens {j * page}-{j * page + last - 1}", ha="center", va="center", fontsize=7)
        ax.text(1.45, -j + 0.4, f"bt[{j}] = {table[j]}", ha="left", va="center", fontsize=7)
        ax.add_patch(FancyArrowPatch((2.5, -j + 0.4), (3.3, -table[j] + 0.4), arrowstyle="->", mutation_scale=10))
    for k in range(n_pages + 3):
        used = k in set(table.tolist())
        ax.add_patch(Rectangle((3.3, -k), 1.3, 0.8, color="tab:orange" if used else "white", alpha=0.35, ec="k"))
        ax.text(3.95, -k + 0.4, f"page {k}" + ("" if used else " (other)"), ha="center", va="center", fontsize=7)
    ax.set_xlim(-0.1, 4.8)
    ax.set_ylim(-(n_pages + 3), 1.3)
    ax.axis("off")
    ax.set_title(f"the block table: token t -> page bt[t // {page}], slot t % {page}", fontsize=9)
    fig.tight_layout()
    return fig, plan
