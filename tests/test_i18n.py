"""The Chinese edition's machinery (i18n/): catalogues in step with the English chapters,
fuzzy when the English changes, the build, and the checks that a translation keeps every
number, formula, code name and link of its English cell, and renders each glossary term
as docs/glossary.zh.md fixes it."""
import re
from pathlib import Path

import nbformat
import pytest

from i18n import notebooks as I

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.zh.md"


def glossary() -> list[tuple[tuple[str, ...], str]]:
    """((English forms...), Chinese) for each row of the glossary's first table."""
    table = GLOSSARY.read_text().split("## Labels")[0]
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \|", table, flags=re.M)
    return [(tuple(f.strip() for f in en.split(" / ")), zh) for en, zh in rows if en not in ("English", "---")]


def prose(text: str) -> str:
    """A cell's text without code spans, formulas and link targets (their words are names)."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"\$\$.+?\$\$|\$[^$\n]+\$|`[^`\n]+`", " ", text, flags=re.S)
    return re.sub(r"\]\([^)]*\)", "]", text)


def glossary_misses(english: str, chinese: str) -> list[str]:
    en, zh = prose(english), prose(chinese)
    return [f"{forms[0]!r} -> {z!r}" for forms, z in glossary()
            if any(re.search(rf"(?<![\w-]){re.escape(e)}(?![\w-])", en, re.I) for e in forms)
            and not any(alt in zh for alt in z.split(" / "))]   # "解码 / 解析": either, by the sense


@pytest.fixture
def chapter(tmp_path, monkeypatch):
    """A two-cell chapter in a temporary course, with its catalogue folder."""
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Chapter 9 — Pages\n\nA page holds 64 tokens; see "
                                              "[chapter 1](01_kv_cache.ipynb) and [the judge](../practice/judge.py).",
                                              id="intro"),
                nbformat.v4.new_code_cell("print(64)", id="code"),
                nbformat.v4.new_markdown_cell("The `block_table` maps $i \\to p$.", id="table")]
    path = nbdir / "09_pages.ipynb"
    nbformat.write(nb, path)
    monkeypatch.setattr(I, "CATALOGS", tmp_path / "i18n" / "zh_CN" / "notebooks")
    monkeypatch.setattr(I, "BUILT", nbdir / "zh")
    return path


def translate(path, cell_id, text):
    cat = I.load(path)
    entry = I.by_cell(cat)[cell_id]
    entry.msgstr = text
    entry.flags = [f for f in entry.flags if f != "fuzzy"]
    entry.previous_msgid = None
    I.save(path, cat)


def test_update_makes_one_entry_per_markdown_cell(chapter):
    assert I.update(chapter) == {"same": 0, "changed": 0, "new": 2, "removed": 0}
    cells = I.by_cell(I.load(chapter))
    assert set(cells) == {"intro", "table"} and all(not e.msgstr for e in cells.values())
    assert [p.what for p in I.problems(chapter)] == ["not translated", "not translated"]


def test_a_changed_english_cell_becomes_fuzzy_and_keeps_the_old_english(chapter):
    I.update(chapter)
    translate(chapter, "table", "`block_table` 把 $i \\to p$ 映射到页。")
    assert I.problems(chapter) == [p for p in I.problems(chapter) if p.cell == "intro"]
    nb = nbformat.read(chapter, as_version=4)
    nb.cells[2].source = "The `block_table` maps $i \\to p$ for each sequence."
    nbformat.write(nb, chapter)
    assert I.problems(chapter)[-1].what.startswith("the catalogue is out of step")
    assert I.update(chapter)["changed"] == 1
    m = I.by_cell(I.load(chapter))["table"]
    assert "fuzzy" in m.flags and m.msgstr.startswith("`block_table`")
    assert m.previous_msgid == "The `block_table` maps $i \\to p$."
    I.update(chapter)   # a second update keeps the English the translation was made from
    assert I.by_cell(I.load(chapter))["table"].previous_msgid == "The `block_table` maps $i \\to p$."
    assert [p.what for p in I.problems(chapter) if p.cell == "table"] == [
        "fuzzy: the English changed since it was translated"]
    # the build keeps the English where the translation is stale
    built = nbformat.read(I.build(chapter), as_version=4)
    assert built.cells[2].source == nb.cells[2].source


def test_a_removed_cell_is_reported_until_update(chapter):
    I.update(chapter)
    translate(chapter, "table", "`block_table` 把 $i \\to p$ 映射到页。")
    nb = nbformat.read(chapter, as_version=4)
    del nb.cells[2]
    nbformat.write(nb, chapter)
    assert any(p.cell == "table" and "no longer has" in p.what for p in I.problems(chapter))
    assert I.update(chapter)["removed"] == 1
    assert "table" not in I.by_cell(I.load(chapter))


def test_the_build_translates_and_relinks(chapter):
    I.update(chapter)
    translate(chapter, "intro", "# 第 9 章 — 页\n\n一页容纳 64 个 token；见[第 1 章](01_kv_cache.ipynb)和"
                                "[判题程序](../practice/judge.py)。")
    translate(chapter, "table", "`block_table` 把 $i \\to p$ 映射到页。")
    assert I.problems(chapter) == []
    out = nbformat.read(I.build(chapter), as_version=4)
    assert out.cells[0].source.endswith("见[第 1 章](01_kv_cache.ipynb)和[判题程序](../../practice/judge.py)。")
    assert out.cells[1].source == "print(64)" and out.metadata["mlacourse"]["lang"] == "zh-CN"


def test_a_generated_section_is_not_translated_but_filled_in(chapter):
    """A cell's generated section (the practice list: i18n/sections.py) is emptied in the
    catalogue, so a new problem changes no entry; the build puts in the Chinese section it
    is given (relinked), or keeps the one the built chapter has."""
    nb = nbformat.read(chapter, as_version=4)
    nb.cells[2].source += ("\n\n<!-- BEGIN GENERATED: practice -->\n- [Problem 9](../practice/p09_x.py)\n"
                           "<!-- END GENERATED: practice -->\n\nNext: the end.")
    nbformat.write(nb, chapter)
    I.update(chapter)
    entry = I.by_cell(I.load(chapter))["table"]
    assert "Problem 9" not in entry.msgid and "<!-- BEGIN GENERATED: practice -->\n<!-- END" in entry.msgid
    translate(chapter, "table", entry.msgid.replace("The `block_table` maps $i \\to p$.", "`block_table` 把 $i \\to p$ 映射到页。")
              .replace("Next: the end.", "下一章：完。"))
    zh = "<!-- BEGIN GENERATED: practice -->\n- [习题 9](../practice/p09_x.py)\n<!-- END GENERATED: practice -->"
    out = nbformat.read(I.build(chapter, {"table": {"practice": zh}}), as_version=4).cells[2].source
    assert "- [习题 9](../../practice/p09_x.py)\n" in out and out.endswith("下一章：完。")
    nb.cells[2].source = nb.cells[2].source.replace("Problem 9", "Problem 10")   # a new problem: same entry
    nbformat.write(nb, chapter)
    assert I.update(chapter)["changed"] == 0 and [p for p in I.problems(chapter) if p.cell == "table"] == []
    kept = nbformat.read(I.build(chapter), as_version=4).cells[2].source   # nothing given: the built one stays
    assert "[习题 9](../../practice/p09_x.py)" in kept


@pytest.mark.parametrize("english, chinese, what", [
    ("A page holds 64 tokens.", "一页容纳 46 个 token。", "numbers"),
    ("It is 70,272 bytes.", "它是 70272 字节。", None),                      # separators may differ
    ("Use $d_h = 128$.", "使用 $d_h=128$。", "formulas"),
    ("Call `absorb_decode`.", "调用 `absorb_decode()`。", "code names"),
    ("See [it](../README.md).", "见[它](../README.zh.md)。", "links"),          # targets stay English
    ("Chapter 3 has 2 paths.", "第 3 章有 2 条路径。", None),
    ("In June 2024 it merged.", "2024 年 6 月合并。", None),                 # a month before a year is a number
    ("In June 2024 it merged.", "2024 年六月合并。", "numbers"),
    ("On September 17, 2025.", "2025 年 9 月 17 日。", None),
    ("It may be May.", "也许是五月。", None),                                  # no year: a word
    ("56.9× fewer bytes.", "字节数只有 1/56.9。", None),                      # 1/N counts as N
    ("56.9× fewer bytes.", "字节数只有 1/5.69。", "numbers"),
])
def test_same_facts(english, chinese, what):
    found = I.same_facts(english, chinese)
    assert (not found) if what is None else (found and found[0].startswith(what)), found


def test_relink():
    assert I.relink("[a](../practice/p01.py) [b](02_x.ipynb#sec) [c](../README.md) [d](https://x.org/a) "
                    "[e](#here)") == ("[a](../../practice/p01.py) [b](02_x.ipynb#sec) [c](../../README.zh.md) "
                                       "[d](https://x.org/a) [e](#here)")


def test_glossary_table_reads_and_the_check_can_fail():
    terms = {forms[0]: zh for forms, zh in glossary()}
    assert terms["KV cache"] == "KV 缓存" and terms["arithmetic intensity"] == "计算访存比" and len(terms) >= 25
    assert glossary_misses("The KV cache of `decode` is read.", "缓存被读取。") == ["'KV cache' -> 'KV 缓存'"]
    assert glossary_misses("Call `decode_step`.", "调用 `decode_step`。") == []   # code names are not prose


def test_every_chapter_follows_the_glossary():
    misses = [f"{ch.stem} {cid}: {m}" for ch in I.chapters() for cid, e in I.by_cell(I.load(ch)).items()
              if e.msgstr for m in glossary_misses(e.msgid, e.msgstr)]
    assert not misses, f"{len(misses)} glossary misses:\n  " + "\n  ".join(misses[:40])


def test_the_judge_follows_the_glossary():
    """The judge's catalogue (i18n/zh_CN/judge.po: its sentences, the problems' statements,
    hints and named mistakes) renders each glossary term as the chapters do."""
    from i18n import judge
    misses = [f"[{e.msgctxt or 'code'}] {e.msgid[:40]!r}: {m}" for e in judge.load()
              if e.msgstr and not e.obsolete for m in glossary_misses(e.msgid, e.msgstr)]
    assert not misses, f"{len(misses)} glossary misses:\n  " + "\n  ".join(misses[:40])


# --------------------------------------------------------------------------- the built edition

CHINESE = sorted(I.BUILT.glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", CHINESE, ids=[f"zh/{p.stem}" for p in CHINESE])
def test_chinese_chapter_executes(path):
    """Each Chinese chapter runs, from its own folder (one deeper than the English), with no
    error: the same code as the English, so the same numbers (the build copies the code
    cells; the test above keeps notebooks/zh/ in step)."""
    from tests.test_notebooks import run_chapter
    nb = run_chapter(path)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"zh/{path.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
    english = nbformat.read(I.NOTEBOOKS / path.name, as_version=4)
    assert [c.source for c in nb.cells if c.cell_type == "code"] == \
        [c.source for c in english.cells if c.cell_type == "code"]
    assert any(c.outputs for c in nb.cells if c.cell_type == "code")
