"""Shared test setup: what a bare `python -m pytest` runs, the stubs, and the interpreter.

**The smoke set.** A bare `python -m pytest` runs the tests marked `smoke`: under a minute
of CPU that shows the course works here (the math, every model answer and stub through the
judge, a chapter executed, the browser judge and the site's pages, one kernel in Triton's
interpreter). Everything else is the full set, run by CI (`CI=true`, set by .ci/run) and by
`python -m pytest --full` (`--run-slow` is the same). A new test is in the full set unless
it is marked `smoke`. Naming files or tests
(`python -m pytest tests/test_kernels.py`, `-k hints`) runs what is named, except the
tests marked `slow` (minutes each: the real browser, the corpus, sm_90 compiles, fresh
installs), which run only with --full or in CI. GPU tests skip without a CUDA GPU.

**The learner's practice/ is never read.** The tests that need the stubs get them from
tests/pristine.py (the file if it still is a stub, else the last commit); grader.runner's
PRACTICE points at that copy for the whole run, so the judge's defaults, hints and
`--solutions` see the stubs while practice/ holds the learner's answers.

**A light install** (`bash setup.sh --light`: no torch, no triton) collects the test files
that import them as skipped, with the reason.

Without a CUDA GPU the Triton kernels run in Triton's CPU interpreter. The variable must be
set before triton is first imported, which is why it lives here."""
from __future__ import annotations

import ast
import functools
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent

# --------------------------------------------------------------------------- the smoke set
# A bare `python -m pytest` runs the tests marked `smoke` (a whole file: pytestmark; one
# parameter: pytest.param(..., marks=pytest.mark.smoke)). Keep it under a minute of CPU
# (user+sys, children included) on a 2-core machine: README's "The tests" quotes the time.
# A bare run does not import the other files: the marker is found in their text.
SMOKE_MARK = "pytest.mark.smoke"
FULL_COMMAND = "python -m pytest --full"


@functools.lru_cache(maxsize=1)
def _smoke_files() -> frozenset[str]:
    return frozenset(p.relative_to(ROOT).as_posix() for p in TESTS.glob("test_*.py")
                     if SMOKE_MARK in p.read_text(encoding="utf-8"))


def _in_smoke(item) -> bool:
    return item.get_closest_marker("smoke") is not None


# --------------------------------------------------------------------------- options and modes

def pytest_addoption(parser):
    parser.addoption("--full", action="store_true",
                     help="run every test, the slow ones included (what CI runs)")
    parser.addoption("--run-slow", action="store_true", help="the same as --full")


def run_full(config) -> bool:
    return (config.getoption("--full") or config.getoption("--run-slow")
            or os.environ.get("CI", "").lower() in ("1", "true", "yes"))



def _names_tests(config) -> bool:
    """True when the command line names files, tests, -k or -m: run what is named."""
    named = config.args_source is pytest.Config.ArgsSource.ARGS and \
        [Path(a.split("::")[0]).resolve() for a in config.args] != [TESTS]
    return named or bool(config.getoption("keyword")) or bool(config.getoption("markexpr"))


def pytest_configure(config):
    if getattr(config.option, "numprocesses", None) and config.option.dist == "load":
        config._mla_units = True                  # scheduled by unit: pytest_xdist_make_scheduler
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        # before the workers start (they inherit it): one compute thread each, as the
        # chapters' kernels get (classroom/execute.py); a BLAS or torch pool per worker puts
        # more busy threads than cores on the machine, and they spin waiting for each other
        from classroom.execute import ONE_BLAS_THREAD
        for name, value in ONE_BLAS_THREAD.items():
            os.environ.setdefault(name, value)
    named = _names_tests(config)
    config._mla = {"mode": "full" if run_full(config) else ("named" if named else "smoke"),
                   "named": named, "ignored": [], "deselected": 0}
    _use_pristine_practice(config)


def pytest_ignore_collect(collection_path, config):
    """A bare run does not even import the test files outside the smoke set."""
    state = getattr(config, "_mla", None)
    if not state or state["mode"] != "smoke" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    try:
        rel = collection_path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None  # not this course's test
    if rel in _smoke_files():
        return None
    state["ignored"].append(rel)
    return True


# --------------------------------------------------------------------------- light installs

OPTIONAL = {  # a top-level import of the key needs these installed
    "torch": ("torch",), "triton": ("triton",), "kernels": ("torch", "triton"),
    "hypothesis": ("hypothesis",),
}


def _module_needs(path: Path, seen=None) -> set[str]:
    """The optional packages a test file imports at its top level (following tests.* imports)."""
    seen = seen if seen is not None else set()
    if path in seen or not path.is_file():
        return set()
    seen.add(path)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return set()
    needs: set[str] = set()
    for node in tree.body:
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and getattr(node.value.func, "attr", "") == "importorskip":
            continue  # the file skips itself
        for name in names:
            top = name.split(".")[0]
            needs |= set(OPTIONAL.get(top, ()))
            if top == "tests" and "." in name:
                needs |= _module_needs(TESTS / (name.split(".")[1] + ".py"), seen)
    return needs


class _NeedsMissingPackages(pytest.Module):
    """A test file whose imports are not installed here: collected as one skip, with why."""
    reason = ""

    def collect(self):
        # raised "from" the test file, so that the skip is reported at its name, not here
        exec(compile("raise skip", str(self.path), "exec"), {"skip": pytest.skip.Exception(self.reason)})


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    needs = _module_needs(Path(module_path))
    missing = sorted(p for p in needs if importlib.util.find_spec(p) is None)
    if not missing:
        return None
    mod = _NeedsMissingPackages.from_parent(parent, path=Path(module_path))
    mod.reason = (f"needs {' + '.join(missing)}, not installed here (a light install?): "
                  "`bash setup.sh` installs everything")
    return mod


# --------------------------------------------------------------------------- the stubs

def _use_pristine_practice(config) -> None:
    """Point the judge's practice folder at the stubs (tests/pristine.py) for this run."""
    from grader import runner
    from tests import pristine

    folder = Path(tempfile.mkdtemp(prefix="mla-stubs-")) / "practice"
    lost = pristine.write_stubs(folder)
    config._mla.update(stubs=folder, lost_stubs=lost, real_practice=runner.PRACTICE)
    runner.PRACTICE = folder


def pytest_unconfigure(config):
    state = getattr(config, "_mla", None)
    if state and "stubs" in state:
        from grader import runner
        runner.PRACTICE = state["real_practice"]
        shutil.rmtree(state["stubs"].parent, ignore_errors=True)


@pytest.fixture
def stubs(request) -> Path:
    """The folder of pristine stubs (grader.runner.PRACTICE during the run). Skips when a
    stub cannot be recovered (a solved file and no git history: CI runs the test)."""
    state = request.config._mla
    if state["lost_stubs"]:
        pytest.skip(f"practice/ holds your work in {', '.join(state['lost_stubs'])} and there is no "
                    "git history to read the stubs from; CI (a fresh clone) runs this test")
    return state["stubs"]


@pytest.fixture(scope="session")
def pristine_course(tmp_path_factory, request) -> Path:
    """One copy of the course's files per run, practice/ as stubs (do not modify it)."""
    from tests import pristine

    if request.config._mla["lost_stubs"]:
        pytest.skip(f"practice/ holds your work in {', '.join(request.config._mla['lost_stubs'])} and "
                    "there is no git history to read the stubs from; CI (a fresh clone) runs this test")
    dest = tmp_path_factory.mktemp("pristine") / "course"
    pristine.copy_course(dest)
    return dest


@pytest.fixture
def course_copy(tmp_path, request) -> Path:
    """A copy of the course's files in tmp_path/course, practice/ as stubs."""
    from tests import pristine

    if request.config._mla["lost_stubs"]:
        request.getfixturevalue("stubs")  # skips, saying why
    dest = tmp_path / "course"
    pristine.copy_course(dest)
    return dest


# --------------------------------------------------------------------------- selection

def _has_cuda() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


HAS_CUDA = _has_cuda()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")

# The judge speaks the locale's language (grader/lang.py: LANGUAGE, LC_ALL, LC_MESSAGES,
# LANG): the tests read its English whatever the machine's locale (tests/test_judge_i18n.py
# chooses its languages itself).
os.environ["LANGUAGE"] = "en"


# --------------------------------------------------------------------------- two processes
# CI runs the full set in two processes (pytest-xdist: `python -m pytest -n 2`, .ci/run): most
# of a serial run is one core waiting on the other (a browser, a sandboxed attempt, a timeout).
# A test file runs whole in one worker (its module fixtures run once: the hostile class, the
# site's build), and the files that share a session's work run in the same one: the executed
# chapters (tests/test_notebooks.py executed_chapters, the site's book included) and the
# corpus's English grading (tests/test_judge_corpus.py). The longest units go first, so the
# other worker takes the short files meanwhile; the seconds are those of a serial CI run.
# `-n N` gets this scheduling (xdist's default --dist load is replaced by it); another --dist
# mode is left as asked.
SHARED_WORK = {
    "chapters": ("test_notebooks", "test_i18n", "test_browser_ready", "test_chapter8", "test_chapter8_sparse",
                 "test_chapter9", "test_chapter_figures", "test_chapter_setup", "test_classroom_slides",
                 "test_engine_chapter", "test_kernel_chapter", "test_site", "test_site_browser"),  # ~700 s
    "corpus": ("test_judge_corpus", "test_judge_i18n"),                                           # ~235 s
}
LONGEST_FIRST = ("chapters", "tests/test_judge_sweeps.py", "corpus")                              # sweeps ~240 s
_GROUP_OF = {f"tests/{name}.py": group for group, names in SHARED_WORK.items() for name in names}


def unit_of(nodeid: str) -> str:
    """The unit xdist hands to one worker: the test's file, or the group of files it shares work with."""
    path = nodeid.split("::")[0]
    return _GROUP_OF.get(path, path)


def _longest_first(items) -> None:
    """In an xdist worker: the longest units first (a stable sort, so the chapters' own order
    is kept: executed before the site's book reuses them). Every worker collects the same."""
    rank = {unit: i for i, unit in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda it: rank.get(unit_of(it.nodeid), len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's scope scheduling with this file's units as the scopes, handed out in the
    workers' collection order (_longest_first); None (xdist's own) for another --dist."""
    if not getattr(config, "_mla_units", False):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False   # keep the collection's order, not the test count's
    return ByUnit(config, log)


def pytest_collection_modifyitems(config, items):
    state = config._mla
    if hasattr(config, "workerinput"):
        _longest_first(items)
    if state["mode"] == "smoke":
        dropped = [it for it in items if not _in_smoke(it)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [it for it in items if _in_smoke(it)]
        state["deselected"] = len(dropped)
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (none found)")
    skip_slow = pytest.mark.skip(reason=f"slow: CI runs it; here `{FULL_COMMAND}`")
    for item in items:
        if "gpu" in item.keywords and not HAS_CUDA:
            item.add_marker(skip_gpu)
        elif "slow" in item.keywords and state["mode"] != "full":
            item.add_marker(skip_slow)


# --------------------------------------------------------------------------- the closing lines

def pytest_terminal_summary(terminalreporter, config):
    """Chapter execution times (informational), and after a bare run what it left out."""
    import sys
    module = sys.modules.get("tests.test_notebooks")  # only when the notebook tests ran
    EXECUTION_TIMES = getattr(module, "EXECUTION_TIMES", None)
    if EXECUTION_TIMES:
        terminalreporter.section("chapter execution times")
        for name, seconds in sorted(EXECUTION_TIMES.items()):
            terminalreporter.write_line(f"{name:45s} {seconds:6.1f} s")
        terminalreporter.write_line(f"{'total':45s} {sum(EXECUTION_TIMES.values()):6.1f} s")
    state = getattr(config, "_mla", {})
    if state.get("mode") == "smoke":
        ignored = sorted(state["ignored"])
        terminalreporter.section("the smoke set")
        terminalreporter.write_line(
            "This was the smoke set (the default: a minute that shows the course works here). "
            f"Not run: {len(ignored)} more test files and {state['deselected']} more tests of the "
            "files above (the full set: every chapter and figure, the judge's robustness and "
            "corpus, every kernel in Triton's interpreter, the classroom tools, the real browser).")
        terminalreporter.write_line(f"Everything, as CI runs it: {FULL_COMMAND} (about half an hour on 2 cores; "
                                    "with -n 2, two processes, about 20 minutes)")
    if state.get("lost_stubs"):
        terminalreporter.write_line(
            f"note: {', '.join(state['lost_stubs'])} hold your work and there is no git history, "
            "so the tests that need those stubs were skipped (CI runs them).")
