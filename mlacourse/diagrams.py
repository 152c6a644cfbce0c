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


# --------------------------------------------------------------------------- alt text

ALT_LIMIT = 400  # characters: a screen reader's summary, not a data table


def _clean(text: str) -> str:
    """A label as words: mathtext's $ and backslashes dropped, whitespace squeezed."""
    return " ".join(text.replace("$", "").replace("\\", "").split())


def describe_figure(fig) -> str:
    """Alt text for a matplotlib figure, from what it shows: its title, and per panel the
    title, axis labels, legend entries and kind of marks (or, for a diagram without axes,
    its first labels). Every chapter figure gets one this way (see notebook_alt_text)."""
    parts = []
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None and suptitle.get_text().strip():
        parts.append(_clean(suptitle.get_text()))
    axes = [ax for ax in fig.axes if ax.get_visible()]
    for k, ax in enumerate(axes):
        bits = []
        title = " ".join(_clean(ax.get_title(loc)) for loc in ("left", "center", "right") if ax.get_title(loc))
        if title:
            bits.append(title)
        kinds = []
        n_lines = len(ax.lines)
        if ax.containers:
            kinds.append("bars")
        if n_lines:
            kinds.append(f"{n_lines} line{'s' * (n_lines > 1)}")
        if ax.images:
            kinds.append("a heat map")
        if ax.collections and not ax.containers:
            kinds.append("points or areas")
        axis = [f"{name} axis: {_clean(label)}" for name, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel()))
                if label.strip()]
        if kinds and (axis or title):
            bits.append(", ".join(kinds))
        bits += axis
        legend = ax.get_legend()
        if legend is not None:
            labels = [_clean(t.get_text()) for t in legend.get_texts() if t.get_text().strip()]
            if labels:
                bits.append("legend: " + ", ".join(labels))
        if not bits:  # a diagram drawn with text boxes and arrows
            texts = [_clean(t.get_text()) for t in ax.texts if t.get_text().strip()]
            if texts:
                bits.append("diagram: " + "; ".join(texts[:8]))
        if bits:
            parts.append((f"panel {k + 1}: " if len(axes) > 1 else "") + "; ".join(bits))
    text = ". ".join(parts) if parts else "A figure (no titles or labels to describe it)."
    return text if len(text) <= ALT_LIMIT else text[:ALT_LIMIT - 1].rstrip() + "…"


def notebook_alt_text(shell=None) -> bool:
    """In IPython (Jupyter, JupyterLite): every matplotlib figure shown as PNG carries its
    describe_figure text as the output's alt (metadata image/png: {alt: ...}), which HTML
    renderings turn into <img alt="..."> (the site's book does; nbconvert warns about
    images without). Wraps the PNG printer the inline backend registered, so its size and
    resolution settings stay; checked again after every cell, because the backend registers
    its printer anew when it starts (on the first pyplot import). Returns True when IPython
    runs here."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter") or not hasattr(shell, "events"):
        return False
    _wrap_inline_backend_metadata()
    if not getattr(shell, "_mlacourse_alt_text", False):
        shell._mlacourse_alt_text = True
        shell.events.register("post_execute", lambda: _wrap_png_printer(shell))
    _wrap_png_printer(shell)
    return True


def _wrap_inline_backend_metadata() -> None:
    """The inline backend shows each figure (plt.show(), the end of a cell) with the output
    metadata of its _fetch_figure_metadata, looked up when it shows: add the alt there.
    This holds even when the backend starts in the middle of a cell (a first pyplot call)."""
    try:
        from matplotlib_inline import backend_inline
    except ImportError:
        return
    fetch = getattr(backend_inline, "_fetch_figure_metadata", None)
    if fetch is None or getattr(fetch, "adds_alt_text", False):
        return

    def metadata_with_alt(fig):
        return {**(fetch(fig) or {}), "alt": describe_figure(fig)}

    metadata_with_alt.adds_alt_text = True
    backend_inline._fetch_figure_metadata = metadata_with_alt


def _wrap_png_printer(shell) -> None:
    import sys
    if "matplotlib.figure" not in sys.modules:
        return  # no figure can exist yet
    from matplotlib.figure import Figure

    png = shell.display_formatter.formatters["image/png"]
    try:
        printer = png.lookup_by_type(Figure)
    except KeyError:
        return  # no inline backend: figures are not shown as PNG outputs
    if getattr(printer, "adds_alt_text", False):
        return

    def png_with_alt(fig):
        data = printer(fig)
        meta = {}
        if isinstance(data, tuple):  # a printer that already gives metadata
            data, meta = data
        return None if data is None else (data, {**(meta or {}), "alt": describe_figure(fig)})

    png_with_alt.adds_alt_text = True
    png.for_type(Figure, png_with_alt)
