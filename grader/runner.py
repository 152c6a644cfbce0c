"""Find problem specs, run a learner's attempt on a problem's cases, and grade the results.

Where an attempt runs is one decision, ``default_isolation`` (or the caller's ``isolation``):
a file in a fresh child process (grader/sandbox.py: a bubblewrap sandbox where bwrap
works, else ``python -I`` with the judge's Python-level guard; a memory cap, a deadline
per case); functions defined in a notebook in a fork of the notebook's process with the
same limits; where neither exists (the browser, Windows) in this process, without
limits, and the result says so.
Every verdict is computed here, from plain data and the spec -- never by graded code.
"""
from __future__ import annotations

import copy
import dataclasses
import importlib
import importlib.util
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

from . import child as _child
from . import jail, sandbox, seeds
from . import plan as plan_mod
from .child import RunStatus
from .lang import said
from .records import OUTPUT_CAP, CaseOutcome, CaseStatus, Isolation, ProblemResult, ProblemStatus, Reason, cut
from .problems import SPEC
from .spec import Case, Problem, same_answer

ROOT = Path(__file__).resolve().parent.parent
PRACTICE = ROOT / "practice"
SOLUTIONS = ROOT / "solutions"
PROBLEMS_DIR = Path(__file__).resolve().parent / "problems"

# facts about this platform; default_isolation alone turns them into a decision
IN_BROWSER = sys.platform == "emscripten"   # Pyodide: no processes, no threads
CAN_FORK = hasattr(os, "fork")              # not on Windows
NO_SUBPROCESS = os.name == "nt"             # no select() on pipes: a child cannot be watched


def browser_practice() -> Path:
    """Where the learner's practice files live in the browser's storage (JupyterLite):
    beside the open notebook, in practice/ beside or above it, or /drive/practice."""
    here = Path.cwd()
    for d in (here, here / "practice", here.parent / "practice", Path("/drive/practice")):
        if any(d.glob("p[0-9][0-9]_*.py")):
            return d
    return here.parent / "practice" if here.name == "notebooks" else here / "practice"


# --------------------------------------------------------------------------- discovery

@dataclasses.dataclass
class SpecError:
    """A spec module that failed to load (a bug in the course, not the learner's)."""
    module: str
    message: str


def discover(errors: list | None = None) -> list[Problem]:
    """All PROBLEMs of PROBLEMS_DIR/pNN_slug/spec.py (grader/problems/: one folder per
    problem), sorted by number. A test may point PROBLEMS_DIR at another folder (a fake
    course): its specs load from their files."""
    found = []
    for path in sorted(PROBLEMS_DIR.glob(f"p[0-9]*/{SPEC}")):
        name = f"grader.problems.{path.parent.name}.{path.stem}"
        try:
            mod = importlib.import_module(name) if path.parent.parent == _OUR_PROBLEMS else _load_file(path)
            prob = getattr(mod, "PROBLEM")
        except Exception as e:  # noqa: BLE001 -- report, keep grading the others
            if errors is not None:
                errors.append(SpecError(name, f"{type(e).__name__}: {e}"))
            continue
        found.append(prob)
    return sorted(found, key=lambda p: p.number)


_OUR_PROBLEMS = PROBLEMS_DIR


def _load_file(path: Path):
    """A spec module outside grader/problems/, loaded from its file (and registered, so
    that inspect finds its source)."""
    name = f"_course_problem_{path.parent.name}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def find(key, problems=None) -> Problem:
    """A problem by number (4, "4", "04", "p04"), slug or file name."""
    problems = problems if problems is not None else discover()
    k = str(key).strip().lower()
    k = k[:-3] if k.endswith(".py") else k
    k = Path(k).name
    for p in problems:
        stem = p.filename[:-3]
        if k in (p.slug, stem, f"p{p.number:02d}", f"p{p.number}") or (k.isdigit() and int(k) == p.number):
            return p
    known = ", ".join(f"{p.number} {p.slug}" for p in problems)
    raise KeyError(said("no problem {key}; known problems: {known}", key=repr(key), known=known))


def missing_requirements(problem: Problem) -> list[str]:
    return [m for m in problem.requires if importlib.util.find_spec(m) is None]


def unavailable_reason(problem: Problem) -> str | None:
    """Why this machine cannot grade ``problem`` (None: it can). The browser never has
    torch and Triton (Pyodide has no wheels of them), whatever the page has loaded."""
    if IN_BROWSER and problem.needs_torch:
        needs = " + ".join(m for m in problem.requires if m != "numpy")
        return said("problem {number} needs {needs}, which do not run in the browser. Solve it "
                    "where the course is installed (bash setup.sh), then: python practice/judge.py "
                    "{number}.", number=problem.number, needs=needs)
    missing = missing_requirements(problem)
    return requirement_text(problem, missing) if missing else None


def requirement_text(problem: Problem, missing: list[str]) -> str:
    names = " and ".join(missing) if len(missing) < 3 else ", ".join(missing[:-1]) + " and " + missing[-1]
    gpu = (said(" It runs on a CUDA GPU, or on the CPU in Triton's interpreter (the judge sets "
                "TRITON_INTERPRET=1 there).") if problem.needs_torch else "")
    values = dict(number=problem.number, names=names, pip=" ".join(missing), gpu=gpu)
    if len(missing) == 1:
        return said("problem {number} needs {names}, which is not installed here: run `bash setup.sh` "
                    "(it installs them) or `pip install {pip}`.{gpu}", **values)
    return said("problem {number} needs {names}, which are not installed here: run `bash setup.sh` "
                "(it installs them) or `pip install {pip}`.{gpu}", **values)


# --------------------------------------------------------------------------- the course's code

def course_folders() -> list[str]:
    """The folders holding the course's reference code and the judge: graded code may
    neither import from them nor read them (beyond what a spec provides)."""
    folders = {str(ROOT / name) for name in _child.COURSE_PACKAGES}
    for name in ("mlacourse", "grader"):  # an installed (non-editable) copy, e.g. in the browser
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for loc in (spec.submodule_search_locations or []) if spec else []:
            folders.add(str(Path(loc).resolve()))
    return sorted(folders)


def data_view(x):
    """The plain data of what a spec lets graded code import: dataclass instances become
    records of their fields (no methods), containers are copied, numbers stay numbers."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        methods = [n for n in dir(type(x)) if not n.startswith("_") and callable(getattr(type(x), n))]
        return {"__record__": type(x).__name__, "methods": methods,
                "fields": {f.name: data_view(getattr(x, f.name)) for f in dataclasses.fields(x)}}
    if isinstance(x, dict):
        return {k: data_view(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [data_view(v) for v in x]
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    raise TypeError(f"a spec may provide plain data only, not {type(x).__name__}")


def provided_data(problem: Problem) -> dict:
    """{module: {name: plain data}} for the spec's may_import."""
    out = {}
    for module, names in problem.may_import.items():
        mod = importlib.import_module(module)
        out[module] = {n: data_view(getattr(mod, n)) for n in names}
    return out


def may_import_text(problem: Problem) -> str:
    parts = [f"{m}.{n}" for m, names in problem.may_import.items() for n in names]
    return ", ".join(parts) if parts else said("nothing")


# --------------------------------------------------------------------------- running

def run_in_process(path: str, cases: list, module=None) -> dict:
    """Same records as the sandbox, computed in this process (no limits). A profiler
    notices calls into the course's code, since it shares this process."""
    jobs = [(i, c.function, c.args) for i, c in enumerate(cases)]
    allowed = [path] if not path.startswith("<") else []
    records = {}
    for i, rec in _child.run_in_process(path, jobs, module=module,
                                        reference_folders=course_folders(), allowed_files=allowed):
        if i is None:
            records["import_error"] = rec
            break
        records[i] = json.loads(json.dumps(rec))  # the same plain-data round trip as from a child
    return records


def run_kernel_in_process(problem: Problem, path: str, cases: list, module=None) -> dict:
    """Problem.kernel where there is no other process (Windows): the judge's launcher with
    the kernel of the module (loaded again from ``path`` when not given). A courtesy, like
    everything in this process: nothing here is a boundary."""
    try:
        module = module if module is not None else _child.load_module(path, "learner_kernel")
        kernel = getattr(module, problem.kernel.name)
    except BaseException as e:  # noqa: BLE001 -- the learner's module: its failure is theirs
        return {i: {"status": RunStatus.ERROR, "type": type(e).__name__, "message": str(e)[:2000]}
                for i in range(len(cases))}
    launch = problem.kernel.launcher
    return {i: json.loads(json.dumps(_child.run_case(lambda **a: launch(kernel, **a), copy.deepcopy(c.args),
                                                     path, check_inputs=False)))
            for i, c in enumerate(cases)}


# --------------------------------------------------------------------------- grading

def _memory_cap(problem: Problem, case: Case) -> int:
    return case.memory_mb or problem.memory_mb


def _messages(problem: Problem, case: Case, rec: dict) -> tuple[str, Reason]:
    """(message, Reason) for a record that carries no result."""
    fn = case.function
    st = rec.get("status")
    cap = _memory_cap(problem, case)
    if st == RunStatus.ERROR:
        return said("{fn} raised an exception:\n{message}", fn=fn, message=rec.get("message", "")), Reason.EXCEPTION
    if st == RunStatus.MEMORY_ERROR:
        return (case.memory_error_message or
                said("{fn} ran out of memory: the judge allows about {cap} MB beyond what Python itself "
                     "uses, far more than this case's answer needs -- is your code building a much "
                     "larger array than necessary?\n{message}", fn=fn, cap=cap,
                     message=rec.get("message", ""))), Reason.MEMORY
    if st == RunStatus.OUT_OF_MEMORY and rec.get("cap_mb"):
        return said("{fn} went over the judge's memory cap: everything the attempt holds at once "
                    "(its arrays, memory it maps, files it writes in the sandbox, any process it "
                    "starts) may total about {cap} MB, and the kernel stopped it there. {why}",
                    fn=fn, cap=rec["cap_mb"], why=case.memory_error_message or _TOO_LARGE_AN_ARRAY()), Reason.MEMORY
    if st == RunStatus.OUT_OF_MEMORY:
        return said("{fn} ran out of memory: native code (numpy's BLAS or another library) could not "
                    "allocate more under the judge's cap of about {cap} MB beyond what Python itself "
                    "uses, and ended the process (exit code {code}). {why}", fn=fn, cap=cap,
                    code=rec.get("code"), why=case.memory_error_message or _TOO_LARGE_AN_ARRAY()), Reason.MEMORY
    if st == RunStatus.SYSTEM_EXIT:
        return said("{fn} tried to stop the program ({how}). Return the answer instead of exiting.",
                    fn=fn, how=rec.get("message")), Reason.EXIT
    if st == RunStatus.MISSING_FUNCTION:
        return said("your file defines no function named {name}; keep the names and parameters "
                    "from the stub.", name=repr(rec.get("function"))), Reason.MISSING_FUNCTION
    if st == RunStatus.USES_REFERENCE:
        return uses_reference_text(problem, rec.get("uses", [])), Reason.USES_REFERENCE
    if st == RunStatus.TIMEOUT and rec.get("budget_s") is not None:
        return said("{fn} was stopped: the attempt used its whole time budget of {seconds} s (every case "
                    "together; one case may take up to its own limit, the others a tenth of theirs on "
                    "average). Is some code waiting or doing far more work than the answer needs?",
                    fn=fn, seconds=f"{rec['budget_s']:.0f}"), Reason.TIME_BUDGET
    if st == RunStatus.TIMEOUT:
        why = case.timeout_message or said("(an infinite loop, or far too much work for these sizes?)")
        return said("{fn} was still running after {seconds} s and was stopped {why}", fn=fn,
                    seconds=f"{rec.get('timeout_s', problem.timeout_s):g}", why=why), Reason.TIMEOUT
    if st == RunStatus.CRASHED:
        return said("the Python process running {fn} crashed ({signal}); this usually means code "
                    "that corrupts memory or kills the process.", fn=fn, signal=rec.get("signal")), Reason.CRASH
    if st == RunStatus.EXITED:
        return said("the process running {fn} ended (exit code {code}) without a Python exception, "
                    "before returning: native code stopped it.", fn=fn, code=rec.get("code")), Reason.EXIT
    if st == RunStatus.TOO_LARGE:
        return said("{fn} returned a result too large to send back (over {mb} MB).", fn=fn,
                    mb=sandbox.LINE_CAP // 2**20), Reason.TOO_LARGE
    return said("unexpected result from the test process: {status}", status=repr(st)), Reason.JUDGE_ERROR


def _TOO_LARGE_AN_ARRAY():
    return said("Is your code building a much larger array than the answer needs?")


def mutations(problem: Problem, mutated) -> list[str]:
    """The changes to the arguments the contract forbids, in words. Each text the child
    sends starts with the argument's name ("waiting has 2 items, ...", "x[1, 2] was ...")."""
    if not mutated:
        return []
    out = []
    for m in mutated if isinstance(mutated, list) else [mutated]:
        text = str(m)[:300]  # the child's words: shown, never trusted further
        name = re.match(r"[A-Za-z_]\w*", text)
        if name and name.group(0) in problem.may_change_inputs:
            continue
        out.append(text)
    return out


def kernel_failure(problem: Problem, case: Case, kernel_rec: dict | None) -> str | None:
    """Why the kernel, launched by the judge itself (Problem.kernel), does not give the
    answer of this case; None when it does."""
    if kernel_rec is None:
        return None if problem.kernel is None else said("the judge could not launch it")
    if kernel_rec.get("status") == RunStatus.OK:
        try:
            verdict = problem.check(case, _child.decode(kernel_rec.get("result")))
        except Exception as e:  # noqa: BLE001 -- the launcher's answer has the shape it makes
            return said("its answer could not be read ({error})", error=f"{type(e).__name__}: {e}")
        return None if verdict.passed else verdict.message
    if kernel_rec.get("type") == "NotAKernel":   # grader/child/kernel.py refused the file's kernel
        why = kernel_rec.get("message", "").rpartition("NotAKernel: ")[2]
        return said("the judge cannot launch it: {why}", why=why)
    if kernel_rec.get("event") in ("import_error", "import_failed"):
        return _import_message(problem, kernel_rec)[0]
    return _messages(problem, case, kernel_rec)[0]


def kernel_text(problem: Problem, fn: str, why: str) -> str:
    """The verdict of a right answer that is not the kernel's."""
    return said("{fn} returned the right answer, but {kernel}, launched by the judge itself the way the "
                "given launcher launches it (its outputs filled with NaN beforehand), does not: {why}\n"
                "The point of problem {number} is the kernel: the answer must come from it.",
                fn=fn, kernel=problem.kernel.name, why=why, number=problem.number)


def uses_reference_text(problem: Problem, uses: list) -> str:
    """What the guard saw: the course's code, and/or another process's /proc entry."""
    procs = [u for u in uses if _is_proc_read(u)]
    course_dirs = course_folders()
    judges = [u for u in uses if u.startswith("reading ") and not _is_proc_read(u)
              and not any(u[8:] == d or u[8:].startswith(d + os.sep) for d in course_dirs)]
    course = [u for u in uses if u not in procs and u not in judges]
    parts = []
    if procs:
        parts.append(said("your code read another process's /proc entry ({what}): graded code may look "
                          "at its own process only (the judge's processes hold its settings, not anything "
                          "an answer needs)", what="; ".join(procs[:3])))
    if judges:
        parts.append(said("your code read files the judge keeps from graded code ({what}: the grades, the "
                          "other submissions)", what="; ".join(judges[:3])))
    if course or not (procs or judges):
        what = "; ".join(course[:3]) or said("the course's code")
        parts.append(said("your code uses the course's reference implementation ({what}); write it yourself. "
                          "From the course, problem {number} may import only: {allowed}.", what=what,
                          number=problem.number, allowed=may_import_text(problem)))
    if len(parts) == 1:
        return parts[0] if parts[0].endswith(".") else said("{part}.", part=parts[0])
    if len(parts) == 2:
        text = said("{a}; and {b}", a=parts[0], b=parts[1])
    else:
        text = said("{a}; and {b}; and {c}", a=parts[0], b=parts[1], c=parts[2])
    return text if text.endswith(".") else said("{part}.", part=text)


def _is_proc_read(use: str) -> bool:
    parts = use.split("/")
    return use.startswith("reading /proc/") and len(parts) > 2 and parts[2].isdigit()


def grade_record(problem: Problem, case: Case, rec: dict, kernel_rec: dict | None = None) -> CaseOutcome:
    """One case's verdict from its record (and, for a problem whose answer must be a
    kernel's, the record of the judge's own launch of that kernel on the same case)."""
    out = CaseOutcome(case, output=rec.get("output", ""))
    st = rec.get("status")
    fn = case.function
    if st == RunStatus.OK:
        result = _child.decode(rec.get("result"))
        out.result = result
        changed = mutations(problem, rec.get("mutated"))
        if changed:
            return out.fail(said("{fn} changed its input in place: {changes}. The caller still needs "
                                 "its arguments as they were: work on a copy (x = x * 2, not x *= 2; "
                                 "sorted(xs) or list(xs), not xs.sort() or xs.pop()).",
                                 fn=fn, changes="; ".join(changed)), Reason.MUTATED_INPUT)
        try:
            verdict = problem.check(case, result)
        except Exception as e:  # noqa: BLE001 -- a result the checker could not read
            return out.fail(said("the judge could not read the result of {fn} ({error}); return the "
                                 "type the statement asks for.", fn=fn, error=f"{type(e).__name__}: {e}"),
                            Reason.WRONG_TYPE)
        if not verdict.passed:
            return out.fail(verdict.message, verdict.reason)
        why = kernel_failure(problem, case, kernel_rec) if problem.kernel is not None else None
        return out if why is None else out.fail(kernel_text(problem, fn, why), Reason.NO_KERNEL)
    if st == RunStatus.NOT_IMPLEMENTED:
        return out.not_started(said("{fn} is not written yet (it raises NotImplementedError).", fn=fn))
    if st == RunStatus.ERROR and rec.get("type") == "ValueError" and _READ_ONLY in rec.get("message", ""):
        return out.fail(said("{fn} tried to change one of its input arrays in place:\n{message}\nThe judge "
                             "hands the arrays over read-only, as a caller who still needs them would: "
                             "work on a copy (x = x * 2, not x *= 2; np.sort(x), not x.sort()).",
                             fn=fn, message=rec.get("message", "")), Reason.MUTATED_INPUT)
    if st == RunStatus.NOT_RUN:
        return out.not_run()
    return out.fail(*_messages(problem, case, rec))


_READ_ONLY = "is read-only"   # numpy: "output array is read-only", "assignment destination is read-only"


def explain_mistakes(problem: Problem, outcomes: list) -> None:
    """Name a known mistake only where it reproduces the attempt on every case of its
    function: wrong exactly where the attempt is wrong, with the attempt's answer (or
    raising where the attempt raised), and harmless (its answer passes) where the attempt
    passes. A mistake that merely coincides with the attempt on one case, or explains only
    some failures, says nothing; nor does one where every failure is an exception."""
    by_fn: dict = {}
    for o in outcomes:
        by_fn.setdefault(o.case.function, []).append(o)
    for fn, outs in by_fn.items():
        # a case failed for changing its input still has an answer to compare (popping
        # `waiting` while looping over it also gives a wrong plan); one computed outside the
        # kernel says nothing about the kernel
        graded = [o for o in outs if o.status is CaseStatus.PASS or
                  (o.status is CaseStatus.FAIL and o.reason is not Reason.NO_KERNEL
                   and (o.result is not None or o.reason is Reason.EXCEPTION))]
        failing = [o for o in graded if o.status is CaseStatus.FAIL]
        if not any(o.result is not None for o in failing) or \
                len(failing) != sum(o.status is not CaseStatus.PASS for o in outs):
            continue  # nothing to compare, or failures of other kinds (timeouts, memory, ...)
        for m in problem.mistakes_for(fn):
            if _reproduces(problem, m, graded):
                for o in failing:
                    o.mistake = m.message
                break


_RAISED = object()       # the mistake raised an exception on this case
_DOES_NOT_APPLY = object()  # a model (not a file) returned None: the slip changes nothing here
_UNKNOWN = object()      # no answer recorded for this case (the student edition: grader/recorded.py)


def _reproduces(problem: Problem, mistake, graded: list) -> bool:
    # the failing cases first: most mistakes differ from the attempt on the first one
    compared_a_failure = False
    for o in sorted(graded, key=lambda o: o.status is CaseStatus.PASS):
        wrong = _wrong_answer(mistake, o.case)
        if wrong is _UNKNOWN:
            continue   # recorded answers cover the public cases only: this case says nothing
        if wrong is _DOES_NOT_APPLY:
            if o.status is CaseStatus.PASS:
                continue
            return False
        if o.status is CaseStatus.PASS:
            if wrong is _RAISED or not _passes(problem, o.case, wrong):
                return False  # the mistake would have failed where the attempt passed
            continue
        compared_a_failure = True
        if o.result is None:  # the attempt raised here: so must the mistake
            if wrong is not _RAISED:
                return False
            continue
        if wrong is _RAISED:
            return False
        try:
            if not (mistake.match or same_answer)(o.result, wrong):
                return False
        except Exception:  # noqa: BLE001 -- a result of another type: not this slip
            return False
    return compared_a_failure


def _wrong_answer(mistake, case: Case):
    """The mistake's answer to a case as plain data (the round trip an attempt's answer
    takes), _RAISED, or _DOES_NOT_APPLY (or _UNKNOWN: no answer recorded for the case). A
    mistake's file overflows or divides by zero as the learner's code would: numpy's
    warnings about it are not the learner's business."""
    answer_for = getattr(mistake.fn, "answer_for", None)
    if answer_for is not None:   # recorded answers, not a file (grader/recorded.py)
        found = answer_for(case)
        return _UNKNOWN if found is None else (_RAISED if found.raised else found.value)
    try:
        with np.errstate(all="ignore"):
            wrong = mistake.fn(**copy.deepcopy(case.args))
        if wrong is None and not mistake.runs_file:
            return _DOES_NOT_APPLY
        return _child.decode(json.loads(json.dumps(_child.encode(wrong))))
    except Exception:  # noqa: BLE001 -- raising is an answer too (the attempt may have raised)
        return _RAISED


def _passes(problem: Problem, case: Case, answer) -> bool:
    try:
        return problem.check(case, answer).passed
    except Exception:  # noqa: BLE001
        return False


def default_isolation(module=None) -> Isolation:
    """Where an attempt runs when the caller does not say: a notebook's functions in a fork
    of this process (in this process where there is no fork); a file in the OS sandbox
    where bubblewrap works, else behind the Python guard; in this process where there are
    no subprocesses (the browser, Windows)."""
    if IN_BROWSER:
        return Isolation.NONE
    if module is not None:
        return Isolation.FORK if CAN_FORK else Isolation.NONE
    if NO_SUBPROCESS:
        return Isolation.NONE
    return Isolation.JAIL if jail.available() else Isolation.PROCESS


def grade(problem: Problem, path=None, seed: int | None = None, module=None, protect=(),
          isolation=None) -> ProblemResult:
    """Grade one problem. ``path``: the learner's file (default practice/pNN_slug.py);
    ``module``: an object holding the functions instead (a notebook). ``protect``: more
    folders graded code may not read (a class's other submissions, the grades).
    ``isolation``: where the attempt runs -- an Isolation, a sandbox.Placement or its text
    ("jail", "process", "user:UID:GID" for a file; "fork" for a module; "none" for either:
    this process, no limits); by default ``default_isolation(module)``, and then a file
    the jail could not start is graded behind the Python guard instead. One asked for is
    never swapped: an attempt it could not start is "unavailable", Reason.INFRASTRUCTURE.
    The result records where it ran (``ProblemResult.isolation``)."""
    t0 = time.monotonic()
    given = path is not None
    path = str(path) if given else str(PRACTICE / problem.filename)
    seed = seed if seed is not None else seeds.draw()
    res = ProblemResult(problem, path, seed=seed, given_path=given)
    asked = None if isolation is None else sandbox.Placement.parse(isolation)
    where = asked or sandbox.Placement(default_isolation(module))
    if (where.kind is Isolation.FORK) != (module is not None) and where.kind is not Isolation.NONE:
        raise ValueError(f"isolation {where}: a file runs in jail, process, user or none; a notebook's "
                         "functions (module=...) in fork or none")
    res.isolation = where.kind
    why = unavailable_reason(problem)
    if why:
        return res.unavailable(why)
    if module is None and not Path(path).is_file():
        return res.missing(said("there is no file {path}.", path=path))
    try:
        cases = problem.make_cases(seeds.for_problem(seed, problem.number))
    except Exception as e:  # noqa: BLE001 -- a bug in the course, not in the attempt
        return res.broken(said("the judge could not build the cases for problem {number} ({error}); "
                               "please report this.", number=problem.number, error=f"{type(e).__name__}: {e}"),
                          Reason.JUDGE_ERROR)
    cases = [c for c in cases if not c.hidden] + [c for c in cases if c.hidden]
    if where.kind is Isolation.NONE:
        records = run_in_process(path, cases, module=module)
        kernel_records = run_kernel_in_process(problem, path, cases, module) if problem.kernel else {}
    else:
        protected = sorted(set(course_folders()) | {str(Path(f).resolve()) for f in protect})
        try:
            try:
                records, kernel_records, res.output = run_plan(problem, path, cases, protected, where, module)
            except sandbox.InfrastructureError:
                if asked is not None or where.kind is not Isolation.JAIL:
                    raise
                # the learner's own judge, where bwrap is installed but failed on this file:
                # grade it behind the Python guard rather than not at all
                where = sandbox.Placement(Isolation.PROCESS)
                res.isolation = where.kind
                records, kernel_records, res.output = run_plan(problem, path, cases, protected, where, module)
        except sandbox.InfrastructureError as e:
            res.unavailable(said("the judge could not run this attempt: {error}. This is not the "
                                 "attempt's fault; grade it again (if it keeps happening, report it).",
                                 error=e.args[0] if e.args else str(e)), Reason.INFRASTRUCTURE)
            res.elapsed = time.monotonic() - t0
            return res
    if "import_error" in records:
        res.broken(*_import_message(problem, records["import_error"]))
    else:
        for i, c in enumerate(cases):
            res.add(grade_record(problem, c, records.get(i, {"status": RunStatus.NOT_RUN}), kernel_records.get(i)))
        explain_mistakes(problem, res.outcomes)
        res.finish()
        if any(o.reason is Reason.TIME_BUDGET for o in res.outcomes):
            res.reason = Reason.TIME_BUDGET   # the attempt was cut off: its other failures are not the story
    res.elapsed = time.monotonic() - t0
    return res


def run_plan(problem: Problem, path: str, cases: list, protected: list, where,
             module=None) -> tuple[dict, dict, str]:
    """Run the attempt as its plan says (grader/plan.py): the shared process, then each
    case with a memory budget of its own in a process of its own, then (Problem.kernel)
    the judge's own launch of the file's kernel, all within the attempt's whole time
    budget. Returns ({case index: record}, {case index: the kernel launch's record}, output)."""
    plan = plan_mod.plan_for(problem, cases)
    stop_at = time.monotonic() + plan.total_s
    provided = provided_data(problem)
    records: dict = {}
    kernel_records: dict = {}
    outputs = []
    for group in plan.groups:
        if "import_error" in records:
            break    # the file does not import: nothing more to run
        if group.kernel and not any(records.get(i, {}).get("status") == RunStatus.OK for i in group.cases):
            break    # no answer to hold the kernel to (not started, or every case failed)
        if stop_at - time.monotonic() < plan.startup_s:
            # the budget is spent (by this attempt's earlier cases): the rest does not run
            first, *rest = group.cases
            spent = {first: {"status": RunStatus.TIMEOUT, "budget_s": plan.total_s},
                     **{i: {"status": RunStatus.NOT_RUN} for i in rest}}
            (kernel_records if group.kernel else records).update(spent)
            continue
        got, output = sandbox.run(problem, path, cases, group, plan, protected, provided, where,
                                  module=module, stop_at=stop_at)
        if group.kernel:
            failed_import = got.pop("import_error", None)
            kernel_records.update({i: failed_import for i in group.cases} if failed_import else got)
        else:
            records.update(got)
        if output:
            outputs.append(output)
    return records, kernel_records, cut("\n".join(outputs), OUTPUT_CAP)


def _import_message(problem: Problem, rec: dict) -> tuple[str, Reason]:
    if rec.get("status") == RunStatus.USES_REFERENCE:
        return uses_reference_text(problem, rec.get("uses", [])), Reason.USES_REFERENCE
    if rec.get("event") == "import_failed":  # the process died or hung while importing
        msg, reason = _messages(problem, Case("import", "(importing your file)", {}), rec)
        return said("your file could not be loaded: {why}", why=msg), reason
    reason = {"SystemExit": Reason.EXIT, "MemoryError": Reason.MEMORY}.get(rec.get("type"), Reason.IMPORT_ERROR)
    return said("your file could not be imported:\n{message}", message=rec.get("message", "")), reason


__all__ = ["discover", "find", "grade", "default_isolation", "missing_requirements", "course_folders",
           "Isolation", "ProblemResult", "ProblemStatus", "CaseOutcome", "CaseStatus", "Reason", "RunStatus"]
