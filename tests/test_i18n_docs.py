"""The Chinese README and teacher's guide (i18n/docs.py): catalogues complete (that they
are in step with the English and that README.zh.md and docs/teaching.zh.md are what the build
makes now is tests/test_generated.py's, with every other generated file), every translated
paragraph keeping its numbers, formulas, code names, links, marker
lines and commands, the glossary followed, and the README's student edition cut from the
Chinese file as from the English one.

The tests that run po4a skip without it on a learner's machine and fail in CI (CI=true),
where .ci/run installs it."""
import re
import shutil
from pathlib import Path

import polib
import pytest

from classroom import readme
from i18n import docs as D
from tests.sandbox_support import in_ci
from tests.test_i18n import glossary_misses

ROOT = Path(__file__).resolve().parent.parent
README, TEACHING = D.DOCS
IDS = [d.name for d in D.DOCS]


def require_po4a():
    if D.have_po4a():
        return
    if in_ci():
        pytest.fail(f"CI must check the Chinese documents, but {D.INSTALL_HINT}", pytrace=False)
    pytest.skip(D.INSTALL_HINT)


@pytest.mark.parametrize("doc", D.DOCS, ids=IDS)
def test_catalogue_is_complete_and_keeps_the_facts(doc):
    """No entry untranslated or fuzzy; each keeps its English's numbers, $formulas$,
    `code`, link targets, marker lines and commands (polib only: runs without po4a)."""
    found = D.catalog_problems(doc)
    assert not found, f"{len(found)} to do in {doc.catalog.relative_to(ROOT)}:\n  " + "\n  ".join(found[:30])


@pytest.mark.parametrize("doc", D.DOCS, ids=IDS)
def test_documents_follow_the_glossary(doc):
    """Prose entries render each glossary term as docs/glossary.zh.md fixes it (code
    blocks' comments are not prose)."""
    misses = [f"{D.short(e.msgid)!r}: {m}" for e in D.load(doc) if e.msgstr and not e.obsolete
              and not D.is_code(e) for m in glossary_misses(e.msgid, e.msgstr)]
    assert not misses, f"{len(misses)} glossary misses:\n  " + "\n  ".join(misses[:40])


def test_each_readme_links_to_the_other():
    english = (ROOT / "README.md").read_text(encoding="utf-8")
    chinese = (ROOT / "README.zh.md").read_text(encoding="utf-8")
    assert "](README.zh.md)" in english.split("\n\n", 2)[1]
    assert "](README.md)" in chinese.split("\n\n", 2)[1]
    teaching = (ROOT / "docs/teaching.md").read_text(encoding="utf-8")
    assert "](teaching.zh.md)" in teaching.split("\n\n", 2)[1]
    assert "](teaching.md)" in (ROOT / "docs/teaching.zh.md").read_text(encoding="utf-8").split("\n\n", 2)[1]


def test_the_chinese_readme_has_the_same_two_editions():
    """The marker lines survive po4a in order, and the student edition of README.zh.md,
    like the English one's, has no repo-only paragraph and shows the student-only ones."""
    english = (ROOT / "README.md").read_text(encoding="utf-8")
    chinese = (ROOT / "README.zh.md").read_text(encoding="utf-8")
    assert D.markers(chinese) == D.markers(english) and len(D.markers(english)) >= 10
    files = {f: b"" for f in ("README.md", "README.zh.md", "practice/judge.py", "setup.sh", "requirements.txt")}
    student = readme.student_edition(chinese, files, files)
    assert "<!--" not in student and "student-only" not in student
    hidden = re.findall(r"^<!-- repo-only -->\n(.*?)^<!-- /repo-only -->", chinese, re.S | re.M)
    shown = re.findall(r"^<!-- student-only\n(.*?)^/student-only -->", chinese, re.S | re.M)
    assert len(hidden) == english.count("<!-- repo-only -->\n") and len(shown) == english.count("<!-- student-only\n")
    prose = [line for block in hidden for line in block.splitlines() if len(CJK.findall(line)) > 5]
    assert len(prose) > 20 and not [line for line in prose if line in student]
    assert all(line in student for block in shown for line in block.splitlines() if line.strip())
    assert "学生版" in student and "教师须知" not in student


CJK = re.compile(r"[\u4e00-\u9fff]")


def test_the_chinese_chapters_are_linked_from_the_chinese_files():
    chinese = (ROOT / "README.zh.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((notebooks/[^)]+)\)", chinese)
    assert links and all(link.startswith("notebooks/zh/") and (ROOT / link).is_file() for link in links)
    guide = (ROOT / "docs/teaching.zh.md").read_text(encoding="utf-8")
    assert "](../notebooks/zh/01_kv_cache.ipynb)" in guide and "](../notebooks/01_kv_cache.ipynb)" not in guide


def test_relink():
    assert D.relink("[a](notebooks/01_kv_cache.ipynb) [b](README.md) [c](docs/teaching.md#release) "
                    "[d](https://x.org) [e](#map) [f](kernels/README.md)", README) == (
        "[a](notebooks/zh/01_kv_cache.ipynb) [b](README.md) [c](docs/teaching.zh.md#release) "
        "[d](https://x.org) [e](#map) [f](kernels/README.md)")
    assert D.relink("[a](../notebooks/02_mla_and_decoupled_rope.ipynb) [b](../README.md) [c](teaching.md)",
                    TEACHING) == ("[a](../notebooks/zh/02_mla_and_decoupled_rope.ipynb) [b](../README.zh.md) "
                                  "[c](teaching.md)")


@pytest.mark.parametrize("english, chinese, what", [
    ("<!-- repo-only -->\nThe tests.\n<!-- /repo-only -->\n", "测试。\n<!-- /repo-only -->\n", "marker lines"),
    ("Run `pytest` on 2 cores.", "在 3 个核上运行 `pytest`。", "numbers"),
    ("Run `pytest`.", "运行 `python -m pytest`。", "code names"),
    ("See [the guide](docs/teaching.md).", "见[指南](docs/teaching.zh.md)。", "links"),
    ("**English** · [简体中文](README.zh.md)\n", "[English](README.md) · **简体中文**\n", None),  # the switch
])
def test_entry_checks(english, chinese, what):
    found = D.entry_problems(README, polib.POEntry(msgid=english, msgstr=chinese))
    assert (not found) if what is None else (found and found[0].startswith(what)), found


def test_code_blocks_keep_their_commands():
    code = polib.POEntry(msgid="python judge.py 4   # one problem\n", msgstr="python judge.py 4   # 一道题\n",
                         comment="type: Fenced code block (bash)")
    assert D.entry_problems(README, code) == []
    code.msgstr = "python judge.py 4 --hint   # 一道题\n"
    assert any("commands differ" in p for p in D.entry_problems(README, code))


def test_a_changed_english_paragraph_becomes_fuzzy(tmp_path):
    """po4a-updatepo on an edited README: the edited paragraph's translation is kept,
    marked fuzzy, with the old English; the check names it; the build keeps the English
    there until someone re-translates it."""
    require_po4a()
    (tmp_path / "README.md").write_text((ROOT / "README.md").read_text(encoding="utf-8").replace(
        "need only numpy and matplotlib", "need only numpy, matplotlib and a browser"), encoding="utf-8")
    catalog = tmp_path / "README.po"
    shutil.copy(README.catalog, catalog)
    counts = D.update(README, catalog, tmp_path)
    assert counts["fuzzy"] == 1 and counts["untranslated"] == 0, counts
    fuzzy = [e for e in D.load(README, catalog) if "fuzzy" in e.flags and not e.obsolete]
    assert "a browser" in fuzzy[0].msgid and "need only numpy and matplotlib" in fuzzy[0].previous_msgid
    assert any("fuzzy" in p for p in D.catalog_problems(README, catalog))
    text = D.translated_text(README, tmp_path, catalog)
    assert "need only numpy, matplotlib and a browser" in text


def test_without_po4a_the_checks_skip_here_and_fail_in_ci(monkeypatch):
    monkeypatch.setattr(D, "have_po4a", lambda: False)
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="po4a is not installed"):
        require_po4a()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must check the Chinese documents"):
        require_po4a()
    with pytest.raises(D.Po4aMissing):
        D.update(README, Path("/nonexistent/README.po"))


def test_the_chinese_guide_has_its_generated_parts_in_chinese_and_the_check_covers_them(tmp_path, monkeypatch):
    """`python -m classroom guide` writes the Chinese guide's plan, "open" table and problem
    reference in Chinese (the Chinese chapters' titles and decks; the reference's words from
    the judge's catalogue: tests/test_classroom_slides.py); `guide --check` reports a Chinese
    section that is stale; a guide elsewhere (GUIDE patched) never touches this one."""
    from classroom import guide
    zh = (ROOT / "docs/teaching.zh.md").read_text(encoding="utf-8")
    plan = zh.split("<!-- BEGIN GENERATED: plan -->")[1].split("<!-- END GENERATED: plan -->")[0]
    assert "| 周 | 章 |" in plan and "](../notebooks/zh/01_kv_cache.ipynb)" in plan and "`slides/zh/01_kv_cache" in plan
    assert "第 1 章" in plan and "](../notebooks/01_" not in plan
    assert "习题 1 · `kv_cache_bytes`" in zh and "Problem 1 · `kv_cache_bytes`" not in zh   # the reference too
    copy = tmp_path / "docs" / "teaching.md"
    copy.parent.mkdir()
    copy.write_text((ROOT / "docs/teaching.md").read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(guide, "GUIDE", copy)
    assert guide.write() == [copy] and guide.stale() == []
    assert (ROOT / "docs/teaching.zh.md").read_text(encoding="utf-8") == zh
    (tmp_path / "docs" / "teaching.zh.md").write_text(zh.replace("| 周 | 章 |", "| week | 章 |"), encoding="utf-8")
    assert guide.stale() == ["zh:plan"]
