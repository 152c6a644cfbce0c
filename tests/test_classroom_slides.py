"""Lecture decks: every chapter renders as a reveal.js deck with a sensible number of
slides, long code stays off the slides, authors' tags win over the rules, and with local
assets a deck loads nothing from another host. The decks are rendered without executing
the chapters (the rules read the cells' source, so the slides are the same); one slow
test executes chapter 1 and checks its figure is in the deck."""
import re

import nbformat
import pytest

from grader.classroom import guide, slides

CHAPTERS = slides.chapter_paths()


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    built = {}
    for nb in CHAPTERS:
        path, info = slides.build_deck(nb, out, execute=False)
        built[nb.name] = (path, info)
    return built


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


def test_with_local_assets_a_deck_needs_no_other_host(tmp_path):
    path, info = slides.build_deck(CHAPTERS[0], tmp_path, execute=False, asset_prefix="_assets")
    assert info["external"] == []
    text = path.read_text()
    for local in slides.asset_urls("_assets").values():
        assert local.split("?")[0].split("/")[-1] in text
    _, cdn = slides.build_deck(CHAPTERS[0], tmp_path, execute=False)
    assert cdn["external"], "without local assets the deck names its CDN files (the check is not vacuous)"


@pytest.mark.slow
def test_an_executed_deck_shows_the_figure_not_the_code(tmp_path):
    path, info = slides.build_deck(CHAPTERS[0], tmp_path, execute=True)
    text = path.read_text()
    assert "data:image/png;base64" in text
    assert info["executed"] and 8 <= info["slides"] <= 60


def test_the_guide_is_generated_from_the_specs():
    assert guide.stale() == [], "run: python -m grader.classroom guide"
    text = guide.GUIDE.read_text()
    for p in guide._problems():
        assert f"### Problem {p.number} · `{p.slug}`" in text
        for m in p.mistakes:
            assert m.message in text
    for nb in CHAPTERS:
        assert f"../notebooks/{nb.name}" in text


def test_a_new_chapter_enters_the_plan(monkeypatch, tmp_path):
    extra = tmp_path / "07_new_chapter.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Chapter 7 — Next")]), extra)
    monkeypatch.setattr(slides, "chapter_paths", lambda: CHAPTERS + [extra])
    plan = guide.plan()
    assert "Chapter 7 — Next" in plan and "07_new_chapter.slides.html" in plan
