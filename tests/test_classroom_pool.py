"""The class pool when the machinery fails, not the attempt: a worker killed or stopped
from outside is replaced and the attempt graded again; an attempt whose grading keeps
failing is "not graded" and never cached; an interrupted run (Ctrl-C, twice) grades the
interrupted attempt on the next run instead of caching a failure; nothing outlives a run."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader import runner
from classroom import pool
from tests.sandbox_support import require_sandbox

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc and signals")


@pytest.fixture(autouse=True)
def _sandbox():
    require_sandbox()


def slow_right_p04(seconds: float) -> bytes:
    """The model answer of problem 4, after sleeping at import: a worker stays busy."""
    text = (ROOT / "solutions" / "p04_choose_path.py").read_text()
    return f"import time\ntime.sleep({seconds})\n{text}".encode()


def sandbox_processes(children_only: bool = False) -> set:
    """Live processes of any judge sandbox: bwrap, or the child runner inside it (only
    the latter with ``children_only``: an attempt running, not the sandbox probe)."""
    out = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/stat") as g:
                state = g.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z" or not _this_checkout(int(pid), cmd):   # other sessions share the machine
            continue
        if b"/judge/child/__main__.py" in cmd or (b"bwrap\0" in cmd and not children_only):
            out.add(int(pid))
    return out


def _this_checkout(pid: int, cmd: bytes) -> bool:
    """A sandbox names this checkout's child runner in its command line; a child runner
    inside one is judged by its parent (an orphan counts: its sandbox is gone)."""
    ours = str(ROOT).encode()
    if b"bwrap" in cmd:
        return ours in cmd
    if b"/judge/child/__main__.py" not in cmd:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{ppid}/cmdline", "rb") as f:
            parent = f.read()
    except (OSError, IndexError, ValueError):
        return True
    return ours in parent or b"bwrap" not in parent


def my_workers() -> list:
    """pids of the worker processes this test process started."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"classroom.worker" in cmd:
            found.append(int(pid))
    return found


def run_in_thread(jobs, retries=2):
    done, failed = [], []
    result = {}
    t = threading.Thread(target=lambda: result.update(pool.run_jobs(
        jobs, 1, done.append, lambda j, why: failed.append(why), retries=retries)))
    t.start()
    return t, done, failed, result


def wait_for(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = predicate()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def job_for(tmp_path, data: bytes, budget=120.0) -> pool.Job:
    f = tmp_path / "staged" / "p04_choose_path.py"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_bytes(data)
    import hashlib
    sha = hashlib.sha256(data).hexdigest()
    return pool.Job((4, sha), 4, str(f), 1, str(tmp_path / "rec.json"), [], budget, {}, "jail", sha)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGSTOP"])
def test_a_worker_killed_or_stopped_from_outside_is_replaced_and_the_attempt_graded(tmp_path, how):
    from tests.test_classroom_hostile import judge_cgroups
    cgroups_before = judge_cgroups()
    job = job_for(tmp_path, slow_right_p04(2.0))
    t, done, failed, result = run_in_thread([job])
    first = wait_for(my_workers)[0]
    wait_for(sandbox_processes)            # the worker is grading: the sandbox is up
    os.kill(first, getattr(signal, how))
    t.join(90)
    assert not t.is_alive()
    assert done == [job] and not failed, failed
    rec = json.loads(Path(job.out).read_text())
    assert rec["status"] == "passed" and rec["graded_sha256"] == job.sha256
    assert result["retried"] == 1
    assert not my_workers() and not os.path.exists(f"/proc/{first}") or _zombie(first)
    assert judge_cgroups() - cgroups_before == set(), "the killed worker's attempt cgroup was left"


def _zombie(pid) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_an_attempt_the_machinery_cannot_grade_is_not_graded_and_not_cached(tmp_path):
    """The worker is still busy past the budget every time (here: a budget far below the
    attempt's own limits): after the retries the attempt is handed back as not graded,
    with the reason, no record is written, and no sandbox is left running."""
    before = sandbox_processes()
    job = job_for(tmp_path, slow_right_p04(30.0), budget=3.0)
    t0 = time.monotonic()
    t, done, failed, result = run_in_thread([job], retries=1)
    t.join(60)
    assert not done and len(failed) == 1
    assert "tried 2 times" in failed[0] and "still busy 3 s" in failed[0] and "not the attempt" in failed[0]
    assert not Path(job.out).exists()
    assert time.monotonic() - t0 < 30
    assert_none_left(before)


def assert_none_left(before: set, timeout: float = 10.0):
    end = time.monotonic() + timeout
    while (left := sandbox_processes() - before) and time.monotonic() < end:
        time.sleep(0.05)
    assert not left, f"sandbox processes left running: {left}"


@pytest.mark.slow
def test_an_interrupted_run_grades_the_attempt_next_time(tmp_path):
    """Ctrl-C twice while a slow but correct attempt is being graded, then a third run:
    the attempt passes (before, two interruptions cached it as a failure for good)."""
    subs = tmp_path / "subs" / "alice" / "practice"
    subs.mkdir(parents=True)
    (subs / "p04_choose_path.py").write_bytes(slow_right_p04(3.0))
    out = tmp_path / "grades"
    cmd = [sys.executable, "-m", "classroom", "grade", str(tmp_path / "subs"), "--out", str(out),
           "--seed", "5", "--problems", "4", "--workers", "1", "--no-progress"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for _ in range(2):
        before = sandbox_processes()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        wait_for(lambda: sandbox_processes(children_only=True) - before)   # the attempt is running
        proc.send_signal(signal.SIGINT)
        text = proc.communicate(timeout=60)[0].decode()
        assert proc.returncode == 130, text
        assert "interrupted" in text
        assert_none_left(before)
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 graded now" in done.stdout
    with open(out / "verdicts.csv") as f:
        assert "alice,4,passed," in f.read()


def test_budget_for_covers_the_attempts_whole_budget():
    """The worker's backstop is the attempt's whole budget (the judge stops the attempt
    there, grader/plan.py) plus a margin for the judge's own work: never below it."""
    from grader import plan
    for number in (1, 4, 6):
        p = runner.find(number)
        whole = max(plan.plan_for(p, p.make_cases(s)).total_s for s in range(3))
        assert pool.budget_for(p) == whole + pool.MARGIN_S
