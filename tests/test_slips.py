"""Named mistakes and near-copy attempts stored as the small change they are
(grader/slips.py): every slip file of the course reads and expands; an entry written from a
whole file expands back to it byte for byte; a change that no longer applies fails with the
entry's name, never silently; and a contract change made once, in a base, reaches every
expansion that rests on it."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from grader import problems as layout
from grader import runner, slips

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = {p.stem: p for p in runner.discover()}
SLIP_FILES = sorted([*(ROOT / "grader" / "problems").glob(f"p[0-9][0-9]_*/{layout.MISTAKES}"),
                     *(ROOT / "grader" / "problems").glob(f"p[0-9][0-9]_*/{layout.CORPUS_SLIPS}")])


def _id(path: Path) -> str:
    return path.relative_to(ROOT / "grader" / "problems").as_posix()


@pytest.mark.parametrize("slip_file", SLIP_FILES, ids=[_id(p) for p in SLIP_FILES])
def test_every_entry_expands_to_a_learner_file(slip_file):
    """Each entry names an existing base, applies to it, and gives a file that parses, opens
    with a header, and defines a function of its problem; a named mistake's entry is what
    the spec loads (the judge runs exactly that text)."""
    home = slips.problem_folder(slip_file)
    problem = PROBLEMS[home.name]
    entries = slips.read(slip_file)
    assert entries, f"{_id(slip_file)} has no entry"
    for e in entries:
        text = slips.expand(e, home)
        tree = ast.parse(text, filename=e.name)
        assert ast.get_docstring(tree) is not None and e.docstring.strip(), e.name
        defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert defs & set(problem.functions), f"{e.name} defines none of {problem.functions}"
    if slip_file.name == layout.MISTAKES:
        assert [m.source for m in problem.mistakes] == [slips.expand(e, home) for e in entries]


def test_the_bases_are_right_answers():
    """Every base (learner.py, learner_*.py) passes every case of seed 0 with its functions
    (the reference for those it lacks): so each entry's change is its slip, nothing else."""
    from tests.test_judge_specs import simulate   # the in-process grading of a mistake
    from grader.records import CaseStatus
    for stem, p in PROBLEMS.items():
        if runner.missing_requirements(p):
            continue
        for base in sorted((ROOT / "grader" / "problems" / stem).glob("learner*.py")):
            ns: dict = {}
            exec(compile(base.read_text(), str(base), "exec"), ns)   # noqa: S102 -- course code
            impl = {f: ns[f] for f in p.functions if f in ns}
            assert impl, f"{_id(base)} defines none of {p.functions}"
            failing = [o for o in simulate(p, 0, impl) if o.status is CaseStatus.FAIL]
            assert not failing, f"{_id(base)} fails {failing[0].case.name!r}: {failing[0].message[:300]}"


# --------------------------------------------------------------------------- the format

BASE = '''"""A base.
"""
import numpy as np


def f(x, scale=1.0):
    y = np.asarray(x) * scale
    return y.sum(axis=0)


def g(x):
    return f(x) + 1
'''


def _home(tmp_path: Path, base: str = BASE) -> Path:
    (tmp_path / "learner.py").write_text(base)
    return tmp_path


def test_an_entry_written_from_a_file_expands_back_to_it(tmp_path):
    home = _home(tmp_path)
    wrong = ('"""mistake: row sums\nmessage: You summed each row.\n"""\nimport math\nimport numpy as np\n\n\n'
             'def f(x, scale=1.0):\n    y = np.asarray(x) * scale\n    return y.sum(axis=1)   # slip\n\n\n'
             'def g(x):\n    return f(x) + 1\n')
    e = slips.make_entry("row_sums.py", wrong, "learner.py", BASE)
    assert slips.expand(e, home) == wrong
    assert e.changes[0].top and [k for k, _ in e.changes[1].lines] == ["-", "+"]   # an import; one line
    slips.write(home / "mistakes.diff", [e], "Two lines of comment.\nThe second.")
    again = slips.read(home / "mistakes.diff")
    assert [x.name for x in again] == ["row_sums.py"] and slips.expand(again[0], home) == wrong
    text = (home / "mistakes.diff").read_text()
    assert text.startswith("# Two lines of comment.\n# The second.\n\n=== row_sums.py\nmistake: row sums\n")
    assert "def f(" not in text   # the signature is no change's context: it stays free to change


def test_a_change_that_no_longer_applies_names_its_entry(tmp_path):
    home = _home(tmp_path)
    text = "=== slip.py\nmistake: slip\nmessage: m\n@@\n-    return y.sum(axis=0)\n+    return y.sum()\n"
    e = slips.parse(text, "p99/mistakes.diff")[0]
    assert "return y.sum()" in slips.expand(e, home)
    _home(tmp_path, BASE.replace("return y.sum(axis=0)", "return np.sum(y, axis=0)"))
    with pytest.raises(slips.SlipError, match=r"p99/mistakes.diff:1 \(slip.py\).*not in learner.py"):
        slips.expand(e, home)
    _home(tmp_path, BASE + "\n\ndef h(y):\n    return y.sum(axis=0)\n")
    with pytest.raises(slips.SlipError, match="stand 2 times"):
        slips.expand(e, home)


@pytest.mark.parametrize("text, says", [
    ("stray words\n=== a.py\n", "only '#' comments"),
    ("=== a.py\nmistake: a\n@@\n?oops\n", "starts with ' ', '-' or '+'"),
    ("=== a.py\nx\n=== a.py\ny\n", "entries named twice"),
    ("=== a.py\nx\n@@ top\n-import os\n", "may only add lines"),
])
def test_a_malformed_slip_file_is_refused(tmp_path, text, says):
    with pytest.raises(slips.SlipError, match=re.escape(says)):
        for e in slips.parse(text, "t.diff"):
            slips.expand(e, _home(tmp_path))


def test_a_named_mistake_with_an_unknown_reason_is_refused_where_it_loads(tmp_path):
    """A mistake's 'reason:' is what its verdict must say (tests/test_judge_corpus.py grades
    it); a misspelt one stops the spec from loading, naming the entry."""
    from grader.spec import load_mistakes
    home = _home(tmp_path)
    entry = "=== sums_rows.py\nmistake: sums rows\nmessage: m\nreason: {}\n@@\n-    return y.sum(axis=0)\n+    return y.sum(axis=1)\n"
    (home / "mistakes.diff").write_text(entry.format("not_finite"))
    assert [m.name for m in load_mistakes(home / "spec.py")] == ["sums rows"]
    (home / "mistakes.diff").write_text(entry.format("not_finte"))
    with pytest.raises(ValueError, match=r"sums_rows.py: unknown 'reason: not_finte'"):
        load_mistakes(home / "spec.py")


# --------------------------------------------------------------------------- a contract change

def _with_new_argument(text: str, functions) -> str:
    """The base with a new keyword argument in the signature of each of the problem's functions."""
    return re.sub(rf"^(def (?:{'|'.join(functions)})\(.*?)\):", r"\1, contract_probe=None):", text,
                  flags=re.M | re.S)


def test_a_contract_change_in_a_base_reaches_every_expansion(tmp_path):
    """Give every problem function of every base a new argument -- the change a contract
    makes -- once, in the base: every entry built on it (named mistakes and corpus near-copies
    alike) expands with the new signature; an entry whose own change rewrites a signature is
    refused by name, never expanded with the old one. For problem 17, where such a change
    meant editing 13 mistake files and 17 corpus files, it is now the bases alone."""
    import shutil
    followed, refused, by_problem = [], [], {}
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")   # "from solution" rests on the model answer
    for slip_file in SLIP_FILES:
        home = slips.problem_folder(slip_file)
        functions = PROBLEMS[home.name].functions
        copy = tmp_path / "grader" / "problems" / home.name
        if not copy.exists():
            shutil.copytree(home, copy)
        for e in slips.read(slip_file):
            base = slips.base_path(copy, e.base)
            original = slips.base_path(home, e.base).read_text()
            changed = _with_new_argument(original, functions)
            assert changed != original, f"{e.base} of {home.name} has no signature to change"
            base.write_text(changed)
            try:
                text = slips.expand(e, copy)
            except slips.SlipError as err:
                assert e.name in str(err)
                refused.append(f"{home.name}/{e.name}")
                continue
            new_sigs = re.findall(r"^def \w+\([^)]*contract_probe=None\):", changed, re.M)
            old_sigs = re.findall(rf"^def (?:{'|'.join(functions)})\(.*?\):", original, re.M | re.S)
            kept = [s for s in old_sigs if s in text]
            assert not kept, f"{home.name}/{e.name} still has the old signature {kept[0]!r}"
            assert any(s in text for s in new_sigs), f"{home.name}/{e.name} lost its function"
            ast.parse(text)
            followed.append(f"{home.name}/{e.name}")
            by_problem.setdefault(home.name, set()).add(e.base)
    rewrites = [f"{slips.problem_folder(f).name}/{e.name}" for f in SLIP_FILES for e in slips.read(f)
                if any(k == "-" and re.match(rf"def ({'|'.join(PROBLEMS[slips.problem_folder(f).name].functions)})\(", t)
                       for ch in e.changes for k, t in ch.lines)]
    assert sorted(refused) == sorted(rewrites)   # refused: exactly the entries that rewrite a signature
    assert len(followed) + len(refused) == sum(len(slips.read(f)) for f in SLIP_FILES)
    assert len(followed) >= 0.99 * (len(followed) + len(refused)), (len(followed), refused)
    p17 = [x for x in followed if x.startswith("p17_")]
    print(f"\n{len(followed)} expansions followed a contract change made in their bases, "
          f"{len(refused)} refused by name ({refused}); problem 17: {len(p17)} entries, "
          f"{len(by_problem['p17_sparse_decode'])} bases edited")
    assert len(p17) >= 19 and len(by_problem["p17_sparse_decode"]) <= 6
