"""The course's map agrees with the problem specs, which are the one source of truth:
the README's problem table, each chapter's practice list, and each stub's header."""
from __future__ import annotations

import json
import re
from pathlib import Path

from grader import runner
from grader.report import PROG

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = runner.discover()


def _markdown(nb: Path) -> str:
    cells = json.loads(nb.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def _chapter_number(chapter_path: str) -> int:
    return int(Path(chapter_path).name[:2])


def test_readme_problem_table_matches_the_specs():
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Practice problems"):]
    rows = re.findall(r"^\| (\d+) \| `(\w+)` — .*? \| (\d+) \|$", table, flags=re.M)
    got = [(int(n), slug, int(ch)) for n, slug, ch in rows]
    want = [(p.number, p.slug, _chapter_number(p.chapter)) for p in PROBLEMS]
    assert got == want, f"README problem table {got} != specs {want}"


def test_readme_chapter_map_lists_each_chapters_problems():
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## The map"):readme.index("## Practice problems")]
    rows = {int(m.group(1)): m.group(0) for m in re.finditer(r"^\| (\d+) \| \[.*$", table, flags=re.M)}
    for p in PROBLEMS:
        ch = _chapter_number(p.chapter)
        assert ch in rows, f"the README's map has no row for chapter {ch}"
        last = rows[ch].rstrip(" |").rsplit("|", 1)[-1]
        numbers = set()
        for part in re.findall(r"\d+(?:–\d+)?", last):
            lo, _, hi = part.partition("–")
            numbers |= set(range(int(lo), int(hi or lo) + 1))
        assert p.number in numbers, f"the map's chapter {ch} row does not list problem {p.number}"


def test_each_chapter_links_its_problems_and_only_real_ones():
    stubs = {p.filename: p for p in PROBLEMS}
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        text = _markdown(nb)
        linked = set(re.findall(r"practice/(p\d\d_\w+\.py)", text))
        for name in linked:
            assert name in stubs, f"{nb.name} links practice/{name}, which is no problem"
        mine = {p.filename for p in PROBLEMS if Path(p.chapter).name == nb.name}
        assert mine <= linked, f"{nb.name} does not link its problems {sorted(mine - linked)}"


def test_every_spec_names_an_existing_chapter():
    for p in PROBLEMS:
        assert (ROOT / p.chapter).is_file(), f"problem {p.number}: no chapter {p.chapter}"


def test_stubs_name_one_command_and_their_number():
    for p in PROBLEMS:
        stub = runner.PRACTICE / p.filename
        assert stub.is_file(), f"problem {p.number} has no stub practice/{p.filename}"
        src = stub.read_text()
        assert f"{PROG} {p.number}" in src, f"{p.filename} must say `{PROG} {p.number}`"
        assert f"TODO(problem {p.number})" in src, f"{p.filename} needs a TODO(problem {p.number})"
        assert "python judge.py" not in src and ".venv/bin/python" not in src, p.filename
    for p in PROBLEMS:
        for h in p.hints:
            assert "judge.py" not in h or PROG in h, f"problem {p.number}: a hint names another command"
