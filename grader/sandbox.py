"""Run a learner's cases away from the judge and bring back plain records.

Four small steps, each its own function:
  build_job      what the child needs: the cases, its limits, what it may import
  start_child    a fresh ``python -I`` process (files) or a fork of this one (notebooks)
  watch          the select loop: deadlines per case, the line protocol, output capture
  explain_death  turn a child that stopped early into a record for the case it was on

A record is the child's dict for one case (grader/child.py, ``RunStatus``), or one made
here for a timeout, a crash, running out of memory or an early exit. After such an end
the remaining cases are marked not run.
"""
from __future__ import annotations

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
from .child import RunStatus

CHILD = Path(_child.__file__).resolve()
OUTPUT_CAP = 8000            # characters of fd-level output kept per run
RECORD_CAP = 256 * 2**20     # bytes: a result larger than this is refused
START_GAP_S = 5.0            # seconds allowed between one case's end and the next one's start
STARTUP_S = {"numpy": 20.0, "torch": 60.0}  # interpreter + imports, before the file runs
# what native code prints when it cannot get memory (OpenBLAS, C++, glibc)
MEMORY_WORDS = ("memory allocation", "cannot allocate memory", "bad_alloc", "out of memory",
                "memoryerror", "failed to allocate")


@dataclass
class Job:
    token: str
    cases: list                 # (index, function name, args, memory_mb)
    timeouts: dict              # index -> seconds
    startup_s: float            # for the interpreter, the imports and the file itself
    payload: dict = field(default_factory=dict)  # everything else the child reads


@dataclass
class Watched:
    """What the watch loop saw."""
    records: dict = field(default_factory=dict)
    current: int | None = None   # the case running when the child stopped
    ready: bool = False          # the file imported
    finished: bool = False       # the child said it was done
    killed_for: str | None = None  # "timeout" | "too_large"
    output: bytes = b""
    output_total: int = 0


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


def is_heavy(problem) -> bool:
    return any(m in ("torch", "triton") for m in problem.requires)


# --------------------------------------------------------------------------- 1. the job

def build_job(problem, path: str, cases: list, protected: list, provided: dict) -> Job:
    heavy = is_heavy(problem)
    jobs = [(i, c.function, c.args, c.memory_mb) for i, c in enumerate(cases)]
    timeouts = {i: (c.timeout_s or problem.timeout_s) for i, c in enumerate(cases)}
    # CUDA's driver maps large private regions of host memory: no cap for GPU runs
    memory_mb = None if heavy and has_gpu() else problem.memory_mb
    token = secrets.token_hex(16)
    payload = {"token": token, "path": str(Path(path).resolve()), "cases": jobs,
               "memory_mb": memory_mb, "protected": protected, "provided": provided,
               "preimport": ["numpy"] + (["torch", "triton"] if heavy else [])}
    startup = STARTUP_S["torch" if heavy else "numpy"] + problem.timeout_s
    return Job(token, jobs, timeouts, startup, payload)


def child_env(problem, scratch: str) -> dict:
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


# --------------------------------------------------------------------------- 2. the child

class _Forked:
    """A forked child behind the part of Popen's interface the judge uses."""

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None

    def poll(self):
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout=None):
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired("fork", timeout)
            time.sleep(0.01)
        return self.returncode


def start_child(job: Job, problem, scratch: str):
    """A fresh interpreter running grader/child.py. Returns (process, result fd, output fd)."""
    job_file = Path(scratch) / "job.pkl"
    job_file.write_bytes(pickle.dumps(job.payload))
    r_fd, w_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-u", str(CHILD), "--fd", str(w_fd), "--job", str(job_file)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            pass_fds=(w_fd,), cwd=scratch, env=child_env(problem, scratch), start_new_session=True)
    finally:
        os.close(w_fd)
    return proc, r_fd, proc.stdout.fileno(), proc.stdout


def start_fork(job: Job, module, scratch: str):
    """A fork of this process (a notebook's kernel, where the functions live)."""
    r_fd, w_fd = os.pipe()
    o_r, o_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            os.setsid()
            os.close(r_fd)
            os.close(o_r)
            os.dup2(o_w, 1)
            os.dup2(o_w, 2)
            os.chdir(scratch)
            payload = dict(job.payload, scratch=scratch)
            _child.serve_forked(payload, module, w_fd)
        except BaseException:  # noqa: BLE001 -- nothing may escape into the notebook's loop
            pass
        finally:
            _child._REAL_EXIT(0)
    os.close(w_fd)
    os.close(o_w)
    return _Forked(pid), r_fd, o_r, None


def kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        os.kill(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# --------------------------------------------------------------------------- 3. watching

def _handle(event: dict, job: Job, seen: Watched) -> float | None:
    """Apply one protocol event; returns a new deadline (seconds from now) or None."""
    ev = event.get("event")
    if ev == "import_error":
        seen.records["import_error"] = event
        seen.finished = True
    elif ev == "ready":
        seen.ready = True
        return START_GAP_S
    elif ev == "start" and event.get("i") in job.timeouts:
        seen.current = event["i"]
        return job.timeouts[seen.current]
    elif ev == "done" and event.get("i") in job.timeouts:
        seen.records[event["i"]] = event
        seen.current = None
        return START_GAP_S
    elif ev == "finished":
        seen.finished = True
    return None


def watch(proc, job: Job, r_fd: int, out_fd: int) -> Watched:
    """Read results and output until the child finishes, dies or misses a deadline."""
    import select  # not on every platform; only needed here
    seen = Watched()
    parts: list = []
    buf = b""
    open_fds = {r_fd, out_fd}
    deadline = time.monotonic() + job.startup_s
    # the whole run's budget: graded code that forges "start" events (it can find the
    # token in its own process) cannot keep resetting the per-case deadline past this
    last_call = time.monotonic() + job.startup_s + sum(job.timeouts.values()) + START_GAP_S * (len(job.timeouts) + 1)
    while open_fds and not seen.finished:
        left = min(deadline, last_call) - time.monotonic()
        if left <= 0:
            seen.killed_for = "timeout"
            kill(proc)
            break
        rlist, _, _ = select.select(list(open_fds), [], [], min(left, 1.0))
        for fd in rlist:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                open_fds.discard(fd)
                continue
            if fd == out_fd:
                seen.output_total += len(chunk)
                if sum(map(len, parts)) < OUTPUT_CAP:
                    parts.append(chunk[:OUTPUT_CAP])
                continue
            buf += chunk
            if len(buf) > RECORD_CAP:
                seen.killed_for = "too_large"
                kill(proc)
                open_fds.clear()
                break
            *lines, buf = buf.split(b"\n")
            for line in lines:
                tok, _, body = line.partition(b"\t")
                if tok.decode("ascii", "replace") != job.token:
                    continue  # not from the child's harness: ignore
                try:
                    event = json.loads(body)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    new = _handle(event, job, seen)
                    if new is not None:
                        deadline = time.monotonic() + new
    seen.output = b"".join(parts)[:OUTPUT_CAP]
    return seen


def reap(proc, seen: Watched):
    """Wait for the child to end (briefly), then make sure it and its group are gone."""
    if seen.killed_for is None and proc.poll() is None:
        try:  # finished, or pipes closed: the process is ending; give it a moment
            proc.wait(timeout=5 if seen.finished else 2)
        except subprocess.TimeoutExpired:
            pass
    kill(proc)  # and anything it started in its process group
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


# --------------------------------------------------------------------------- 4. an early end

def explain_death(proc, job: Job, seen: Watched) -> None:
    """The child stopped before finishing: pin a record on the case it was running (or on
    the import), and mark the cases after it not run."""
    if seen.finished:
        return
    if seen.current is not None:
        where = seen.current
    elif not seen.ready:
        where = "import"
    else:  # died between two cases (e.g. a thread it left behind): blame the next one
        where = next((i for i in job.timeouts if i not in seen.records), None)
    rc = proc.returncode
    printed = seen.output.decode("utf-8", "replace").lower()
    if seen.killed_for == "timeout":
        limit = job.timeouts.get(seen.current, job.startup_s) if where != "import" else job.startup_s
        rec = {"status": RunStatus.TIMEOUT, "timeout_s": limit}
    elif seen.killed_for == "too_large":
        rec = {"status": RunStatus.TOO_LARGE}
    elif rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        rec = {"status": RunStatus.CRASHED, "signal": name}
    elif any(w in printed for w in MEMORY_WORDS):
        rec = {"status": RunStatus.OUT_OF_MEMORY, "code": rc}
    else:
        rec = {"status": RunStatus.EXITED, "code": rc}
    if where == "import":
        seen.records["import_error"] = dict(rec, event="import_failed")
    elif where is not None:
        seen.records[where] = rec
    for i in job.timeouts:
        seen.records.setdefault(i, {"status": RunStatus.NOT_RUN})


def _output_text(seen: Watched) -> str:
    out = seen.output.decode("utf-8", "replace")
    if seen.output_total > OUTPUT_CAP:
        out += f"\n... ({seen.output_total - OUTPUT_CAP} more bytes of output not shown)"
    return out


def run(problem, path: str | None, cases: list, protected: list, provided: dict,
        module=None) -> tuple[dict, str]:
    """Run the cases isolated: a fresh process for a file, a fork for ``module`` (an
    object holding a notebook's functions). Returns ({case index: record}, output)."""
    with tempfile.TemporaryDirectory(prefix="mla-judge-") as scratch:
        job = build_job(problem, path or "<notebook>", cases, protected, provided)
        if module is None:
            proc, r_fd, out_fd, out_file = start_child(job, problem, scratch)
        else:
            job.payload["path"] = path or "<notebook>"
            job.startup_s = START_GAP_S + problem.timeout_s  # nothing to import
            proc, r_fd, out_fd, out_file = start_fork(job, module, scratch)
        seen = Watched(killed_for="interrupted")  # until watch returns
        try:
            seen = watch(proc, job, r_fd, out_fd)
        finally:
            reap(proc, seen)
            if out_file is not None:
                out_file.close()
            else:
                os.close(out_fd)
            os.close(r_fd)
    explain_death(proc, job, seen)
    return seen.records, _output_text(seen)
