"""Lecture decks: every chapter renders as a reveal.js deck with a sensible number of
slides, long code stays off the slides, authors' tags win over the rules, and with local
assets a deck loads nothing from another host. The decks are rendered without executing
the chapters (the rules read the cells' source, so the slides are the same); one slow
test executes chapter 1 and checks its figure is in the deck."""
import html.parser
import re
from pathlib import Path

import nbformat
import pytest

from classroom import guide, slides

CHAPTERS = slides.chapter_paths()


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    built = {}
    for nb in CHAPTERS:
        path, info = slides.build_deck(nb, out, execute=False)
        built[nb.name] = (path, info)
    return built


@pytest.fixture(scope="module")
def zh_decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides_zh")
    return {nb.name: slides.build_deck(nb, out, execute=False, lang="zh") for nb in CHAPTERS}


CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("nb", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_chapter_builds_a_chinese_deck_with_the_same_slides(decks, zh_decks, nb):
    """`slides --lang zh`: the deck of notebooks/zh/<chapter>, in Chinese (its lang and the
    site's font stack), with as many slides as the English deck and the same links between
    decks."""
    from i18n.fonts import ZH_FONTS
    en_path, en = decks[nb.name]
    zh_path, zh = zh_decks[nb.name]
    text = zh_path.read_text(encoding="utf-8")
    assert zh_path.name == en_path.name and zh["slides"] == en["slides"], (zh["slides"], en["slides"])
    assert re.search(r'<html lang="zh-CN"[ >]', text) and ZH_FONTS in text
    assert '<html lang="en"' in en_path.read_text(encoding="utf-8") and ZH_FONTS not in en_path.read_text()
    title = nbformat.read(slides.chapter_in("zh", nb), as_version=4).cells[0].source.splitlines()[0]
    assert CJK.search(title) and title.lstrip("# ").split("—")[-1].strip().split("：")[0] in text
    assert len(CJK.findall(text)) > 200 and zh["external"] == []
    between = [link for link in en["links"] if not link.startswith("#")]   # anchors are the headings' words
    assert [link for link in zh["links"] if not link.startswith("#")] == between


def test_there_are_chapters():
    assert len(CHAPTERS) >= 6


@pytest.mark.parametrize("nb", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_chapter_builds_a_deck_of_sensible_length(decks, nb):
    path, info = decks[nb.name]
    text = path.read_text()
    assert "reveal" in text and "<section" in text
    assert 8 <= info["slides"] <= 60, info
    title = nbformat.read(nb, as_version=4).cells[0].source.splitlines()[0].lstrip("# ").strip()
    assert title.split("—")[0].strip() in text


@pytest.mark.parametrize("nb", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_long_code_is_not_on_the_slides(decks, nb):
    path, _ = decks[nb.name]
    html_text = path.read_text()
    cells = nbformat.read(nb, as_version=4).cells
    code = [c for c in cells if c.cell_type == "code"]
    long_cells = [c for c in code if len([ln for ln in c.source.splitlines()
                                          if ln.strip() and not ln.strip().startswith("#")]) > slides.SHORT_CODE]
    if not long_cells:
        pytest.skip(f"{nb.name} has no code cell longer than {slides.SHORT_CODE} lines")
    shown = 0
    for c in long_cells:
        # the longest line of the cell, as nbconvert's highlighter would split it: its identifiers
        line = max(c.source.splitlines(), key=len)
        words = re.findall(r"[A-Za-z_]\w{5,}", line)
        if words and all(w in html_text for w in words) and line.strip()[:12] in html_text:
            shown += 1
    assert shown < len(long_cells) / 2, f"{shown} of {len(long_cells)} long code cells appear on the slides"
    nb2 = nbformat.read(nb, as_version=4)
    slides.lecture_metadata(nb2)
    for c in nb2.cells:
        n = len([ln for ln in c.source.splitlines() if ln.strip() and not ln.strip().startswith("#")])
        if c.cell_type == "code" and n > slides.SHORT_CODE:
            st = c.metadata["slideshow"]["slide_type"]
            assert st == "skip" or slides.HIDE_INPUT in c.metadata.get("tags", []), c.source[:80]


def test_exercise_sections_are_left_out():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"),
                nbformat.v4.new_code_cell("import numpy as np"),
                nbformat.v4.new_markdown_cell("## 1.1 Theory\nwords"),
                nbformat.v4.new_code_cell("x = 1\nprint(x)"),
                nbformat.v4.new_markdown_cell("## 1.2 Check yourself\ndo it"),
                nbformat.v4.new_code_cell("from grader import check\ncheck(1, f=f)"),
                nbformat.v4.new_markdown_cell("### a sub-part of the exercise"),
                nbformat.v4.new_markdown_cell("## Summary\n- one"),
                nbformat.v4.new_code_cell("fig, ax = plt.subplots()\n" + "y = 2\n" * 20)]
    slides.lecture_metadata(nb)
    types = [c.metadata["slideshow"]["slide_type"] for c in nb.cells]
    assert types == ["slide", "skip", "slide", "-", "skip", "skip", "skip", "slide", "subslide"]
    assert slides.HIDE_INPUT in nb.cells[-1].metadata["tags"]


def test_author_tags_win_over_the_rules():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"),
                nbformat.v4.new_code_cell("import os", metadata={"tags": ["slide"]}),
                nbformat.v4.new_markdown_cell("## Heading", metadata={"tags": ["notes"]}),
                nbformat.v4.new_code_cell("\n".join(f"a{i} = {i}" for i in range(30)), metadata={"tags": ["fragment"]}),
                nbformat.v4.new_code_cell("z = 3", metadata={"slideshow": {"slide_type": "skip"}}),
                nbformat.v4.new_code_cell("w = 4\nprint(w)", metadata={"tags": ["hide_input"]})]
    slides.lecture_metadata(nb)
    types = [c.metadata["slideshow"]["slide_type"] for c in nb.cells]
    assert types == ["slide", "slide", "notes", "fragment", "skip", "-"]
    assert slides.HIDE_INPUT in nb.cells[-1].metadata["tags"]


REMOTE = re.compile(r"^\s*(https?:)?//", re.I)


class _Loads(html.parser.HTMLParser):
    """Independent of slides.inspect_deck: every src/href/data attribute a deck has."""

    def __init__(self):
        super().__init__()
        self.loads, self.links = [], []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if v and k in ("src", "data", "poster"):
                self.loads.append(v)
            if v and k == "href":
                (self.links if tag == "a" else self.loads).append(v)


def _parsed(path):
    p = _Loads()
    p.feed(path.read_text())
    return p


@pytest.mark.parametrize("nb", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_a_deck_loads_nothing_from_another_host(decks, nb):
    path, info = decks[nb.name]
    assert info["external"] == [], info["external"]
    p = _parsed(path)
    remote = [u for u in p.loads if REMOTE.match(u)]
    assert not remote, remote
    text = path.read_text()
    assert not re.search(r"""["'`](?:https?:)?//[^"'`\s]+\.(?:js|css|mjs)\b""", text), "a script names a remote file"
    assert not re.search(r"""@import\s+url\(\s*['"]?(?:https?:)?//""", text) and "fonts.googleapis" not in text
    local = [u.split("?")[0] for u in p.loads if not u.startswith(("data:", "#"))]
    assert local and all(u.startswith("_assets/") for u in local), local
    for need in slides.asset_urls("_assets").values():
        assert need in text, need


def test_the_cdn_variant_is_what_the_check_catches(tmp_path):
    path, info = slides.build_deck(CHAPTERS[0], tmp_path, execute=False, asset_prefix=None)
    remote = [u for u in _parsed(path).loads if REMOTE.match(u)]
    assert remote and set(remote) <= set(info["external"]), (remote, info["external"])
    assert any("reveal.js" in u for u in info["external"]), "require()'d scripts are seen too"


@pytest.mark.parametrize("nb", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_links_between_chapters_go_to_their_decks(decks, nb):
    path, _ = decks[nb.name]
    names = {f"{p.stem}.slides.html" for p in CHAPTERS}
    for href in _parsed(path).links:
        if REMOTE.match(href) or href.startswith(("#", "mailto:")):
            continue
        assert ".ipynb" not in href, f"{href}: a link to a notebook, not to its deck"
        assert href in names, f"{href}: not a deck beside this one"


def test_decks_link_to_each_other_and_practice_links_become_text(decks):
    deck_links = [h for nb in CHAPTERS for h in _parsed(decks[nb.name][0]).links if h.endswith(".slides.html")]
    assert len(deck_links) >= 5, deck_links
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "See [chapter 3](03_two_paths.ipynb#3.2-x), [this one](../notebooks/05_roofline.ipynb), "
        "[the stub](../practice/p04_choose_path.py), [a site](https://example.org) and ![a plot](fig.png).")])
    assert slides.link_decks(nb, {"03_two_paths", "05_roofline"}) == 3
    assert nb.cells[0].source == (
        "See [chapter 3](03_two_paths.slides.html), [this one](05_roofline.slides.html), "
        "the stub, [a site](https://example.org) and ![a plot](fig.png).")


# --------------------------------------------------------------------------- the assets

def _fake_assets(folder: Path) -> dict:
    """Tarballs shaped like the pinned packages (a file for every kept path, plus one that
    must not be kept), and the ASSETS table that pins them by their sha512."""
    import io
    import tarfile
    folder.mkdir(parents=True, exist_ok=True)
    table = {}
    for name, a in slides.ASSETS.items():
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tf:
            for k in [*a.keep, "not/kept.txt", "extensions/a11y/deep.js"]:
                rel = k + "x.js" if k.endswith("/") else k.replace("*", "font")
                data = f"/* {name} {rel} */".encode()
                info = tarfile.TarInfo("package/" + rel)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
        data = buf.getvalue()
        (folder / a.tarball).write_bytes(data)
        table[name] = slides.Asset(a.package, a.version, slides.integrity(data), a.keep)
    return table


def test_assets_come_from_pinned_tarballs_and_are_trimmed(tmp_path, monkeypatch):
    table = _fake_assets(tmp_path / "tarballs")
    monkeypatch.setattr(slides, "ASSETS", table)
    monkeypatch.setattr(slides, "_download", lambda a: pytest.fail("no download when a source has it"))
    got = slides.install_assets(tmp_path / "out", [tmp_path / "tarballs"], cache=tmp_path / "cache", log=lambda m: None)
    assert set(got) == set(table)
    kept = {p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert "mathjax/extensions/font.js" in kept and not any("not/kept" in k or "a11y" in k for k in kept)
    assert "reveal.js/dist/reveal.js" in kept and "mathjax/jax/output/CommonHTML/x.js" in kept
    # a tarball that is not the published one is refused, from a folder or from the registry
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / table["jquery"].tarball).write_bytes(b"not the tarball")
    with pytest.raises(slides.AssetError, match="sha512 differs"):
        slides.tarball(table["jquery"], [bad], cache=tmp_path / "cache", log=lambda m: None)
    monkeypatch.setattr(slides, "_download", lambda a: (b"tampered", "the registry"))
    with pytest.raises(slides.AssetError, match="not the published tarball"):
        slides.tarball(table["jquery"], [], cache=tmp_path / "empty", log=lambda m: None)
    assert not (tmp_path / "empty" / table["jquery"].tarball).exists()
    # a good download is cached, and the next build needs no network
    good = (tmp_path / "tarballs" / table["jquery"].tarball).read_bytes()
    monkeypatch.setattr(slides, "_download", lambda a: (good, "the registry"))
    slides.tarball(table["jquery"], [], cache=tmp_path / "c2", log=lambda m: None)
    monkeypatch.setattr(slides, "_download", lambda a: pytest.fail("the cache has it"))
    assert slides.tarball(table["jquery"], [], cache=tmp_path / "c2", log=lambda m: None)[0] == good


def test_the_default_build_is_self_contained_and_works_offline(tmp_path, monkeypatch):
    table = _fake_assets(tmp_path / "tarballs")
    monkeypatch.setattr(slides, "ASSETS", table)
    monkeypatch.setattr(slides, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(slides, "_download", lambda a: (_ for _ in ()).throw(slides.AssetError("offline")))
    from classroom import __main__ as cli
    out = tmp_path / "slides"
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = cli.main(["slides", "1", "--no-execute", "--out", str(out)])
    assert rc == 1 and "could not be had" in err.getvalue() and "--cdn" in err.getvalue()
    with contextlib.redirect_stdout(io.StringIO()) as log:
        rc = cli.main(["slides", "1", "--no-execute", "--out", str(out), "--assets", str(tmp_path / "tarballs")])
    assert rc == 0, log.getvalue()
    deck = out / f"{CHAPTERS[0].stem}.slides.html"
    for u in slides.inspect_deck(deck.read_text())["local"]:
        assert (out / u).is_file(), u
    assert "needs no network to view" in log.getvalue()


@pytest.mark.slow
def test_the_real_assets_render_every_deck_offline(tmp_path):
    """The pinned packages (from the cache, or downloaded once from the npm registry): every
    file a deck loads is in _assets, no stylesheet there imports from another host, and,
    where Debian's chromium is installed, every deck renders its slides and its math with
    every other host unreachable, opened from the disk."""
    import shutil
    import subprocess
    out = tmp_path / "slides"
    slides.build_all(out, execute=False, log=lambda m: None)
    size = sum(f.stat().st_size for f in (out / "_assets").rglob("*") if f.is_file())
    assert size < 4e6, f"_assets is {size / 1e6:.1f} MB"
    for css in (out / "_assets").rglob("*.css"):
        assert not slides.remote_in_code("style", css.read_text(errors="replace")), css
    for nb in CHAPTERS:
        deck = out / f"{nb.stem}.slides.html"
        for u in slides.inspect_deck(deck.read_text())["local"]:
            assert (out / u).is_file(), u
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no chromium: the files are checked, the rendering is not")
    for nb in CHAPTERS:
        dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                              "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=15000",
                              "--dump-dom", (out / f"{nb.stem}.slides.html").as_uri()],
                             capture_output=True, text=True, timeout=120).stdout
        assert re.search(r'class="reveal[^"]*\bready\b', dom), f"{nb.stem}: reveal.js did not start"
        assert dom.count('class="mjx-chtml') > 0, f"{nb.stem}: no math typeset"
        assert "Math Processing Error" not in dom and "failed to load" not in dom.lower(), nb.stem


@pytest.mark.slow
def test_an_executed_deck_shows_the_figure_not_the_code(tmp_path):
    path, info = slides.build_deck(CHAPTERS[0], tmp_path, execute=True)
    text = path.read_text()
    assert "data:image/png;base64" in text
    assert info["executed"] and 8 <= info["slides"] <= 60


@pytest.mark.parametrize("nb", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_solution_is_in_any_deck(decks, zh_decks, nb):
    """The decks leave every exercise's solution out, in both languages: no line of its own
    anywhere in the deck (tests/solution_cells.py)."""
    from tests import solution_cells
    for lang, built in (("en", decks), ("zh", zh_decks)):
        chapter = nbformat.read(slides.chapter_in(lang, nb), as_version=4)
        shown = solution_cells.shown_in_deck(chapter, built[nb.name][0].read_text(encoding="utf-8"))
        assert not shown, f"{lang} {nb.stem}: " + "\n  ".join(shown[:10])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_executed_deck_leaves_out_the_solutions_and_what_they_print(tmp_path, monkeypatch, lang):
    """Chapter 1 executed into its deck: neither the solutions' code nor their printed lines
    (those of the same chapter executed for the tests: tests/test_notebooks.run_chapter) are
    in it; built with the tag ignored, the same check finds them."""
    from tests import solution_cells
    from tests.test_notebooks import run_chapter
    executed = run_chapter(slides.chapter_in(lang, CHAPTERS[0]))
    lines = solution_cells.telltales(executed)
    assert all(t["output"] for t in lines.values()), lines
    path, info = slides.build_deck(CHAPTERS[0], tmp_path, execute=True, lang=lang)
    text = path.read_text(encoding="utf-8")
    assert info["executed"] and "data:image/png;base64" in text
    assert solution_cells.shown_in_deck(executed, text) == []
    # the check sees a solution when one is there: the deck built with the tag ignored
    monkeypatch.setattr(slides, "SOLUTION_TAG", "no-such-tag")
    (tmp_path / "leaky").mkdir()
    leaky, _ = slides.build_deck(CHAPTERS[0], tmp_path / "leaky", execute=True, lang=lang)
    shown = solution_cells.shown_in_deck(executed, leaky.read_text(encoding="utf-8"))
    assert any("its source line" in s for s in shown) and any("its output line" in s for s in shown), shown


def test_the_guide_lists_every_problem_mistake_and_chapter():
    """What the generated reference holds (that it is fresh: tests/test_generated.py)."""
    text = guide.GUIDE.read_text()
    for p in guide._problems():
        assert f"### Problem {p.number} · `{p.slug}`" in text
        for m in p.mistakes:
            assert m.message in text
    for nb in CHAPTERS:
        assert f"../notebooks/{nb.name}" in text


def test_the_chinese_guide_s_problem_reference_comes_from_the_judge_s_catalogue():
    """docs/teaching.zh.md's reference: each problem under its Chinese title, pointing to its
    Chinese chapter, and every named mistake's message in Chinese, as i18n/zh_CN/judge.po
    has them (read here from the .po, not through the judge's lookup the guide uses)."""
    from i18n import judge as catalogue
    zh = {(e.msgctxt, e.msgid): e.msgstr for e in catalogue.load() if e.msgstr and not e.obsolete}
    text = guide.chinese_guide().read_text(encoding="utf-8")
    reference = text.split("<!-- BEGIN GENERATED: problems -->", 1)[1].split("<!-- END GENERATED: problems -->")[0]
    assert "Named mistakes the judge recognises" not in reference and "判题程序能识别的典型错误" in reference
    for p in guide._problems():
        key = f"p{p.number:02d}"
        title = zh[(f"{key} title", p.title)]
        assert f"### 习题 {p.number} · `{p.slug}` -- {title}" in reference
        assert f"(../{p.chapter.replace('notebooks/', 'notebooks/zh/')})" in reference
        for m in p.mistakes:
            message = zh[(f"{key} mistake {m.name}", m.message)]
            assert f"  - *{m.name}*：{message}" in reference, (p.number, m.name)
    assert len(CJK.findall(reference)) > 5000


def test_a_new_chapter_enters_the_plan(monkeypatch, tmp_path):
    extra = tmp_path / "07_new_chapter.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Chapter 7 — Next")]), extra)
    monkeypatch.setattr(slides, "chapter_paths", lambda: CHAPTERS + [extra])
    plan = guide.plan()
    assert "Chapter 7 — Next" in plan and "07_new_chapter.slides.html" in plan
