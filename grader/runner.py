"""Find problem specs, run a learner's file on a problem's cases, and grade the results.

Each attempt runs in its own child process (grader/child.py under ``python -I -u``, cwd
a fresh temp dir, RLIMIT_DATA memory cap, per-case wall-clock timeout enforced from
here). Only plain data comes back; every verdict is computed in this process from that
data and the spec. Where subprocesses do not exist (the browser, sys.platform ==
"emscripten") or for functions defined in a notebook, the same cases run in-process,
without time or memory limits, and the result says so.
"""
from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import os
import pickle
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import child as _child
from .spec import Case, Problem, fail, same_answer

ROOT = Path(__file__).resolve().parent.parent
PRACTICE = ROOT / "practice"
SOLUTIONS = ROOT / "solutions"
PROBLEMS_DIR = Path(__file__).resolve().parent / "problems"
CHILD = Path(_child.__file__).resolve()

IN_BROWSER = sys.platform == "emscripten"
# no fork/select on pipes there: attempts run in-process (and the result says so)
NO_SUBPROCESS = IN_BROWSER or os.name == "nt"
OUTPUT_CAP = 8000  # characters of fd-level output kept per run
RECORD_CAP = 256 * 2**20  # bytes: a result larger than this is refused
START_GAP_S = 5.0  # seconds allowed between one case's end and the next one's start
STARTUP_S = {"numpy": 20.0, "torch": 60.0}  # interpreter + imports, before the file runs


# --------------------------------------------------------------------------- discovery

@dataclass
class SpecError:
    """A spec module that failed to load (a bug in the course, not the learner's)."""
    module: str
    message: str


def discover(errors: list | None = None) -> list[Problem]:
    """All PROBLEMs in grader/problems/p*.py, sorted by number."""
    found = []
    for path in sorted(PROBLEMS_DIR.glob("p[0-9]*.py")):
        name = f"grader.problems.{path.stem}"
        try:
            mod = importlib.import_module(name)
            prob = getattr(mod, "PROBLEM")
        except Exception as e:  # noqa: BLE001 -- report, keep grading the others
            if errors is not None:
                errors.append(SpecError(name, f"{type(e).__name__}: {e}"))
            continue
        found.append(prob)
    return sorted(found, key=lambda p: p.number)


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
    raise KeyError(f"no problem {key!r}; known problems: {known}")


def missing_requirements(problem: Problem) -> list[str]:
    return [m for m in problem.requires if importlib.util.find_spec(m) is None]


# --------------------------------------------------------------------------- results

@dataclass
class CaseOutcome:
    case: Case
    status: str  # "pass" | "fail" | "not_started" | "not_run"
    message: str = ""
    mistake: str | None = None
    output: str = ""


@dataclass
class ProblemResult:
    problem: Problem
    path: str
    status: str  # "passed" | "failed" | "not started" | "missing" | "unavailable"
    outcomes: list = field(default_factory=list)
    seed: int | None = None
    message: str = ""  # set for whole-file problems (missing, import error, unavailable)
    elapsed: float = 0.0
    in_process: bool = False
    output: str = ""  # printed below Python's level (os.write, C code), capped

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def first_failure(self):
        for o in self.outcomes:
            if o.status not in ("pass", "not_run"):
                return o
        return next((o for o in self.outcomes if o.status == "not_run"), None)

    def counts(self, hidden: bool) -> tuple[int, int]:
        """(passed, total) among public (hidden=False) or hidden cases."""
        cs = [o for o in self.outcomes if o.case.hidden == hidden]
        return sum(o.status == "pass" for o in cs), len(cs)


# --------------------------------------------------------------------------- the child

_GPU = None


def has_gpu() -> bool:
    """Is there an NVIDIA GPU (nvidia-smi lists one)? Asked once per process."""
    global _GPU
    if _GPU is None:
        try:
            _GPU = subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.SubprocessError):
            _GPU = False
    return _GPU


def _child_env(problem: Problem, scratch: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    # the child may write only inside its scratch folder (child.install_guard): point
    # temp files and the caches libraries like to write there too
    for k in ("TMPDIR", "TRITON_CACHE_DIR", "MPLCONFIGDIR", "XDG_CACHE_HOME"):
        env[k] = scratch
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = "1"  # fast start, and memory use that does not depend on the core count
    if "triton" in problem.requires and "TRITON_INTERPRET" not in env and not has_gpu():
        env["TRITON_INTERPRET"] = "1"
    return env


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass


def run_subprocess(problem: Problem, path: str, cases: list) -> tuple[dict, str]:
    """Run the cases in one child. Returns ({case index: record}, captured output).

    A record is the child's dict for that case, or one made here for a timeout, a
    crash or an early exit. After a timeout or crash the remaining cases are not run."""
    import select  # not on every platform; only needed here

    heavy = any(m in ("torch", "triton") for m in problem.requires)
    startup = STARTUP_S["torch" if heavy else "numpy"] + problem.timeout_s
    jobs = [(i, c.function, c.args, c.memory_mb) for i, c in enumerate(cases)]
    timeouts = {i: (c.timeout_s or problem.timeout_s) for i, c in enumerate(cases)}
    token = secrets.token_hex(16)
    records: dict = {}
    out_parts, out_total = [], 0
    with tempfile.TemporaryDirectory(prefix="mla-judge-") as tmp:
        # CUDA's driver maps large private regions of host memory: no cap for GPU runs
        memory_mb = None if heavy and has_gpu() else problem.memory_mb
        job = {"token": token, "path": str(Path(path).resolve()), "cases": jobs,
               "memory_mb": memory_mb, "sys_path": [str(ROOT)],
               "preimport": ["numpy"] + (["torch", "triton"] if heavy else [])}
        job_file = Path(tmp) / "job.pkl"
        job_file.write_bytes(pickle.dumps(job))
        r_fd, w_fd = os.pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-u", str(CHILD), "--fd", str(w_fd), "--job", str(job_file)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                pass_fds=(w_fd,), cwd=tmp, env=_child_env(problem, tmp), start_new_session=True)
        finally:
            os.close(w_fd)
        out_fd = proc.stdout.fileno()
        buf = b""
        open_fds = {r_fd, out_fd}
        current, ready, finished, killed_for = None, False, False, None
        deadline = time.monotonic() + startup
        try:
            while open_fds and not finished:
                left = deadline - time.monotonic()
                if left <= 0:
                    killed_for = "timeout"
                    _kill(proc)
                    break
                rlist, _, _ = select.select(list(open_fds), [], [], min(left, 1.0))
                for fd in rlist:
                    chunk = os.read(fd, 1 << 20)
                    if not chunk:
                        open_fds.discard(fd)
                        continue
                    if fd == out_fd:
                        out_total += len(chunk)
                        if sum(map(len, out_parts)) < OUTPUT_CAP:
                            out_parts.append(chunk[:OUTPUT_CAP])
                        continue
                    buf += chunk
                    if len(buf) > RECORD_CAP:
                        killed_for = "too_large"
                        _kill(proc)
                        open_fds.clear()
                        break
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        tok, _, body = line.partition(b"\t")
                        if tok.decode("ascii", "replace") != token:
                            continue  # not from the child's harness: ignore
                        try:
                            rec = json.loads(body)
                        except ValueError:
                            continue
                        ev = rec.get("event")
                        if ev == "import_error":
                            records["import_error"] = rec
                            finished = True
                        elif ev == "ready":
                            ready = True
                            deadline = time.monotonic() + START_GAP_S
                        elif ev == "start" and rec.get("i") in timeouts:
                            current = rec["i"]
                            deadline = time.monotonic() + timeouts[current]
                        elif ev == "done" and rec.get("i") in timeouts:
                            records[rec["i"]] = rec
                            current = None
                            deadline = time.monotonic() + START_GAP_S
                        elif ev == "finished":
                            finished = True
        finally:
            if finished:
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    _kill(proc)
            else:
                if killed_for is None and proc.poll() is None:
                    try:  # pipes closed: the process is ending; give it a moment
                        proc.wait(timeout=2)
                    except subprocess.TimeoutExpired:
                        _kill(proc)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            _kill(proc)  # and anything it started in its process group
            proc.stdout.close()
            os.close(r_fd)
    rc = proc.returncode
    if not finished:
        if current is not None:
            where = current
        elif not ready:
            where = "import"
        else:  # died between two cases (e.g. a thread it left behind): blame the next one
            where = next((i for i in timeouts if i not in records), None)
        if killed_for == "timeout":
            rec = {"status": "timeout", "timeout_s": timeouts.get(current, startup) if where != "import" else startup}
        elif killed_for == "too_large":
            rec = {"status": "too_large"}
        elif rc is not None and rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            rec = {"status": "crashed", "signal": name}
        else:
            rec = {"status": "exited", "code": rc}
        if where == "import":
            records["import_error"] = dict(rec, event="import_failed")
        elif where is not None:
            records[where] = rec
        for i in timeouts:
            records.setdefault(i, {"status": "not_run"})
    out = b"".join(out_parts)[:OUTPUT_CAP].decode("utf-8", "replace")
    if out_total > OUTPUT_CAP:
        out += f"\n... ({out_total - OUTPUT_CAP} more bytes of output not shown)"
    return records, out


def run_in_process(path: str, cases: list, module=None) -> dict:
    """Same records as run_subprocess, computed in this process (no limits)."""
    jobs = [(i, c.function, c.args, c.memory_mb if not IN_BROWSER else None)
            for i, c in enumerate(cases)]
    records = {}
    for i, rec in _child.run_in_process(path, jobs, module=module):
        if i is None:
            records["import_error"] = rec
            break
        # the same plain-data round trip as from a child, so checks see the same types
        if rec.get("status") == "ok":
            rec = dict(rec, result=json.loads(json.dumps(rec["result"])))
        records[i] = rec
    return records


# --------------------------------------------------------------------------- grading

def grade_record(problem: Problem, case: Case, rec: dict) -> CaseOutcome:
    st = rec.get("status")
    out = rec.get("output", "")
    fn = case.function
    if st == "ok":
        result = _child.decode(rec.get("result"))
        try:
            verdict = problem.check(case, result)
        except Exception as e:  # noqa: BLE001 -- a result the checker could not read
            verdict = fail(f"the judge could not read the result of {fn} "
                           f"({type(e).__name__}: {e}); return the type the statement asks for.",
                           "wrong_type")
        if rec.get("mutated"):
            names = ", ".join(rec["mutated"])
            verdict = fail(f"{fn} modified its input {names} in place. The caller still needs "
                           f"it: work on a copy or use operations that return new arrays "
                           f"(x = x * 2, not x *= 2).", "mutated_input")
        if verdict.passed:
            return CaseOutcome(case, "pass", output=out)
        mistake = None
        if verdict.reason != "mutated_input":
            mistake = match_mistake(problem, case, result)
        return CaseOutcome(case, "fail", verdict.message, mistake, out)
    if st == "not_implemented":
        return CaseOutcome(case, "not_started", f"{fn} is not written yet (it raises NotImplementedError).",
                           output=out)
    messages = {
        "error": lambda: f"{fn} raised an exception:\n{rec.get('message', '')}",
        "memory_error": lambda: case.memory_error_message or
        f"{fn} ran out of memory (the judge allows about {case.memory_mb or problem.memory_mb} MB "
        f"beyond what Python itself uses):\n{rec.get('message', '')}",
        "system_exit": lambda: f"{fn} tried to stop the program ({rec.get('message')}). "
        "Return the answer instead of calling exit().",
        "missing_function": lambda: f"your file defines no function named {rec.get('function')!r}; "
        "keep the names and parameters from the stub.",
        "timeout": lambda: f"{fn} was still running after {rec.get('timeout_s', problem.timeout_s):g} s "
        "and was stopped (an infinite loop, or far too much work for these sizes?).",
        "crashed": lambda: f"the Python process running {fn} crashed ({rec.get('signal')}); "
        "this usually means code that corrupts memory or kills the process.",
        "exited": lambda: f"the process running {fn} ended (exit code {rec.get('code')}) before "
        "returning; did your code call os._exit()?",
        "too_large": lambda: f"{fn} returned a result too large to send back "
        f"(over {RECORD_CAP // 2**20} MB).",
        "not_run": lambda: "not run (an earlier case stopped the process).",
    }
    msg = messages.get(st, lambda: f"unexpected result from the test process: {st!r}")()
    return CaseOutcome(case, "not_run" if st == "not_run" else "fail", msg, output=out)


def match_mistake(problem: Problem, case: Case, result) -> str | None:
    """The message of the first known mistake whose output equals the learner's."""
    for m in problem.mistakes_for(case.function):
        try:
            wrong = m.fn(**copy.deepcopy(case.args))
        except Exception:  # noqa: BLE001 -- a mistake that does not apply to this case
            continue
        try:
            hit = wrong is not None and bool((m.match or same_answer)(result, wrong))
        except Exception:  # noqa: BLE001 -- a result of another type: not this slip
            hit = False
        if hit:
            return m.message
    return None


def grade(problem: Problem, path=None, seed: int | None = None, in_process: bool | None = None,
          module=None) -> ProblemResult:
    """Grade one problem. ``path``: the learner's file (default practice/pNN_slug.py);
    ``module``: an object holding the functions instead (notebooks; in-process)."""
    t0 = time.monotonic()
    path = str(path or PRACTICE / problem.filename)
    seed = seed if seed is not None else secrets.randbelow(2**31)
    res = ProblemResult(problem, path, "failed", seed=seed)
    missing = missing_requirements(problem)
    if missing:
        res.status = "unavailable"
        res.message = (f"this problem needs {', '.join(missing)}, which is not installed here "
                       f"(pip install {' '.join(missing)}; problem {problem.number} also needs a "
                       "GPU for timings, or TRITON_INTERPRET=1 to run on the CPU).")
        return res
    if module is None and not Path(path).is_file():
        res.status = "missing"
        res.message = f"there is no file {path}."
        return res
    try:
        cases = problem.make_cases(seed)
    except Exception as e:  # noqa: BLE001 -- a bug in the course, not in the attempt
        res.message = (f"the judge could not build the cases for problem {problem.number} "
                       f"({type(e).__name__}: {e}); please report this.")
        return res
    cases = [c for c in cases if not c.hidden] + [c for c in cases if c.hidden]
    if in_process is None:
        in_process = NO_SUBPROCESS or IN_BROWSER or module is not None
    res.in_process = in_process
    if in_process:
        records = run_in_process(path, cases, module=module)
    else:
        records, res.output = run_subprocess(problem, path, cases)
    if "import_error" in records:
        rec = records["import_error"]
        if rec.get("event") == "import_failed":
            inner = grade_record(problem, Case("import", "(importing your file)", {}), rec)
            res.message = "your file could not be loaded: " + inner.message
        else:
            res.message = f"your file could not be imported:\n{rec.get('message', '')}"
        res.elapsed = time.monotonic() - t0
        return res
    res.outcomes = [grade_record(problem, c, records.get(i, {"status": "not_run"}))
                    for i, c in enumerate(cases)]
    sts = [o.status for o in res.outcomes]
    if sts and all(s == "pass" for s in sts):
        res.status = "passed"
    elif sts and all(s == "not_started" for s in sts):
        res.status = "not started"
    else:
        res.status = "failed"
    res.elapsed = time.monotonic() - t0
    return res
