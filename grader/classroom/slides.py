"""Every chapter as a reveal.js lecture deck: ``python -m grader.classroom slides``.

The chapters carry no slide metadata (their authors write for readers), so a deck is made
at build time, on a copy, by rules (``lecture_metadata``) -- a lecture shows the headline
points, the key plots and results, not every cell:

  * a level-1 or level-2 heading starts a slide; a level-3 heading a sub-slide (below);
  * other text stays on its slide, or gets a sub-slide of its own when it is long;
  * a cell that draws a figure becomes a sub-slide showing the figure only (input hidden);
  * short code (<= SHORT_CODE lines) is shown with what it prints;
  * longer code that prints a result shows the result only; longer code that prints
    nothing, set-up cells (imports only, or the first code cell) and cells of asserts only
    are left out;
  * sections for the learner to do alone (a heading with "check yourself", "exercise",
    "practice", "your turn", "try it") are left out, heading included.

A chapter's author can override any cell with a tag: ``slide``, ``subslide``, ``fragment``,
``skip`` or ``notes`` (speaker notes: press S in the deck), plus ``hide_input`` to show a
cell's output only. A ``slideshow.slide_type`` set in the notebook's metadata (Jupyter's
"Slide type" menu) also wins over the rules. New chapters (notebooks/NN_*.ipynb) are
picked up automatically.

By default the chapters are executed first (nbclient, as the tests do) so that plots and
printed results are in the deck. reveal.js, require.js, jQuery and MathJax load from a CDN
unless ``--assets DIR`` names local copies, or ``--fetch-assets`` downloads them once from
the npm registry into slides/_assets/ (about 10 MB): then a deck needs no network to view.
"""
from __future__ import annotations

import ast
import copy
import html.parser
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
NOTEBOOKS = ROOT / "notebooks"
TEMPLATES = Path(__file__).resolve().parent / "templates"
SHORT_CODE = 8          # lines: code this short is shown
LONG_TEXT = 900         # characters: text this long gets a sub-slide of its own
EXERCISE = re.compile(r"check yourself|exercise|practice|your turn|try it", re.I)
PLOT = re.compile(r"\bplt\.|\bax\d*\.|\baxes\b|\bfig\b|savefig|imshow|\.plot\(")
TAG_TYPES = ("slide", "subslide", "fragment", "skip", "notes")
HIDE_INPUT = "hide_input"

# name -> (npm package, files kept: path prefixes inside the package, or None for all)
ASSETS = {
    "reveal.js": ("reveal.js@4.0.2", ("dist/", "plugin/notes/")),
    "requirejs": ("requirejs@2.3.7", ("require.js",)),
    "jquery": ("jquery@3.7.1", ("dist/jquery.min.js",)),
    "mathjax": ("mathjax@2.7.7", ("MathJax.js", "config/", "extensions/", "jax/input/TeX/",
                                  "jax/output/CommonHTML/", "jax/element/", "fonts/HTML-CSS/TeX/woff/",
                                  "localization/en/")),
}


def chapter_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


# --------------------------------------------------------------------------- the rules

def _heading_level(md: str) -> int:
    first = md.lstrip().splitlines()[0] if md.strip() else ""
    m = re.match(r"^(#{1,6})\s", first)
    return len(m.group(1)) if m else 0


def _code_kind(src: str, first_code: bool) -> str:
    """'setup', 'asserts', 'plot', 'short', 'result' or 'silent'."""
    try:
        body = ast.parse(src).body
    except SyntaxError:
        body = None
    if body is not None and body and all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in body):
        return "setup"
    if first_code:
        return "setup"
    if body is not None and body and all(isinstance(n, ast.Assert) for n in body):
        return "asserts"
    if re.search(r"\bcheck\(", src) and "grader" in src:
        return "asserts"
    if PLOT.search(src):
        return "plot"
    lines = [ln for ln in src.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if len(lines) <= SHORT_CODE:
        return "short"
    shows = "print(" in src or (body is not None and body and isinstance(body[-1], ast.Expr)
                                and not isinstance(body[-1].value, ast.Constant))
    return "result" if shows else "silent"


def lecture_metadata(nb) -> dict:
    """Set slideshow.slide_type (and the hide_input tag) on every cell of ``nb`` in place,
    by the rules above; returns counts by decision for the build log and the tests."""
    stats: dict = {}
    skip_below = None   # heading level of an exercise section being skipped
    first_code = True
    for cell in nb.cells:
        meta = cell.setdefault("metadata", {})
        tags = list(meta.get("tags", []))
        src = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        level = _heading_level(src) if cell.cell_type == "markdown" else 0
        if level and skip_below is not None and level <= skip_below:
            skip_below = None
        if level and EXERCISE.search(src.lstrip().splitlines()[0]):
            skip_below = level
        hide = False
        explicit = [t for t in TAG_TYPES if t in tags] or \
            ([meta["slideshow"]["slide_type"]] if meta.get("slideshow", {}).get("slide_type") else [])
        if explicit:
            kind, why = explicit[0], "tag"
        elif skip_below is not None:
            kind, why = "skip", "exercise section"
        elif cell.cell_type == "markdown":
            if level in (1, 2):
                kind, why = "slide", "heading"
            elif level >= 3:
                kind, why = "subslide", "subheading"
            elif len(src) > LONG_TEXT:
                kind, why = "subslide", "long text"
            else:
                kind, why = "-", "text"
        elif cell.cell_type == "code":
            ck = _code_kind(src, first_code)
            kind, hide = {"setup": ("skip", False), "asserts": ("skip", False), "plot": ("subslide", True),
                          "short": ("-", False), "result": ("subslide", True),
                          "silent": ("skip", False)}[ck]
            why = ck
        else:
            kind, why = "skip", "raw cell"
        if cell.cell_type == "code":
            first_code = False
        if HIDE_INPUT in tags:
            hide = True
        meta.setdefault("slideshow", {})["slide_type"] = kind
        if hide and HIDE_INPUT not in tags:
            tags.append(HIDE_INPUT)
        if tags:
            meta["tags"] = tags
        stats[why] = stats.get(why, 0) + 1
    return stats


# --------------------------------------------------------------------------- assets

def fetch_assets(dest: Path, log=print) -> Path:
    """Download reveal.js, require.js, jQuery and MathJax with ``npm pack`` into dest/."""
    if shutil.which("npm") is None:
        raise RuntimeError("--fetch-assets needs npm (https://nodejs.org); or pass --assets DIR")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (spec, keep) in ASSETS.items():
            target = dest / name
            if target.is_dir():
                continue
            log(f"slides: fetching {spec} ...")
            out = subprocess.run(["npm", "pack", spec, "--silent"], cwd=tmp, capture_output=True,
                                 text=True, timeout=600)
            if out.returncode != 0:
                raise RuntimeError(f"npm pack {spec} failed: {out.stderr.strip()[-500:]}")
            tgz = Path(tmp) / out.stdout.strip().splitlines()[-1]
            with tarfile.open(tgz) as tf:
                for m in tf.getmembers():
                    rel = m.name.split("/", 1)[1] if "/" in m.name else ""
                    if not m.isfile() or not rel or (keep and not rel.startswith(keep)):
                        continue
                    f = target / rel
                    f.parent.mkdir(parents=True, exist_ok=True)
                    f.write_bytes(tf.extractfile(m).read())
    return dest


def asset_urls(prefix: str) -> dict:
    """Exporter settings pointing at local copies under ``prefix`` (relative to the deck)."""
    return {"reveal_url_prefix": f"{prefix}/reveal.js",
            "require_js_url": f"{prefix}/requirejs/require.js",
            "jquery_url": f"{prefix}/jquery/dist/jquery.min.js",
            "mathjax_url": f"{prefix}/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"}


class _Assets(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls, self.depth, self.leaves, self._stack = [], 0, 0, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script" and a.get("src"):
            self.urls.append(a["src"])
        if tag == "link" and a.get("href") and "stylesheet" in (a.get("rel") or ""):
            self.urls.append(a["href"])
        if tag == "section":
            self._stack.append(0)

    def handle_endtag(self, tag):
        if tag == "section" and self._stack:
            inner = self._stack.pop()
            if inner == 0:
                self.leaves += 1
            if self._stack:
                self._stack[-1] += 1


def inspect_deck(html_text: str) -> dict:
    """{"slides": slides a viewer steps through, "external": asset URLs on other hosts}."""
    p = _Assets()
    p.feed(html_text)
    urls = p.urls + re.findall(r'"((?:https?:)?//[^"]+\.js)"', html_text.split("require(", 1)[-1][:2000])
    return {"slides": p.leaves, "external": sorted({u for u in urls if re.match(r"^(https?:)?//", u)})}


# --------------------------------------------------------------------------- building

def _execute(nb, path: Path):
    from nbclient import NotebookClient
    env_keys = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
    saved = {k: os.environ.get(k) for k in env_keys}
    os.environ.update({k: "1" for k in env_keys})
    try:
        NotebookClient(nb, timeout=900, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def build_deck(path: Path, out: Path, execute: bool = True, asset_prefix: str | None = None) -> tuple[Path, dict]:
    """Render one chapter into out/<stem>.slides.html; returns (path, info)."""
    import nbformat
    from nbconvert import SlidesExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    nb = nbformat.read(path, as_version=4)
    nb = copy.deepcopy(nb)
    stats = lecture_metadata(nb)
    if execute:
        _execute(nb, path)
    exporter = SlidesExporter(template_name="lecture", extra_template_basedirs=[str(TEMPLATES)])
    exporter.reveal_scroll = True
    exporter.reveal_number = "c/t"
    if asset_prefix:
        for k, v in asset_urls(asset_prefix).items():
            setattr(exporter, k, v)
    strip = TagRemovePreprocessor(remove_input_tags={HIDE_INPUT}, enabled=True)
    exporter.register_preprocessor(strip, enabled=True)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    dest = Path(out) / f"{path.stem}.slides.html"
    dest.write_text(body, encoding="utf-8")
    info = inspect_deck(body)
    info.update(rules=stats, cells=len(nb.cells), executed=execute)
    return dest, info


def build_all(out: Path, execute: bool = True, assets: str | None = None, fetch: bool = False,
              chapters: list | None = None, log=print) -> list[Path]:
    """Every chapter (or the chapter numbers given) into out/, plus out/index.html."""
    wanted = chapters
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    prefix = None
    if fetch:
        fetch_assets(out / "_assets", log)
        prefix = "_assets"
    elif assets:
        src = Path(assets).resolve()
        if src != (out / "_assets").resolve():
            if (out / "_assets").exists():
                shutil.rmtree(out / "_assets")
            shutil.copytree(src, out / "_assets")
        prefix = "_assets"
    elif (out / "_assets" / "reveal.js").is_dir():
        prefix = "_assets"   # fetched by an earlier run
    paths, rows = [], []
    for nbp in chapter_paths():
        if wanted and nbp.name[:2] not in {f"{int(c):02d}" for c in wanted}:
            continue
        dest, info = build_deck(nbp, out, execute=execute, asset_prefix=prefix)
        paths.append(dest)
        rows.append((nbp, dest, info))
        ext = (f"; {len(info['external'])} files from a CDN when viewed (--fetch-assets: none)"
               if info["external"] else "; needs no network to view")
        log(f"slides: {dest.name}: {info['slides']} slides{ext}")
    links = "\n".join(f'<li><a href="{d.name}">{_title(n)}</a> ({i["slides"]} slides)</li>' for n, d, i in rows)
    (out / "index.html").write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>MLA course: slides</title></head>"
        f"<body><h1>MLA at inference time: lecture slides</h1><ul>\n{links}\n</ul>"
        "<p>Arrow keys move; S opens the speaker notes; Esc shows the overview.</p></body></html>\n",
        encoding="utf-8")
    return paths


def _title(nb_path: Path) -> str:
    try:
        first = json.loads(nb_path.read_text())["cells"][0]["source"]
        first = "".join(first) if isinstance(first, list) else first
        return html.escape(first.strip().splitlines()[0].lstrip("# ").strip())
    except (OSError, ValueError, KeyError, IndexError):
        return nb_path.stem


__all__ = ["lecture_metadata", "build_deck", "build_all", "inspect_deck", "fetch_assets", "chapter_paths",
           "asset_urls", "SHORT_CODE"]
