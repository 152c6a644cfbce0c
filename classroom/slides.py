"""Every chapter as a reveal.js lecture deck: ``python -m classroom slides``.

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
  * an exercise's solution cell (tagged ``solution``: execute.SOLUTION_TAG) is left out,
    with its outputs, whatever its tags or slide type say;
  * sections for the learner to do alone (a heading with "check yourself", "exercise",
    "practice", "your turn", "try it") are left out, heading included.

A chapter's author can override any cell with a tag: ``slide``, ``subslide``, ``fragment``,
``skip`` or ``notes`` (speaker notes: press S in the deck), plus ``hide_input`` to show a
cell's output only. A ``slideshow.slide_type`` set in the notebook's metadata (Jupyter's
"Slide type" menu) also wins over the rules. New chapters (notebooks/NN_*.ipynb) are
picked up automatically.

By default the chapters are executed first (execute.py, as the tests and the site do) so that plots and
printed results are in the deck.

The decks are self-contained: they load reveal.js, require.js, jQuery and MathJax from
slides/_assets/ (about 2.5 MB, shared by all decks), never from another host, so
``slides/`` can be copied to a lab machine or a USB stick and opened offline. Those files
come from the npm packages pinned in ``ASSETS`` (version and the registry's sha512 of the
tarball), downloaded once with ``npm pack`` (or over HTTPS from registry.npmjs.org when
npm is missing) into ~/.cache/mla-course/npm/ and unpacked from there on every build: after
the first build, building needs no network. ``--assets DIR`` takes the tarballs from a
folder instead (a copy of that cache, for a machine that never had the network);
``--cdn`` renders decks that load the same libraries from CDNs when viewed (smaller, but they
need the network to show).
Links between chapters point at the other decks (``link_decks``).

``--lang zh`` (``build_all(lang="zh")``) builds the decks from the Chinese chapters
(notebooks/zh/NN_slug.ipynb, built by ``python -m i18n build``) into slides/zh/: the slide
rules are applied to the English chapter and its decisions carried to the Chinese one by
cell id (the translation has the same cells), so both decks have the same slides; the
page says ``lang="zh-CN"`` and sets the Chinese font stack the site uses (system fonts,
none downloaded: i18n/fonts.py).
"""
from __future__ import annotations

import ast
import base64
import copy
import fnmatch
import hashlib
import html.parser
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .execute import SOLUTION_TAG

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
TEMPLATES = Path(__file__).resolve().parent / "templates"
SHORT_CODE = 8          # lines: code this short is shown
LONG_TEXT = 900         # characters: text this long gets a sub-slide of its own
EXERCISE = re.compile(r"check yourself|exercise|practice|your turn|try it", re.I)
PLOT = re.compile(r"\bplt\.|\bax\d*\.|\baxes\b|\bfig\b|savefig|imshow|\.plot\(")
TAG_TYPES = ("slide", "subslide", "fragment", "skip", "notes")
HIDE_INPUT = "hide_input"

THEME = "white"          # reveal.js's white theme uses its own fonts (simple.css imports Google Fonts)
REGISTRY = "https://registry.npmjs.org"   # used only when npm is not installed (npm uses its own settings)
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mla-course" / "npm"


@dataclass(frozen=True)
class Asset:
    """One npm package the decks load, pinned: the tarball must have the registry's sha512
    (``npm view NAME@VERSION dist.integrity``), and only the files the decks use are kept."""
    package: str
    version: str
    integrity: str
    keep: tuple          # paths inside the package: a folder ("x/"), a file, or a glob ("x/*.woff")

    @property
    def tarball(self) -> str:
        return f"{self.package}-{self.version}.tgz"

    def kept(self, rel: str) -> bool:
        """A glob's * stays inside one folder ("extensions/*.js" is not "extensions/a11y/x.js")."""
        return any(rel.startswith(k) if k.endswith("/") else
                   rel.count("/") == k.count("/") and fnmatch.fnmatch(rel, k) for k in self.keep)


# The versions nbconvert's reveal template is written for (its own CDN defaults), trimmed to
# what a deck loads: MathJax's TeX input, CommonHTML output and fonts (not its a11y explorer,
# 2.6 MB, which loads only from the right-click menu), reveal.js's white theme with the woff
# fonts (browsers of the last decade take woff first) and the speaker-notes plugin.
ASSETS = {
    "reveal.js": Asset("reveal.js", "4.0.2",
                       "sha512-LWZSUenufF1gpD7npxJ7KfoQQFKgc1D6XrLTFgKlwWNP1BQ74hT48KONFWMAw+8R/QUeaScCLCLrBVHDfFIEiw==",
                       ("LICENSE", "dist/reveal.js", "dist/reveal.css", f"dist/theme/{THEME}.css",
                        "dist/theme/fonts/source-sans-pro/*.woff", "dist/theme/fonts/source-sans-pro/*.css",
                        "dist/theme/fonts/source-sans-pro/LICENSE", "plugin/notes/")),
    "requirejs": Asset("requirejs", "2.3.7",
                       "sha512-DouTG8T1WanGok6Qjg2SXuCMzszOo0eHeH9hDZ5Y4x8Je+9JB38HdTLT4/VA8OaUhBa0JPVHJ0pyBkM1z+pDsw==",
                       ("require.js",)),
    "jquery": Asset("jquery", "3.7.1",
                    "sha512-m4avr8yL8kmFN8psrbFFFmB/If14iN5o9nw/NgnnM+kybDJpRsAynV2BsfpTYrTRysYUdADVD7CkUUizgkpLfg==",
                    ("LICENSE.txt", "dist/jquery.min.js")),
    "mathjax": Asset("mathjax", "2.7.7",
                     "sha512-OOl0B2/0tSJAtAZarXnQuLDBLgTNRqiI9VqHTQzPsxf4okT2iIpDrvaklK9x2QEMD1sDj4yRn11Ygci41DxMAQ==",
                     ("LICENSE", "MathJax.js", "config/TeX-AMS_CHTML-full.js", "config/Safe.js",
                      "extensions/*.js", "extensions/TeX/", "extensions/HTML-CSS/", "extensions/MathML/",
                      "jax/input/TeX/", "jax/output/CommonHTML/", "jax/element/", "fonts/HTML-CSS/TeX/woff/")),
}


class AssetError(RuntimeError):
    """The decks' assets could not be had (not cached, no network) or are not the pinned ones."""


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

def integrity(data: bytes) -> str:
    """npm's integrity string: sha512 of the tarball, base64."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _download(asset: Asset) -> tuple[bytes, str]:
    """The tarball from the npm registry: with npm (its registry and proxy settings) when it
    is installed, else over HTTPS from registry.npmjs.org."""
    spec = f"{asset.package}@{asset.version}"
    if shutil.which("npm"):
        with tempfile.TemporaryDirectory() as tmp:
            try:
                done = subprocess.run(["npm", "pack", spec, "--silent"], cwd=tmp, capture_output=True,
                                      text=True, timeout=600)
            except (OSError, subprocess.SubprocessError) as e:
                raise AssetError(f"npm pack {spec} failed: {e}") from None
            if done.returncode != 0:
                raise AssetError(f"npm pack {spec} failed: {done.stderr.strip()[-400:]}")
            return (Path(tmp) / asset.tarball).read_bytes(), "the npm registry (npm pack)"
    url = f"{REGISTRY}/{asset.package}/-/{asset.tarball}"
    try:
        with urllib.request.urlopen(url, timeout=120) as r:
            return r.read(), url
    except (OSError, ValueError) as e:
        raise AssetError(f"could not download {url}: {e}") from None


def tarball(asset: Asset, sources=(), cache: Path | None = None, log=print) -> tuple[bytes, str]:
    """(the pinned tarball, where it came from): a folder of ``sources`` (tarballs copied from
    another machine's cache: --assets), the cache, or the npm registry (then cached)."""
    cache = Path(cache or CACHE)
    for folder in [*map(Path, sources), cache]:
        f = folder / asset.tarball
        if f.is_file():
            data = f.read_bytes()
            if integrity(data) != asset.integrity:
                raise AssetError(f"{f} is not {asset.package} {asset.version} as published "
                                 "(its sha512 differs): delete it")
            return data, str(f)
    log(f"slides: downloading {asset.package} {asset.version} ...")
    data, origin = _download(asset)
    if integrity(data) != asset.integrity:
        raise AssetError(f"{asset.package} {asset.version} from {origin} is not the published tarball "
                         "(its sha512 differs from the one pinned in classroom/slides.py)")
    cache.mkdir(parents=True, exist_ok=True)
    part = cache / f".{asset.tarball}.part"
    part.write_bytes(data)
    part.replace(cache / asset.tarball)
    return data, f"{origin}, now cached in {cache}"


def install_assets(dest: Path, sources=(), cache: Path | None = None, log=print) -> dict:
    """Unpack the files the decks load into dest/<name>/ from the pinned tarballs; returns
    {name: (files, bytes)}. Needs the network once (then the cache), or ``sources``."""
    dest = Path(dest)
    got = {}
    for name, asset in ASSETS.items():
        data, origin = tarball(asset, sources, cache, log)
        target = dest / name
        if target.exists():
            shutil.rmtree(target)
        files = size = 0
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            for m in tf.getmembers():
                rel = m.name.split("/", 1)[1] if "/" in m.name else ""
                if not m.isfile() or not rel or ".." in rel.split("/") or not asset.kept(rel):
                    continue
                f = target / rel
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_bytes(tf.extractfile(m).read())
                files, size = files + 1, size + m.size
        got[name] = (files, size)
        log(f"slides: {asset.package} {asset.version} from {origin}: {files} files, {size / 1e6:.2f} MB")
    return got


def asset_urls(prefix: str) -> dict:
    """Exporter settings pointing at local copies under ``prefix`` (relative to the deck)."""
    return {"reveal_url_prefix": f"{prefix}/reveal.js",
            "require_js_url": f"{prefix}/requirejs/require.js",
            "jquery_url": f"{prefix}/jquery/dist/jquery.min.js",
            "mathjax_url": f"{prefix}/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"}


def _remote(url: str) -> bool:
    return bool(re.match(r"^\s*(https?:)?//", url, re.I))


class _Deck(html.parser.HTMLParser):
    """What a deck loads (src of any element, href of <link>, data of <object>, the text of
    its scripts and styles), where its links go, and how many slides a viewer steps through."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.loads, self.links, self.code, self.leaves, self._stack, self._in = [], [], [], 0, [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "poster", "data") if tag != "a" else ():
            if a.get(key):
                self.loads.append(a[key])
        if tag == "link" and a.get("href"):
            self.loads.append(a["href"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag in ("script", "style"):
            self._in = tag
        if tag == "section":
            self._stack.append(0)

    def handle_data(self, data):
        if self._in:
            self.code.append((self._in, data))

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._in = None
        if tag == "section" and self._stack:
            inner = self._stack.pop()
            if inner == 0:
                self.leaves += 1
            if self._stack:
                self._stack[-1] += 1


def remote_in_code(kind: str, text: str) -> list[str]:
    """URLs on other hosts a script or a stylesheet would load: quoted absolute URLs in a
    script (require([...]), import ... from '...', a src set from code), url(...) and
    @import in CSS."""
    if kind == "style":
        found = re.findall(r"url\(\s*['\"]?([^'\")\s]+)", text) + re.findall(r"@import\s+['\"]([^'\"]+)", text)
    else:
        found = re.findall(r"['\"`]((?:https?:)?//[^'\"`\s]+)['\"`]", text)
    return [u for u in found if _remote(u)]


def inspect_deck(html_text: str) -> dict:
    """{"slides": slides a viewer steps through, "external": what the deck would load from
    other hosts (empty for a self-contained deck), "local": what it loads from its folder,
    "links": where its <a> links go}."""
    p = _Deck()
    p.feed(html_text)
    external = {u for u in p.loads if _remote(u)}
    for kind, text in p.code:
        external.update(remote_in_code(kind, text))
    local = sorted({u.split("?", 1)[0] for u in p.loads if not _remote(u) and not u.startswith(("data:", "#"))})
    return {"slides": p.leaves, "external": sorted(external), "local": local, "links": p.links}


def link_decks(nb, decks: set) -> int:
    """Point links to other chapters (`NN_name.ipynb`, any folder, any #anchor) at their decks
    (`NN_name.slides.html`, beside this one); other links to the repository's files (the
    practice stubs) become their text, since a deck travels without them. Returns the
    number of links changed."""
    changed = 0

    def sub(m):
        nonlocal changed
        text, target = m.group(1), m.group(2)
        if re.match(r"^(https?:|mailto:|#)", target):
            return m.group(0)
        changed += 1
        stem = target.split("#", 1)[0].rsplit("/", 1)[-1]
        if stem.endswith(".ipynb") and stem[:-len(".ipynb")] in decks:
            return f"[{text}]({stem[:-len('.ipynb')]}.slides.html)"
        return text

    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = re.sub(r"(?<!!)\[([^\]\n]*)\]\(\s*([^)\s]+)\s*\)", sub, cell.source)
    return changed


# --------------------------------------------------------------------------- building

LANGS = {"en": "en", "zh": "zh-CN"}   # --lang -> the deck's html lang attribute


def chapter_in(lang: str, english: Path) -> Path:
    """The chapter a deck of language ``lang`` is built from."""
    if lang == "en":
        return english
    from i18n import notebooks as zh
    path = zh.built_path(english)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `python -m i18n build` first")
    return path


def _same_slides_as(nb, english) -> dict:
    """The slide rules decided on the English chapter, carried to its translation by cell id."""
    stats = lecture_metadata(english)
    decided = {c.get("id"): c.get("metadata", {}) for c in english.cells}
    for cell in nb.cells:
        meta = decided.get(cell.get("id"))
        if meta is None:
            raise ValueError(f"cell {cell.get('id')!r} of the translation is not in the English chapter")
        cell.metadata = copy.deepcopy(meta)
    return stats


def _set_language(body: str, lang: str) -> str:
    """The page's lang attribute, and for Chinese the site's font stack on the slides."""
    def tag(m):   # nbconvert writes <html lang="en">: replace the attribute, keep the others
        rest = re.sub(r"\s+lang=(\"[^\"]*\"|'[^']*'|\S+)", "", m.group(1))
        return f'<html lang="{LANGS[lang]}"{rest}>'
    body, n = re.subn(r"<html((?:\s[^>]*)?)>", tag, body, count=1)
    if n != 1:
        raise ValueError("the deck has no <html> tag to set its language on")
    if lang == "zh":
        from i18n.fonts import ZH_FONTS
        style = (f"<style>/* Chinese: system fonts only (i18n/fonts.py) */\n"
                 f".reveal, .reveal h1, .reveal h2, .reveal h3, .reveal h4, .reveal h5, .reveal h6 "
                 f"{{ font-family: {ZH_FONTS}; }}</style>\n")
        body = body.replace("</head>", style + "</head>", 1)
    return body


def build_deck(path: Path, out: Path, execute: bool = True,
               asset_prefix: str | None = "_assets", lang: str = "en") -> tuple[Path, dict]:
    """Render one chapter into out/<stem>.slides.html; returns (path, info). The deck loads
    reveal.js, require.js, jQuery and MathJax from ``asset_prefix`` (a folder beside it,
    filled by ``install_assets``), or from nbconvert's CDN defaults when it is None.
    ``lang`` "zh": ``path`` is the English chapter; the deck is its Chinese edition's."""
    import nbformat
    from nbconvert import SlidesExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    english = nbformat.read(path, as_version=4)
    if lang == "en":
        nb = copy.deepcopy(english)
        stats = lecture_metadata(nb)
    else:
        source = chapter_in(lang, path)
        nb = nbformat.read(source, as_version=4)
        stats = _same_slides_as(nb, copy.deepcopy(english))
        path = source
    relinked = link_decks(nb, {p.stem for p in chapter_paths()})
    if execute:
        from . import execute as run_chapter
        run_chapter.run(nb, path.parent, timeout=900)
    exporter = SlidesExporter(template_name="lecture", extra_template_basedirs=[str(TEMPLATES)])
    exporter.reveal_scroll = True
    exporter.reveal_number = "c/t"
    exporter.reveal_theme = THEME
    if asset_prefix:
        for k, v in asset_urls(asset_prefix).items():
            setattr(exporter, k, v)
    # an exercise's solution (code and outputs) is not for the lecture: it leaves the deck
    # (removed after the run, so the cells after it still see what it defined)
    strip = TagRemovePreprocessor(remove_input_tags={HIDE_INPUT}, remove_cell_tags={SOLUTION_TAG}, enabled=True)
    exporter.register_preprocessor(strip, enabled=True)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    body = _set_language(body, lang)
    dest = Path(out) / f"{path.stem}.slides.html"
    dest.write_text(body, encoding="utf-8")
    info = inspect_deck(body)
    info.update(rules=stats, cells=len(nb.cells), executed=execute, relinked=relinked)
    return dest, info


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())


def build_all(out: Path, execute: bool = True, cdn: bool = False, assets: str | None = None,
              chapters: list | None = None, cache: Path | None = None, log=print,
              lang: str = "en") -> list[Path]:
    """Every chapter (or the chapter numbers given) into out/, plus out/index.html and, unless
    ``cdn``, out/_assets/ with everything the decks load (see ``install_assets``: from
    ``assets``, a folder of the pinned npm tarballs, else the cache, else the registry)."""
    wanted = chapters
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    prefix = None
    if not cdn:
        install_assets(out / "_assets", [assets] if assets else [], cache, log)
        prefix = "_assets"
        log(f"slides: {out / '_assets'}: {_size(out / '_assets') / 1e6:.1f} MB, shared by every deck")
    elif (out / "_assets").exists():
        shutil.rmtree(out / "_assets")
    paths, rows = [], []
    for nbp in chapter_paths():
        if wanted and nbp.name[:2] not in {f"{int(c):02d}" for c in wanted}:
            continue
        dest, info = build_deck(nbp, out, execute=execute, asset_prefix=prefix, lang=lang)
        paths.append(dest)
        rows.append((nbp, dest, info))
        ext = (f"; loads {len(info['external'])} files from CDNs when viewed (--cdn)"
               if info["external"] else "; needs no network to view")
        log(f"slides: {dest.name}: {info['slides']} slides{ext}")
    words = INDEX_WORDS[lang]
    links = "\n".join(f'<li><a href="{d.name}">{_title(chapter_in(lang, n))}</a> '
                      f'({words["count"].format(n=i["slides"])})</li>' for n, d, i in rows)
    font = ""
    if lang == "zh":
        from i18n.fonts import ZH_FONTS
        font = f"<style>body {{ font-family: {ZH_FONTS}; }}</style>"
    (out / "index.html").write_text(
        f"<!DOCTYPE html><html lang=\"{LANGS[lang]}\"><head><meta charset='utf-8'>"
        f"<title>{words['title']}</title>{font}</head>"
        f"<body><h1>{words['heading']}</h1><ul>\n{links}\n</ul>"
        f"<p>{words['keys']}</p></body></html>\n",
        encoding="utf-8")
    return paths


INDEX_WORDS = {
    "en": {"title": "MLA course: slides", "heading": "MLA at inference time: lecture slides",
           "count": "{n} slides", "keys": "Arrow keys move; S opens the speaker notes; Esc shows the overview."},
    "zh": {"title": "MLA 课程：幻灯片", "heading": "推理时的 MLA：课堂幻灯片",
           "count": "{n} 张幻灯片", "keys": "方向键翻页；S 打开演讲者备注；Esc 显示全部幻灯片的概览。"},
}


def _title(nb_path: Path) -> str:
    try:
        first = json.loads(nb_path.read_text())["cells"][0]["source"]
        first = "".join(first) if isinstance(first, list) else first
        return html.escape(first.strip().splitlines()[0].lstrip("# ").strip())
    except (OSError, ValueError, KeyError, IndexError):
        return nb_path.stem


__all__ = ["lecture_metadata", "build_deck", "build_all", "inspect_deck", "install_assets", "tarball",
           "link_decks", "chapter_paths", "asset_urls", "integrity", "remote_in_code", "Asset", "AssetError",
           "ASSETS", "CACHE", "SHORT_CODE", "chapter_in", "LANGS"]
