"""Two rules about the code's words, checked on every tracked source file (ast and plain
text, nothing imported or run; well under a second).

**No history in the code.** Code and comments say what the code is and why, not how it came
to be: no reference to our issue tracker ("issue 15", "(#12)"), no "first edition", "an
earlier version of this adapter", "for one release", "CI found ...". Git keeps the history;
rationale that outlives a change goes to docs/decisions.md. A citation of another project's
tracker names it (``Dao-AILab/flash-attention#1897``, a URL) and is not ours. The chapters
(notebooks/) and the Markdown documents are not code: a chapter may tell what FlashMLA did
in 2025, and kernels/BENCHMARKS.md is a log of runs.

**Every text a learner reads from the judge is translatable.** The judge speaks English or
Chinese (grader/lang.py); a sentence reaches the catalogue only when it is written inside
``said(...)``, ``_(...)`` or ``N_(...)`` as a plain string literal (Babel's extractor reads
literals, not f-strings or names). So, in grader/ (the problems' checkers included):
  * the message given to a verdict -- ``Verdict(passed, message, ...)``, ``fail(message,
    ...)``, and the state changes of a result record ``CaseOutcome.fail / not_started``,
    ``ProblemResult.broken / unavailable / missing`` -- holds no text of its own: no string
    literal, f-string, ``"..." + x`` or ``"...".format(...)`` outside those calls;
  * what ``print`` shows holds no English words of its own (a literal or the literal part
    of an f-string): ``print(_("..."))``, ``print(f"{n:>2} {slug}")``;
  * the first argument of ``said`` and ``N_`` is a plain string literal, and ``_`` is given a
    literal or a name (a constant marked ``N_`` where it is defined), never an f-string or
    a sum of texts.
A variable passed on is not checked here: whoever built it is.

A line may break a rule with a reason, in a comment on that line:
``# lint: allow history: <why>`` or ``# lint: allow translation: <why>``; an allowance
without a reason is itself reported.
"""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.smoke   # in the default run (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------- the rules

CODE_SUFFIXES = {".py", ".sh", ".js", ".yml", ".yaml", ".toml", ".ini", ".cfg", ".j2"}
NOT_CODE = ("notebooks/", "web/vendor/",   # chapters tell history where it teaches
            "tests/test_lint.py")          # this file: its examples break the rules on purpose

HISTORY = [  # (pattern, what it is); case-insensitive
    (r"\bissues?\s+#?\d+", "a reference to our issue tracker"),
    (r"(?<![\w/.\-#&\"'])#\d+\b(?![\w-])", "a reference to our issue tracker (#N)"),
    (r"\b(?:the|this|that) issue(?:'s)?\b(?! (?:is|was|here)\b)", "a reference to our issue tracker"),
    (r"\bfirst edition\b|\bas first shipped\b", "version history: name it by what it is"),
    (r"\b(?:earlier|older|previous) (?:version|edition|judge|child|format|name)\b"
     r"|\bold (?:version|edition|judge|format)\b", "version history"),
    (r"\bfor one release\b|\bnext release\b|\bin a later release\b", "a shim's lifetime (this repository has no releases)"),
    (r"\bCI found\b|\b(?:the|a) review found\b|\bfound by (?:CI|the review)\b", "how a change came about"),
    (r"\bnot tried on a GPU\b", "a to-do in a comment: say what is untested, as a fact, where it is reported"),
    (r"\bgot (?:that|it|this) wrong\b|\bbefore the fix\b|\bafter the fix\b", "version history"),
    (r"\blegacy(?:\b|_)", "version history: name it by what it is"),
]
_HISTORY = [(re.compile(p, re.I), what) for p, what in HISTORY]
# another project's tracker, named before the number: "Dao-AILab/flash-attention#1897", "sgl-project/sglang #38942"
CITATION = re.compile(r"[\w.-]+/[\w.-]+\s?(?:issues?\s+|PR\s+)?$", re.I)
# Lines of grader/jail.py, which the sandbox's rewrite replaces, left to that rewrite: (file, phrase).
# Each entry must still be found, so it is deleted with its line.
PENDING: set = set()   # (file, phrase) pairs waiting for a rewrite that removes them
ALLOW = re.compile(r"lint: allow (history|translation)\b:?\s*(.*)$")

MESSAGE_METHODS = {"fail": 0, "not_started": 0, "broken": 0, "unavailable": 0, "missing": 0}  # arg index
MESSAGE_CALLS = {"fail": 0, "Verdict": 1}      # spec.fail(message, reason), Verdict(passed, message, reason)
TEMPLATES = {"said", "N_"}   # the first argument is a template of the catalogue: a literal
TRANSLATE = {"_"}            # translates a literal, or a name marked N_ where it was defined
TRANSLATION_SCOPE = ("grader/",)
# of a problem's folder only the spec is the judge's: its stub, learner bases and corpus are
# learners' code (grader.problems.shipped: what a student edition ships of grader/)
TRANSLATION_MACHINERY = {"grader/lang.py"}     # defines said/_/N_: passes templates on by name


def tracked_files(root: Path = ROOT) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    return sorted(n for n in out.decode().split("\0") if n)


def is_code(rel: str, root: Path = ROOT) -> bool:
    if rel.startswith(NOT_CODE):
        return False
    if Path(rel).suffix in CODE_SUFFIXES:
        return True
    if Path(rel).suffix == "":
        try:
            return (root / rel).read_bytes()[:2] == b"#!"   # .ci/run, classroom/gradescope/run_autograder
        except OSError:
            return False
    return False


def _allowed(line: str, rule: str, problems: list, where: str) -> bool:
    m = ALLOW.search(line)
    if not m or m.group(1) != rule:
        return False
    if len(m.group(2).strip()) < 3:
        problems.append(f"{where}: 'lint: allow {rule}' without a reason")
    return True


def history_problems(text: str, rel: str, pending=frozenset()) -> list[str]:
    """Each line of ``text`` that names our tracker or tells version history (a match in
    ``pending``, (rel, phrase), is left out)."""
    out: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        where = f"{rel}:{n}"
        found = [(m, what) for rx, what in _HISTORY for m in rx.finditer(line)
                 if not CITATION.search(line[:m.start()]) and (rel, m.group(0)) not in pending]
        if found and not _allowed(line, "history", out, where):
            m, what = found[0]
            out.append(f"{where}: {m.group(0)!r}: {what}")
    return out


# ---- the translation rule

def _call_name(node: ast.Call) -> str | None:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _own_text(node: ast.AST | None) -> ast.AST | None:
    """The part of an expression that is text of its own, not made by said/_/N_ (None: none)."""
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return node if isinstance(node.value, str) and node.value.strip() else None
    if isinstance(node, ast.JoinedStr):
        return node
    if isinstance(node, ast.BinOp):
        return _own_text(node.left) or _own_text(node.right)
    if isinstance(node, ast.IfExp):
        return _own_text(node.body) or _own_text(node.orelse)
    if isinstance(node, ast.BoolOp):
        return next((t for t in map(_own_text, node.values) if t is not None), None)
    if isinstance(node, (ast.List, ast.Tuple)):
        return next((t for t in map(_own_text, node.elts) if t is not None), None)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
        if node.func.attr == "format":
            return node                      # "...{x}".format(x=...): text outside the catalogue
        if node.func.attr == "join":         # "; ".join([...]): the parts are the text
            return next((t for t in map(_own_text, node.args) if t is not None), None)
    return None


def _words(node: ast.AST | None) -> bool:
    """Does the text of its own hold a word (two letters in a row outside the placeholders)?"""
    pieces = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)] \
        if node is not None else []
    return any(re.search(r"[A-Za-z]{2}", p) for p in pieces)


def _message_arg(node: ast.Call) -> ast.AST | None:
    """The message argument of a verdict or a record's state change, or None if ``node`` is neither."""
    name = _call_name(node)
    if isinstance(node.func, ast.Attribute) and name in MESSAGE_METHODS:
        index = MESSAGE_METHODS[name]
    elif isinstance(node.func, ast.Name) and name in MESSAGE_CALLS:
        index = MESSAGE_CALLS[name]
    else:
        return None
    for kw in node.keywords:
        if kw.arg == "message":
            return kw.value
    return node.args[index] if len(node.args) > index else None


def translation_problems(source: str, rel: str) -> list[str]:
    out: list[str] = []
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source, filename=rel)):
        if not isinstance(node, ast.Call):
            continue
        where = f"{rel}:{node.lineno}"
        line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
        name = _call_name(node)
        first = node.args[0] if node.args else None
        literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
        if isinstance(node.func, ast.Name) and rel not in TRANSLATION_MACHINERY and not literal and (
                name in TEMPLATES or (name in TRANSLATE and _own_text(first) is not None)) \
                and not _allowed(line, "translation", out, where):
            out.append(f"{where}: {name}(...) needs a plain string literal first, got "
                       f"{ast.unparse(first) if first is not None else 'nothing'!r:.80}")
        text = _own_text(_message_arg(node))
        if text is not None and not _allowed(line, "translation", out, where):
            out.append(f"{where}: {name}(...) is given text the catalogue never sees: "
                       f"{ast.unparse(text)!r:.100}; write it inside said(...)")
        if isinstance(node.func, ast.Name) and name == "print":
            words = [t for t in map(_own_text, node.args) if _words(t)]
            if words and not _allowed(line, "translation", out, where):
                out.append(f"{where}: print(...) shows English the catalogue never sees: "
                           f"{ast.unparse(words[0])!r:.100}; write it inside _(...)")
    return out


# ---------------------------------------------------------------------------- the repository

@pytest.fixture(scope="module")
def files():
    # The lint reads what git tracks; a course unpacked from a zip has no history to ask.
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the lint reads `git ls-files` (CI runs it in a clone)")
    return tracked_files()


def test_no_issue_reference_or_version_history_in_the_code(files):
    code = [rel for rel in files if is_code(rel) and (ROOT / rel).is_file()]
    assert len(code) > 300 and "grader/runner.py" in code and ".ci/run" in code
    texts = {rel: (ROOT / rel).read_text(encoding="utf-8") for rel in code}
    found = [p for rel, text in texts.items() for p in history_problems(text, rel, PENDING)]
    assert not found, ("history in the code (say what it is and why; rationale goes to "
                       "docs/decisions.md):\n" + "\n".join(found))
    stale = [p for p in PENDING if p[1] not in texts.get(p[0], "")]
    assert not stale, f"PENDING names lines that are gone: delete {stale} from tests/test_lint.py"


def test_every_verdict_text_of_the_judge_goes_through_the_catalogue(files):
    from grader.problems import shipped
    judge = [rel for rel in files if rel.startswith(TRANSLATION_SCOPE) and rel.endswith(".py") and shipped(rel)]
    assert "grader/runner.py" in judge and "grader/spec.py" in judge
    assert "grader/problems/p03_expand_prefill/spec.py" in judge
    found = [p for rel in judge for p in translation_problems((ROOT / rel).read_text(encoding="utf-8"), rel)]
    assert not found, "text a learner reads that is not in the judge's catalogue:\n" + "\n".join(found)


# ---------------------------------------------------------------------------- the rules can fail

@pytest.mark.parametrize("line", [
    "# see issue 15 for the rule", "    # (issue #7)", "x = 1  # fixed in #12", "Issues 16 and 24's attacks",
    "# what the issue found", "# The issue's budget", "\"\"\"The first edition's grid\"\"\"",
    "An earlier version of this adapter copied the pool", "# an older child sent the bare name",
    "still works for one release", "# CI found this on a slow runner", "# Not tried on a GPU yet",
    "an earlier version of this section got that wrong", "def legacy_programs():",
])
def test_history_phrases_are_found(line):
    assert history_problems(line, "x.py"), line


@pytest.mark.parametrize("line", [
    "# the remedy of Dao-AILab/flash-attention#1897", "color = \"#555555\"", "fc=\"#cfe3f7\"",
    "# case names like 'random 3'", "'sgl-project/sglang #38942'", "# an old child of the root",
    "# 3.9 renamed it async_load (the old name now raises)",
    "# no longer holds the old page", "# issued before tile t's MMAs", "# one release of the wheel: 0.6",
    "x = 1  # lint: allow history: quotes a FlashMLA commit message",
])
def test_what_is_not_history_passes(line):
    assert not history_problems(line, "x.py"), line


def test_an_allowance_needs_a_reason():
    found = history_problems("# issue 15  # lint: allow history:", "x.py")
    assert found == ["x.py:1: 'lint: allow history' without a reason"]


BAD_VERDICTS = '''
from grader.lang import said
from grader.spec import Verdict, fail

def check(case, result, out, res, name):
    fail("returned the wrong shape")                        # a literal
    fail(f"{name} returned None", "wrong_type")             # an f-string
    Verdict(False, "off by " + str(3))                      # text + a value
    out.fail("{fn} raised".format(fn=name))                 # str.format
    out.not_started(message="not written yet")              # by keyword
    res.broken("; ".join(["no import", said("x")]))         # a literal among the parts
    res.unavailable(said("ok") if name else "needs torch")  # one branch
    said(f"{name} is wrong")                                # the catalogue cannot read it
    template = "x"
    N_(template)                                            # nor this
    _("not " + template)                                    # nor this
    print(f"{name}: not started", file=sys.stderr)          # words of its own
'''

GOOD_VERDICTS = '''
from grader.lang import N_, said
from grader.spec import Verdict, fail


def check(case, result, out, res, name, message):
    fail(said("{name} returned None", name=name), "wrong_type")
    Verdict(False, message)                                 # built elsewhere
    out.fail(said("{a}; and {b}", a=said("x"), b=said("y")))
    res.broken(said("no file") if name else N_("none"))
    res.missing("")                                         # no text at all
    out.fail(case.memory_error_message or said("too big"))
    Verdict(True)
    fail(f"{name}", "wrong_type")  # lint: allow translation: a name, no words
    print(_(STATUS_WORDS[name]), _("passed"))
    print(f"{case.number:>2} {name:<20} [{message}]", "")
'''


def test_untranslated_verdict_texts_are_found():
    found = translation_problems(BAD_VERDICTS, "grader/x.py")
    lines = sorted({int(p.split(":")[1]) for p in found})
    assert lines == [6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17], found


def test_translated_verdict_texts_pass():
    assert translation_problems(GOOD_VERDICTS, "grader/x.py") == []


# ---------------------------------------------------------------------------- the tests' own web

def private_imports(source: str) -> list[str]:
    """Names starting with _ that a tests/ file takes from a test module (tests/test_*.py): by
    `from tests.test_x import _name`, or as `alias._name` of `from tests import test_x as
    alias` (or `import tests.test_x as alias`). A helper two files share is public, or lives
    in a support module (tests/gpu_check.py, tests/synthetic_class.py, ...)."""
    tree = ast.parse(source)
    aliases, out = set(), []
    for node in ast.walk(tree):
        # `from tests.test_x import`, or relative, inside tests/: `from .test_x import`, `from . import test_x`
        module = ("tests." + (node.module or "")).rstrip(".") if isinstance(node, ast.ImportFrom) and node.level \
            else getattr(node, "module", None) or ""
        if isinstance(node, ast.ImportFrom) and module.split(".")[0] == "tests":
            for a in node.names:
                if module == "tests":
                    if a.name.startswith("test_"):
                        aliases.add(a.asname or a.name)
                elif module.split(".")[-1].startswith("test_") and a.name.startswith("_"):
                    out.append(f"line {node.lineno}: from {module} import {a.name}")
        elif isinstance(node, ast.Import):
            aliases.update(a.asname for a in node.names if a.name.startswith("tests.test_") and a.asname)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            out.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return out


def test_no_test_file_takes_another_s_private_helpers():
    found = [f"{p.relative_to(ROOT)} {hit}" for p in sorted((ROOT / "tests").rglob("*.py"))
             for hit in private_imports(p.read_text(encoding="utf-8"))]
    assert not found, "make the helper public or move it to a support module:\n" + "\n".join(found)


def test_private_imports_are_found():
    assert private_imports("from tests.test_x import _grade, make_case\n") == [
        "line 1: from tests.test_x import _grade"]
    assert private_imports("from tests import test_x as T\nT._batch(1)\nT.public(2)\n") == ["line 2: T._batch"]
    assert private_imports("from tests.test_x import make_case\nfrom grader import _x\n") == []
    assert private_imports("from tests import gpu_check as G\nG._estimate()\n") == []   # a support module
    assert private_imports("from .test_x import _memo, size\n") == ["line 1: from tests.test_x import _memo"]
    assert private_imports("from . import test_x as T\nT._memo\n") == ["line 2: T._memo"]
