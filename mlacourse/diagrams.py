"""Pictures drawn by code (matplotlib only, so they also render in the browser).

mla_dataflow draws one MLA layer as boxes and arrows, every box labelled with the shape
it has for the given config, for either path. Import matplotlib lazily: the rest of
mlacourse does not need it."""
from __future__ import annotations

from .config import MLAConfig


def _shape(*dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def mla_dataflow_boxes(cfg: MLAConfig, path: str = "absorb", T: str = "T", S: str = "S"):
    """The boxes (name -> (x, y, label)) and arrows ((from, to, weight label)) of the
    diagram. T new tokens, S cached tokens; shapes come from cfg."""
    if path not in ("absorb", "expand"):
        raise ValueError(f"unknown path {path!r}; known: 'absorb', 'expand'")
    H, dn, dr, dv, dc = cfg.n_heads, cfg.d_nope, cfg.d_rope, cfg.d_v, cfg.d_latent
    q_rank = cfg.q_lora_rank or cfg.d_model
    b = {
        "h": (5.0, 11.0, f"h {_shape(T, cfg.d_model)}"),
        "cq": (2.2, 9.7, f"c_q {_shape(T, q_rank)}\n(q_norm)"),
        "q": (2.2, 8.4, f"q {_shape(T, H, cfg.d_qk)}"),
        "qn": (1.0, 7.1, f"q_nope {_shape(T, H, dn)}"),
        "qr": (3.4, 7.1, f"q_rope {_shape(T, H, dr)}\nRoPE(t)"),
        "kva": (7.8, 9.7, f"[c ; k_rope] {_shape(T, dc + dr)}"),
        "c": (6.6, 8.4, f"c {_shape(T, dc)}\n(kv_norm)"),
        "kr": (9.0, 8.4, f"k_rope {_shape(T, dr)}\nRoPE(s), shared"),
        "cache": (7.8, 7.1, f"CACHE rows {_shape(S, dc + dr)}\n{dc + dr} numbers per token"),
        "y": (5.0, 0.6, f"y {_shape(T, cfg.d_model)}"),
    }
    arrows = [("h", "cq", "W_DQ"), ("cq", "q", "W_UQ"), ("q", "qn", ""), ("q", "qr", ""),
              ("h", "kva", "W_DKV|W_KR"), ("kva", "c", ""), ("kva", "kr", ""), ("c", "cache", ""),
              ("kr", "cache", "")]
    if path == "absorb":
        b |= {"qlat": (1.0, 5.7, f"q_lat {_shape(T, H, dc)}"),
              "qfull": (2.2, 4.4, f"[q_lat ; q_rope] {_shape(H, T, dc + dr)}"),
              "scores": (5.0, 3.3, f"scores {_shape(H, T, S)}\nx 1/sqrt({cfg.d_qk}), softmax"),
              "olat": (7.4, 2.2, f"o_lat = P c {_shape(T, H, dc)}\n(value = c, shared)"),
              "o": (2.6, 1.7, f"o {_shape(T, H, dv)}")}
        arrows += [("qn", "qlat", "W_UK (absorbed)"), ("qlat", "qfull", ""), ("qr", "qfull", ""),
                   ("qfull", "scores", ""), ("cache", "scores", "keys: all 576"),
                   ("scores", "olat", ""), ("cache", "olat", "values: first 512"),
                   ("olat", "o", "W_UV"), ("o", "y", "W_O")]
    else:
        b |= {"knope": (6.6, 5.7, f"k_nope {_shape(H, S, dn)}"),
              "v": (9.5, 5.7, f"v {_shape(H, S, dv)}"),
              "k": (7.8, 4.4, f"k = [k_nope ; k_rope] {_shape(H, S, dn + dr)}"),
              "qfull": (2.2, 4.4, f"q = [q_nope ; q_rope] {_shape(H, T, cfg.d_qk)}"),
              "scores": (5.0, 3.3, f"scores {_shape(H, T, S)}\nx 1/sqrt({cfg.d_qk}), softmax"),
              "o": (5.0, 2.0, f"o = P v {_shape(T, H, dv)}")}
        arrows += [("cache", "knope", "W_UK"), ("cache", "v", "W_UV"), ("knope", "k", ""),
                   ("cache", "k", "+k_rope"), ("qn", "qfull", ""), ("qr", "qfull", ""),
                   ("qfull", "scores", ""), ("k", "scores", ""), ("scores", "o", ""), ("v", "o", ""),
                   ("o", "y", "W_O")]
    return b, arrows


def mla_dataflow(cfg: MLAConfig, path: str = "absorb", ax=None, T: str = "T", S: str = "S"):
    """Draw the dataflow of one MLA layer. Returns (figure, list of the box labels drawn)."""
    import matplotlib.pyplot as plt

    boxes, arrows = mla_dataflow_boxes(cfg, path, T, S)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 8.2))
    ax.set_xlim(-0.6, 10.6)
    ax.set_ylim(0, 11.8)
    ax.axis("off")
    style = {"cache": "#f7d9c4", "scores": "#e8e0f5", "h": "#dddddd", "y": "#dddddd"}
    texts = {}
    for name, (x, y, label) in boxes.items():
        texts[name] = ax.text(x, y, label, ha="center", va="center", fontsize=8.5, zorder=3,
                              bbox=dict(boxstyle="round,pad=0.35", fc=style.get(name, "#cfe3f7"), ec="#555555"))
    for a, b, label in arrows:
        (xa, ya, _), (xb, yb, _) = boxes[a], boxes[b]
        ax.annotate("", xy=(xb, yb + 0.32), xytext=(xa, ya - 0.32), zorder=2,
                    arrowprops=dict(arrowstyle="->", color="#444444", lw=1.0, shrinkA=6, shrinkB=6))
        if label:
            ax.text((xa + xb) / 2 + 0.08, (ya + yb) / 2, label, fontsize=7.5, color="#8a2b0a",
                    ha="left", va="center", zorder=4)
    title = {"absorb": "absorb: W_UK folded into the query, attention over the shared cached rows",
             "expand": "expand: every cached row up-projected into per-head K and V, then MHA"}[path]
    ax.set_title(f"{cfg.name}, {title}", fontsize=10)
    return ax.figure, [t.get_text() for t in texts.values()]
