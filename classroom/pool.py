"""Grade many attempts in parallel; a failure of the machinery is never an attempt's fault.

  conductor (this module, in the teacher's process)
    -> N workers (``python -I`` running classroom.worker, one job at a time)
       -> one sandbox per attempt (``runner.grade``: bubblewrap + a cgroup, grader/jail.py)

In the sandbox an attempt sees no other process: it cannot signal, stop or kill its
worker, the other workers or the conductor, and everything it starts dies with its
sandbox. So when a worker dies, stops (SIGSTOP: the conductor looks at its state every
second), stays busy past the attempt's budget (grader/plan.py's whole-attempt budget plus a
margin: the judge stops the attempt at that budget, so this is a backstop for a stuck
judge), or says the sandbox could not start, that is the machine's doing
(the OOM killer, someone's ``kill``, an overloaded host) and not the attempt's: the
worker is replaced and the attempt graded again, at most ``retries`` more times. An
attempt that still could not be graded is handed to ``on_not_graded`` with an honest
reason and never cached, so the next run grades it again. A run that is interrupted
(Ctrl-C) records nothing for the attempts in flight; the next run grades them.

Workers die with the conductor (the kernel's parent-death signal), and their sandboxes
with them, so nothing of a run outlives it.
"""
from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARGIN_S = 60.0
RETRIES = 2          # further tries for an attempt whose worker or sandbox failed
WORKER_ENV_DROP = ("MLA_CLASS_SEED",)   # the workers need no seed from the environment
MAX_REPLY = 64 << 10   # bytes of one reply line a worker may send (its records go to files)


@dataclass
class Job:
    key: tuple            # (problem number, sha256)
    problem: int
    path: str             # the staged file
    seed: int
    out: str              # the cache file the worker writes
    protect: list         # extra folders graded code may not read
    budget_s: float       # wall-clock backstop for the whole attempt
    rename: dict = None   # {path prefix: label} applied to the record's texts (e.g. <grades>)
    isolation: str = "jail"   # sandbox.Placement's text: jail, process, user:UID:GID
    sha256: str = ""      # what the staged file must hash to (checked by the worker)


def budget_for(problem) -> float:
    """The attempt's whole time budget (grader/plan.py: the judge stops it there), plus a
    margin for the judge's own work around it: a backstop for a stuck judge."""
    from grader import plan
    return plan.attempt_budget_s(problem) + MARGIN_S


def process_state(pid: int) -> str:
    """The kernel's one-letter state of a process (R, S, D, T stopped, t traced, Z), or ""."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


class Worker:
    """One worker process and its line protocol."""

    def __init__(self, log_path: Path | None):
        self.log_path = log_path
        self.proc = None
        self.buf = b""

    def start(self):
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        env = {k: v for k, v in os.environ.items() if k not in WORKER_ENV_DROP}
        # -I: no PYTHON* variables, no current folder or user site on sys.path
        boot = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                "from classroom.worker import main; sys.exit(main())")
        self.proc = subprocess.Popen([sys.executable, "-I", "-c", boot], cwd=str(ROOT),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                                     start_new_session=True)
        if log is not subprocess.DEVNULL:
            log.close()
        self.buf = b""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def run(self, job: Job) -> tuple[str, str]:
        """("ok", "") / ("error", traceback) / ("infra", why) / ("died", how) /
        ("stopped", "") / ("budget", "")."""
        if not self.alive():
            self.start()
        proc = self.proc   # stop() (from the conductor's thread, on Ctrl-C) may clear self.proc
        msg = json.dumps({"problem": job.problem, "path": job.path, "seed": job.seed, "out": job.out,
                          "protect": job.protect, "rename": job.rename or {},
                          "isolation": job.isolation, "sha256": job.sha256}) + "\n"
        try:
            proc.stdin.write(msg.encode())
            proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return "died", self._how(proc)
        fd = proc.stdout.fileno()
        end = time.monotonic() + job.budget_s
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                self.stop()
                return "budget", ""
            if process_state(proc.pid) in ("T", "t"):
                self.stop()
                return "stopped", ""
            try:
                r, _, _ = select.select([fd], [], [], min(left, 1.0))
                chunk = os.read(fd, 65536) if r else None
            except (OSError, ValueError):   # closed under us: the run is being stopped
                return "died", self._how(proc)
            if chunk is None:
                continue
            if not chunk:
                return "died", self._how(proc)
            self.buf += chunk
            if b"\n" not in self.buf and len(self.buf) > MAX_REPLY:
                self.stop()
                return "error", f"the worker's reply was longer than {MAX_REPLY:,} bytes"
        line, self.buf = self.buf.split(b"\n", 1)
        if len(line) > MAX_REPLY:
            return "error", f"the worker's reply was longer than {MAX_REPLY:,} bytes"
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):
            return "error", f"unreadable reply from the worker: {line[:200]!r}"
        if not isinstance(reply, dict):
            return "error", f"unreadable reply from the worker: {line[:200]!r}"
        if reply.get("ok") is True:
            return "ok", ""
        if reply.get("infra"):
            return "infra", str(reply["infra"])[:4000]
        return "error", str(reply.get("error", ""))[-4000:]

    def _how(self, proc) -> str:
        try:
            rc = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.stop()
            return "stopped answering"
        if rc < 0:
            try:
                return f"killed by {signal.Signals(-rc).name}"
            except ValueError:
                return f"killed by signal {-rc}"
        return f"exited with code {rc}"

    def stop(self):
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # the worker and anything in its group
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.kill()
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        from grader import limits
        limits.sweep(proc.pid)   # the cgroup of the attempt it was grading, if any
        for s in (proc.stdin, proc.stdout):
            try:
                s.close()
            except OSError:
                pass


_WHY = {"died": "the worker grading it was {detail}",
        "stopped": "the worker grading it was stopped (SIGSTOP) by something outside the attempt",
        "budget": "the worker was still busy {budget:.0f} s after it started (more than every case's "
                  "limit added up: the machine is overloaded or the judge is stuck)",
        "infra": "{detail}"}


def run_jobs(jobs: list, workers: int, on_done, on_not_graded, log_dir: Path | None = None,
             retries: int = RETRIES):
    """Run ``jobs`` on ``workers`` worker processes. ``on_done(job)`` after a worker wrote
    the job's record; ``on_not_graded(job, why)`` when the attempt could not be graded
    (its worker or sandbox failed ``retries + 1`` times, or the judge raised): the
    caller reports it and must not cache it. Jobs go in the order given. Returns
    {"errors": [(job, traceback)], "retried": n}."""
    todo: queue.Queue = queue.Queue()
    for j in jobs:
        todo.put(j)
    slots = [Worker(Path(log_dir) / f"worker-{i}.log" if log_dir else None) for i in range(max(1, workers))]
    lock = threading.Lock()
    errors: list = []
    retried = [0]
    stopping = threading.Event()   # set when the run is interrupted: record nothing more

    def loop(w: Worker):
        while not stopping.is_set():
            try:
                job = todo.get_nowait()
            except queue.Empty:
                return
            failures = []
            for _ in range(retries + 1):
                status, detail = w.run(job)
                if stopping.is_set():
                    return   # interrupted: nothing recorded, the next run grades it
                if status in ("ok", "error"):
                    break
                w.stop()     # a fresh worker for the next try
                failures.append(_WHY[status].format(detail=detail.strip()[:300], budget=job.budget_s))
                with lock:
                    retried[0] += 1
            with lock:
                if status == "ok":
                    on_done(job)
                elif status == "error":
                    errors.append((job, detail))
                    last = detail.strip().splitlines()[-1][:300] if detail.strip() else "no traceback"
                    on_not_graded(job, f"the judge failed on this attempt (a bug in the course, not "
                                       f"the attempt; see the worker log): {last}")
                else:
                    on_not_graded(job, f"tried {len(failures)} times, and each time the grading "
                                       f"machinery failed, not the attempt: " + "; ".join(dict.fromkeys(failures)))

    threads = [threading.Thread(target=loop, args=(w,), daemon=True) for w in slots]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.2)
    finally:
        stopping.set()
        while True:  # stop handing out work, then end every worker
            try:
                todo.get_nowait()
            except queue.Empty:
                break
        for w in slots:
            w.stop()
    return {"errors": errors, "retried": retried[0]}


__all__ = ["Job", "run_jobs", "budget_for", "process_state", "RETRIES"]
