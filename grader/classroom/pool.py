"""Grade many attempts in parallel so that no attempt can stop, stall or corrupt the rest.

The judge runs each attempt in a child process, but that child is started by the process
that asked for the grade -- and graded code can signal its parent (``os.kill(os.getppid(),
9)``, or the same through ctypes, which no audit hook sees). So the grading is split:

  conductor (this module, in the teacher's process)
    -> N workers (``python -m grader.classroom.worker``, long-lived, one job at a time)
       -> the judge's sandbox child for one attempt (``runner.grade``)

If an attempt kills its worker, or a worker is still busy after the attempt's budget (the
sum of the spec's per-case limits, plus start-up, plus a margin -- a backstop for a child
that keeps the judge's watch loop alive), the conductor records a verdict for that attempt
(the caller's ``on_stopped``), starts a new worker and goes on. Each worker writes its verdict to the cache file itself (atomically), so a verdict
that was written is never lost, and a job is marked as started before it is sent: an
attempt that has taken the whole run down twice (a re-run resumes from the cache) is not
started a third time.

A worker's sandbox children die with it (worker.py: the kernel's parent-death signal), so
neither an attempt that kills its worker nor one whose worker the conductor kills lives on
as an orphan. (Linux; elsewhere such a child runs until its own limits stop it.) Workers
run in their own process group, so an attempt that signals its parent's group reaches
only its worker. What this cannot stop is a signal to every process the user owns
(``os.kill(-1, 9)``): only the judge refusing os.kill, or an operating-system sandbox
(another user, a container), can.
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

ROOT = Path(__file__).resolve().parent.parent.parent
MARGIN_S = 60.0


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


def budget_for(problem) -> float:
    """Start-up, then every case at its limit plus the judge's gap between cases, plus a margin."""
    from grader import sandbox
    cases = problem.make_cases(0)
    startup = sandbox.STARTUP_S["torch" if sandbox.is_heavy(problem) else "numpy"] + problem.timeout_s
    per_case = sum((c.timeout_s or problem.timeout_s) + sandbox.START_GAP_S for c in cases)
    return startup + per_case + MARGIN_S


class Worker:
    """One ``python -m grader.classroom.worker`` process and its line protocol."""

    def __init__(self, log_path: Path | None):
        self.log_path = log_path
        self.proc = None
        self.buf = b""

    def start(self):
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen([sys.executable, "-m", "grader.classroom.worker"], cwd=str(ROOT),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                                     start_new_session=True)
        if log is not subprocess.DEVNULL:
            log.close()
        self.buf = b""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def run(self, job: Job) -> tuple[str, str]:
        """("ok", "") / ("error", traceback) / ("died", how) / ("budget", "")."""
        if not self.alive():
            self.start()
        msg = json.dumps({"problem": job.problem, "path": job.path, "seed": job.seed, "out": job.out,
                          "protect": job.protect, "rename": job.rename or {}}) + "\n"
        try:
            self.proc.stdin.write(msg.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return "died", self._how()
        fd = self.proc.stdout.fileno()
        end = time.monotonic() + job.budget_s
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                self.stop()
                return "budget", ""
            r, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not r:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return "died", self._how()
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except ValueError:
            return "error", f"unreadable reply from the worker: {line[:200]!r}"
        return ("ok", "") if reply.get("ok") else ("error", str(reply.get("error", "")))

    def _how(self) -> str:
        try:
            rc = self.proc.wait(timeout=5)
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
        if self.proc is None:
            return
        try:
            self.proc.kill()
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for s in (self.proc.stdin, self.proc.stdout):
            try:
                s.close()
            except OSError:
                pass
        self.proc = None


def run_jobs(jobs: list, workers: int, on_done, on_stopped, log_dir: Path | None = None,
             max_starts: int = 2):
    """Run ``jobs`` on ``workers`` worker processes. ``on_done(job)`` after a worker wrote
    the job's record; ``on_stopped(job, why)`` when the attempt stopped or outlived its
    worker (the caller writes a verdict). Jobs go in the order given. Returns
    {"errors": [(job, traceback)]} for judge failures."""
    todo: queue.Queue = queue.Queue()
    for j in jobs:
        todo.put(j)
    slots = [Worker(Path(log_dir) / f"worker-{i}.log" if log_dir else None) for i in range(max(1, workers))]
    lock = threading.Lock()
    errors: list = []
    stopping = threading.Event()   # set when the run is interrupted: record nothing more

    def loop(w: Worker):
        while True:
            try:
                job = todo.get_nowait()
            except queue.Empty:
                return
            started = Path(job.out + ".started")
            starts = started.read_text().count("\n") if started.is_file() else 0
            if starts >= max_starts:
                with lock:
                    on_stopped(job, f"the grading run stopped {starts} times while this attempt was "
                                    "being graded; it was not started again (delete "
                                    f"{started.name} in the cache to retry)")
                continue
            with open(started, "a") as f:
                f.write("started\n")
            status, detail = w.run(job)
            if stopping.is_set():
                return
            if status in ("died", "budget"):
                w.stop()    # its sandbox child dies with it (child.die_with_parent)
            with lock:
                if status == "ok":
                    started.unlink(missing_ok=True)
                    on_done(job)
                elif status == "budget":
                    started.unlink(missing_ok=True)
                    on_stopped(job, f"grading this attempt took longer than {job.budget_s:.0f} s in all "
                                    "(every case's limit added up), so it was stopped")
                elif status == "died":
                    started.unlink(missing_ok=True)
                    on_stopped(job, f"the process grading this attempt was {detail} while the attempt "
                                    "ran: graded code must not signal or kill other processes")
                else:
                    started.unlink(missing_ok=True)
                    errors.append((job, detail))
                    on_stopped(job, "the judge failed on this attempt (a bug in the course, "
                                    "not the attempt): " + detail.strip().splitlines()[-1][:300]
                               if detail.strip() else "the judge failed on this attempt")

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
    return {"errors": errors}


__all__ = ["Job", "run_jobs", "budget_for"]
