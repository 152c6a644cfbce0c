"""Run a learner's attempt away from the judge and bring back plain records.

Where it runs (``records.Isolation``, chosen by runner.grade; a ``Placement`` adds the
account for "user"):
  jail     a bubblewrap sandbox (grader/jail.py) in a per-attempt cgroup
           (grader/limits.py): the operating system is the boundary. Classroom grading
           requires it; the learner's judge uses it wherever bwrap works.
  process  a fresh ``python -I`` process with the judge's Python-level guard (an audit
           hook and an import blocker in grader/child/): a courtesy for self-study
           where there is no bwrap, not a security boundary.
  user     a fresh process as another, unprivileged user (Gradescope's container when it
           forbids namespaces): every process of that user is killed afterwards.
  fork     a notebook's functions, in a fork of its kernel (``start_fork``), same limits.
  (none, the caller's own process, is runner.run_in_process: nothing here)

Four small steps, each its own function:
  build_job      what the child needs: the cases, its limits, what it may import
  start_child    the child in its isolation (or a fork of this process, for notebooks)
  watch          the select loop: deadlines per case, the line protocol, output capture
  explain_death  turn a child that stopped early into a record for the case it was on

A record is the child's dict for one case (grader/child/, ``RunStatus``), checked and
rebuilt here field by field (``clean_record``): whatever the attempt forges or garbles on
the pipe is its own failure, never the judge's. A record is made here for a timeout, a
crash, running out of memory or an early exit; after such an end the remaining cases
are marked not run. A child that never reported it was alive (the sandbox or the
interpreter failed before the attempt ran) raises ``InfrastructureError``: that is not
the attempt's fault, and the caller says so instead of grading it.
"""
from __future__ import annotations

import json
import os
import pickle
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import child as _child
from . import jail, limits
from . import plan as plan_mod
from .child import RunStatus
from .lang import said
from .records import Isolation, cut
from .spec import TORCH_STACK

CHILD_PACKAGE = Path(_child.__file__).resolve().parent   # grader/child/: mounted alone in the sandbox
CHILD = CHILD_PACKAGE / "__main__.py"                      # what the child's interpreter runs
OUTPUT_CAP = 8000            # bytes of fd-level output kept per process
LINE_CAP = 8 * 2**20         # bytes of one record on the pipe: the largest answer any case needs is
                             # ~1.4 MB (problem 8's expansion trap); a longer line is "too large"
ITEMS_CAP = 20_000           # "," and ":" in one record: answers need under 200 (arrays travel as
                             # base64 text), so a record built to explode when decoded is refused first
TEXT_CAP = 4096              # characters of any text field of a record (messages, names, ...)
START_GAP_S = 5.0            # seconds allowed between one case's end and the next one's start
STARTUP_S = plan_mod.STARTUP_S   # interpreter + imports, before the file runs
# what native code prints when it cannot get memory (OpenBLAS, C++, glibc)
MEMORY_WORDS = ("memory allocation", "cannot allocate memory", "bad_alloc", "out of memory",
                "memoryerror", "failed to allocate")
# a record's statuses the child may send; every other status is the parent's to give
CHILD_STATUSES = {RunStatus.OK, RunStatus.NOT_IMPLEMENTED, RunStatus.ERROR, RunStatus.MEMORY_ERROR,
                  RunStatus.SYSTEM_EXIT, RunStatus.MISSING_FUNCTION, RunStatus.USES_REFERENCE}


class InfrastructureError(RuntimeError):
    """The attempt could not be run at all (the sandbox or the interpreter failed before
    the attempt's file was read): not the attempt's fault."""


@dataclass(frozen=True)
class Placement:
    """Where one attempt runs: an Isolation, and for USER the account it runs as. Its text
    ("jail", "process", "user:UID:GID", "fork", "none") is how the classroom's workers
    are told (``parse``)."""
    kind: Isolation
    uid: int | None = None      # USER: the unprivileged account the attempt runs as
    gid: int | None = None

    @classmethod
    def parse(cls, value) -> "Placement":
        """A Placement from itself, an Isolation, or its text."""
        if isinstance(value, Placement):
            return value
        kind, *ids = str(value).split(":")
        try:
            iso = Isolation(kind)
        except ValueError:
            iso = None
        if iso is None or (iso is Isolation.USER) != (len(ids) == 2):
            raise ValueError(f"isolation {value!r}: expected one of jail, process, user:UID:GID, fork, none")
        return cls(iso, *(int(i) for i in ids)) if ids else cls(iso)

    def __str__(self):
        return str(self.kind) if self.uid is None else f"{self.kind}:{self.uid}:{self.gid}"


@dataclass
class Job:
    token: str
    cases: list                 # (index, function name, args)
    timeouts: dict              # index -> seconds
    startup_s: float            # for the interpreter, the imports and the file itself
    payload: dict = field(default_factory=dict)  # everything else the child reads
    expect_alive: bool = False  # a fresh child says "alive" before it reads the attempt
    memory_after_start_mb: int | None = None  # the cgroup's cap, set at "alive": what the
                                # child holds then, plus this (a budget-bearing process)


@dataclass
class Watched:
    """What the watch loop saw."""
    records: dict = field(default_factory=dict)
    current: int | None = None   # the case running when the child stopped
    alive: bool = False          # the child started and is about to read the attempt
    ready: bool = False          # the file imported
    finished: bool = False       # the child said it was done
    killed_for: str | None = None  # "timeout" | "budget" (the whole attempt's time) | "too_large"
    output: bytes = b""
    output_total: int = 0


# --------------------------------------------------------------------------- 1. the job

def build_job(problem, path: str, cases: list, group: plan_mod.Group, plan: plan_mod.Plan,
              protected: list, provided: dict) -> Job:
    """What the child of one group needs: its cases, its memory budget, what it may import."""
    heavy = problem.needs_torch
    jobs = [(i, cases[i].function, cases[i].args) for i in group.cases]
    timeouts = {i: plan.timeouts[i] for i in group.cases}
    memory_mb = plan.budget_mb(group)
    token = secrets.token_hex(16)
    payload = {"token": token, "path": str(Path(path).resolve()), "cases": jobs,
               "memory_mb": memory_mb, "protected": protected, "provided": provided,
               "preimport": ["numpy", *(TORCH_STACK if heavy else ())], "rlimits": {},
               # a budget-bearing process loads what the file imports before its limit is set
               "preimport_attempt": group.own_budget,
               # macOS enforces no rlimit on data: numpy's own accounting is all there is
               "trace_memory_mb": memory_mb if sys.platform == "darwin" and group.own_budget else None,
               "wait_go": False,
               # numpy arrays handed over read-only by the OS (child.freeze_arrays); torch
               # problems keep writable inputs (a tensor sharing a read-only page would
               # crash on an in-place write instead of explaining it)
               "freeze_inputs": not heavy}
    if group.kernel:   # the judge launches the file's kernel itself (grader/child/kernel.py)
        k = problem.kernel
        payload["kernel"] = {"name": k.name, "launcher": k.launcher_source(), "launcher_name": k.launcher.__name__}
    return Job(token, jobs, timeouts, plan.startup_s, payload)


def _processes_of(uid: int):
    """(pid, /proc/PID/status fields) of every process whose real uid is ``uid`` (Linux)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue   # gone meanwhile
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            yield int(pid), fields


def _tasks_of(uid: int) -> int:
    """Processes and threads owned by uid right now."""
    return sum(int(f.get("Threads", "1").strip() or 1) for _, f in _processes_of(uid))


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


@dataclass
class Started:
    """A running child: the process, the result pipe, its output, and what to undo."""
    proc: object
    r_fd: int
    out_fd: int
    out_file: object = None            # the Popen pipe object (closed after), or None
    cgroup: limits.Cgroup | None = None
    user: int | None = None            # USER isolation: every process of this uid dies after
    go_fd: int | None = None           # the child waits for a byte here after "alive"


def _write_job(job: Job, folder: str) -> Path:
    job_file = Path(folder) / "job.pkl"
    fd = os.open(job_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pickle.dumps(job.payload))
    return job_file


def start_child(job: Job, problem, scratch: str, isolation: Placement, group: plan_mod.Group,
                plan: plan_mod.Plan) -> Started:
    """A fresh interpreter running the child package (grader/child/) in ``isolation`` (JAIL,
    USER or PROCESS)."""
    job.expect_alive = True
    heavy = problem.needs_torch
    r_fd, w_fd = os.pipe()
    go_r, go_w = os.pipe()   # the child's "go": after "alive", before the attempt's file
    cg = None
    try:
        if isolation.kind is Isolation.JAIL:
            cg = limits.create(plan.cgroup_mb(group) << 20, plan.max_pids)
            if cg is None:
                job.payload["rlimits"] = plan.rlimits(group, _tasks_of(os.getuid()))
            else:
                job.memory_after_start_mb = plan.budget_after_start_mb(group)
            job.payload["wait_go"] = True
            job_file = _write_job(job, scratch)
            argv = jail.command(str(CHILD_PACKAGE), str(job_file), job.payload["path"], w_fd, plan,
                                hide=[str(ROOT), *job.payload["protected"]])
            env, cwd, user = {}, scratch, None   # bwrap starts with nothing of ours
        elif isolation.kind is Isolation.USER:
            argv, env, cwd = _as_user(job, plan, group, scratch, isolation, w_fd)
            user = isolation.uid
        else:
            job.payload["rlimits"] = plan.rlimits(group, _tasks_of(os.getuid()))
            job_file = _write_job(job, scratch)
            argv = [sys.executable, "-I", "-u", str(CHILD), "--fd", str(w_fd), "--job", str(job_file)]
            # the learner's own environment (this is the unsandboxed courtesy), its caches in scratch
            env, cwd, user = plan.environment(scratch, scratch, inherit=dict(os.environ)), scratch, None
        if job.payload["wait_go"]:
            argv = [*argv, "--go", str(go_r)]
        extra = {"user": isolation.uid, "group": isolation.gid, "extra_groups": []} if user is not None else {}
        proc = subprocess.Popen(limits.wrap(argv, cg), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, pass_fds=(w_fd, go_r), cwd=cwd, env=env,
                                start_new_session=True, **extra)
    except BaseException:
        os.close(r_fd)
        os.close(go_w)
        if cg is not None:
            cg.remove()
        raise
    finally:
        os.close(w_fd)
        os.close(go_r)
    if not job.payload["wait_go"]:
        os.close(go_w)
        go_w = None
    return Started(proc, r_fd, proc.stdout.fileno(), proc.stdout, cg, user, go_w)


ROOT = CHILD_PACKAGE.parent.parent


def _as_user(job: Job, plan: plan_mod.Plan, group: plan_mod.Group, scratch: str, isolation: Placement, w_fd: int):
    """Gradescope without namespaces: the child as another user, who can read the child
    runner (a copy), the job and the attempt, and write only its own scratch folder."""
    os.chmod(scratch, 0o755)
    package = Path(scratch) / "child"
    shutil.copytree(CHILD_PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    for f in [package, *package.iterdir()]:
        os.chmod(f, 0o755 if f.is_dir() else 0o644)
    work = Path(scratch) / "work"
    work.mkdir(mode=0o700)
    os.chown(work, isolation.uid, isolation.gid)
    job.payload["rlimits"] = plan.rlimits(group, _tasks_of(isolation.uid))
    job_file = _write_job(job, scratch)
    os.chown(job_file, isolation.uid, isolation.gid)
    exe, _ = jail.interpreter()
    env = plan.environment(str(work), str(work))
    argv = [exe, "-I", "-S", "-u", str(package / "__main__.py"), "--fd", str(w_fd), "--job", str(job_file),
            "--sys-path", os.pathsep.join(jail.site_dirs())]
    return argv, env, str(work)


def kill_user(uid: int, gid: int | None = None, tries: int = 50) -> bool:
    """Every process of ``uid`` killed (a process of that uid sends kill(-1, SIGKILL),
    which reaches all of them but itself), until none is left. Root only."""
    exe, _ = jail.interpreter()
    for _ in range(tries):
        if not pids_of_user(uid):
            return True
        subprocess.run([exe, "-I", "-S", "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"],
                       user=uid, group=uid if gid is None else gid, extra_groups=[], cwd="/", env={}, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        time.sleep(0.02)
    return not pids_of_user(uid)


def pids_of_user(uid: int) -> set[int]:
    """Live (not zombie) processes whose real uid is ``uid``."""
    return {pid for pid, f in _processes_of(uid) if not f.get("State", "").strip().startswith("Z")}


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
    return Started(_Forked(pid), r_fd, o_r, None)


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

# the fields a record of each status the child sends may carry, besides status and output
_FIELDS = {RunStatus.OK: ("result", "mutated"),
           RunStatus.NOT_IMPLEMENTED: ("message",), RunStatus.ERROR: ("message", "type"),
           RunStatus.MEMORY_ERROR: ("message", "type"), RunStatus.SYSTEM_EXIT: ("message",),
           RunStatus.MISSING_FUNCTION: ("function",), RunStatus.USES_REFERENCE: ("uses",)}
_IMPORT_FIELDS = ("message", "type")
_LIST_ITEMS, _ITEM_CAP = 20, 300   # "uses" and "mutated": at most this many texts of this size


def _protocol_error(why: str) -> dict:
    return {"status": RunStatus.ERROR, "type": "ProtocolError",
            "message": said("the process running the attempt sent a record the judge cannot use ({why})", why=why)}


def clean_record(event: dict, import_error: bool = False) -> dict:
    """A record rebuilt from what came over the pipe, every field checked and bounded:
    graded code can write anything there (it holds the token), so a status the child
    never sends, a field of the wrong type or a result that does not decode becomes that
    attempt's failure ("ProtocolError") -- never an exception in the judge, never a
    status only the parent may give (timeout, crash, ...), never an unbounded text."""
    def text(v, limit=TEXT_CAP):
        return cut(v, limit) if isinstance(v, str) else f"<{type(v).__name__}>"

    def texts(v):
        items = v if isinstance(v, list) else [v]
        return [text(x, _ITEM_CAP) for x in items[:_LIST_ITEMS]]

    status = event.get("status")
    if import_error and status is None:
        rec, allowed = {"event": "import_error"}, _IMPORT_FIELDS
    else:
        try:
            status = RunStatus(status) if isinstance(status, str) else None
        except ValueError:
            status = None
        if status not in CHILD_STATUSES:
            rec = _protocol_error(f"status {text(event.get('status'), 80)}")
            return dict(rec, event="import_error") if import_error else rec
        rec, allowed = {"status": status}, _FIELDS[status]
        if import_error:
            rec["event"] = "import_error"
    for k in allowed:
        if k not in event or k == "result":
            continue
        v = event[k]
        if k in ("uses", "mutated"):
            rec[k] = texts(v)
        else:
            rec[k] = text(v)
    if "output" in event:
        rec["output"] = text(event["output"], _child.OUTPUT_KEEP + 200)
    if status is RunStatus.OK:
        try:
            _child.decode(event.get("result"))
        except Exception as e:  # noqa: BLE001 -- a garbled result: the attempt's failure
            return _protocol_error(f"the result could not be read: {type(e).__name__}: {str(e)[:200]}")
        rec["result"] = event.get("result")
    return rec


def _handle(event: dict, job: Job, seen: Watched, started: Started) -> float | None:
    """Apply one protocol event; returns a new deadline (seconds from now) or None."""
    ev = event.get("event")
    if ev == "alive" and not seen.alive:
        seen.alive = True
        _go(job, started)
    elif ev == "import_error":
        seen.records["import_error"] = clean_record(event, import_error=True)
        seen.finished = True
    elif ev == "ready":
        seen.ready = True
        return START_GAP_S
    elif ev == "start" and event.get("i") in job.timeouts:
        seen.current = event["i"]
        return job.timeouts[seen.current]
    elif ev == "done" and event.get("i") in job.timeouts:
        seen.records[event["i"]] = clean_record(event)
        seen.current = None
        return START_GAP_S
    elif ev is _UNREADABLE and seen.current is not None:
        seen.records[seen.current] = _protocol_error(f"a record of over {ITEMS_CAP:,} items")
        seen.current = None
        return START_GAP_S
    elif ev == "finished":
        seen.finished = True
    return None


def _go(job: Job, started: Started) -> None:
    """The child is alive and has loaded its libraries, and the attempt has not run yet:
    set a budget-bearing process's memory cap from what it holds now, then let it go on."""
    if started.go_fd is None:
        return
    if job.memory_after_start_mb is not None:
        now = started.cgroup.memory_now()
        if now is None or not started.cgroup.set_memory(now + (job.memory_after_start_mb << 20)):
            raise InfrastructureError(said("the memory budget of this case could not be set on its cgroup"))
    try:
        os.write(started.go_fd, b"g")
    except OSError:
        pass   # the child is gone: its end is explained like any other
    os.close(started.go_fd)
    started.go_fd = None


def watch(started: Started, job: Job, stop_at: float) -> Watched:
    """Read results and output until the child finishes, dies, misses a case's deadline,
    or reaches ``stop_at`` (time.monotonic()): the end of the whole attempt's budget."""
    import select  # not on every platform; only needed here
    proc, r_fd, out_fd = started.proc, started.r_fd, started.out_fd
    seen = Watched()
    parts: list = []
    buf = b""
    open_fds = {r_fd, out_fd}
    deadline = time.monotonic() + job.startup_s
    while open_fds and not seen.finished:
        now = time.monotonic()
        if min(deadline, stop_at) <= now:
            seen.killed_for = "timeout" if deadline <= stop_at else "budget"
            kill(proc)
            break
        rlist, _, _ = select.select(list(open_fds), [], [], min(min(deadline, stop_at) - now, 1.0))
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
            *lines, buf = buf.split(b"\n")
            if len(buf) > LINE_CAP or any(len(line) > LINE_CAP for line in lines):
                seen.killed_for = "too_large"
                kill(proc)
                open_fds.clear()
                break
            for line in lines:
                event = _event(line, job.token)
                if event is not None:
                    new = _handle(event, job, seen, started)
                    if new is not None:
                        deadline = time.monotonic() + new
    seen.output = b"".join(parts)[:OUTPUT_CAP]
    return seen


_UNREADABLE = object()   # the "event" of a line too large to decode (JSON cannot make this value)


def _event(line: bytes, token: str) -> dict | None:
    """One protocol line as a dict, or None: not from the harness (no token), or not JSON.
    A line with more items than any honest record has becomes an unreadable record of its
    case instead of being decoded (it could be built to take gigabytes once parsed)."""
    tok, _, body = line.partition(b"\t")
    if tok != token.encode("ascii"):
        return None
    if body.count(b",") + body.count(b":") > ITEMS_CAP:
        return {"event": _UNREADABLE}
    try:
        event = json.loads(body)
    except (ValueError, RecursionError, MemoryError):
        return None
    return event if isinstance(event, dict) else None


def reap(started: Started, seen: Watched):
    """Wait for the child to end (briefly), then make sure everything it started is gone:
    its process group; in the jail the PID namespace (it ends with bwrap) and the cgroup;
    as another user, every process of that user."""
    proc = started.proc
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
    if started.cgroup is not None:
        started.cgroup.kill_all()
    if started.user is not None:
        kill_user(started.user)


# --------------------------------------------------------------------------- 4. an early end

def explain_death(proc, job: Job, seen: Watched, jailed: bool = False, oom_cap_mb: int = 0,
                  budget_s: float | None = None) -> None:
    """The child stopped before finishing: pin a record on the case it was running (or on
    the import), and mark the cases after it not run. ``jailed``: the exit status is
    bwrap's (128 + N for a child killed by signal N); ``oom_cap_mb``: the cgroup's memory
    cap (of that many MB) killed it; ``budget_s``: the whole attempt's time budget, which
    ran out. Every record here is the parent's: its numbers are the parent's own."""
    if seen.finished:
        return
    if seen.current is not None:
        where = seen.current
    elif not seen.ready:
        where = "import"
    else:  # died between two cases (e.g. a thread it left behind): blame the next one
        where = next((i for i in job.timeouts if i not in seen.records), None)
    rc = proc.returncode
    if jailed and rc is not None and rc > 128:
        rc = -(rc - 128)
    printed = seen.output.decode("utf-8", "replace").lower()
    if seen.killed_for == "budget":
        rec = {"status": RunStatus.TIMEOUT, "budget_s": budget_s}
    elif seen.killed_for == "timeout":
        limit = job.timeouts.get(seen.current, job.startup_s) if where != "import" else job.startup_s
        rec = {"status": RunStatus.TIMEOUT, "timeout_s": limit}
    elif seen.killed_for == "too_large":
        rec = {"status": RunStatus.TOO_LARGE}
    elif oom_cap_mb:
        rec = {"status": RunStatus.OUT_OF_MEMORY, "code": rc, "cap_mb": oom_cap_mb}
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


def run(problem, path: str | None, cases: list, group: plan_mod.Group, plan: plan_mod.Plan,
        protected: list, provided: dict, placement: Placement, module=None,
        stop_at: float | None = None) -> tuple[dict, str]:
    """Run one group of the plan where ``placement`` says: a fresh child for a file (JAIL,
    PROCESS or USER), a fork for ``module`` (FORK: an object holding a notebook's
    functions; runner.grade has checked that the two agree). ``stop_at``
    (time.monotonic()) ends the whole attempt's budget.
    Returns ({case index: record} for the group's cases, output). Raises
    InfrastructureError when the child never got as far as reading the attempt."""
    stop_at = time.monotonic() + plan.total_s if stop_at is None else stop_at
    with tempfile.TemporaryDirectory(prefix="mla-judge-") as scratch:
        job = build_job(problem, path or "<notebook>", cases, group, plan, protected, provided)
        if module is None:
            started = start_child(job, problem, scratch, placement, group, plan)
        else:
            job.payload["path"] = path or "<notebook>"
            job.startup_s = START_GAP_S + problem.timeout_s  # nothing to import
            started = start_fork(job, module, scratch)
        seen = Watched(killed_for="interrupted")  # until watch returns
        try:
            seen = watch(started, job, stop_at)
        finally:
            reap(started, seen)
            if started.go_fd is not None:
                os.close(started.go_fd)
            if started.out_file is not None:
                started.out_file.close()
            else:
                os.close(started.out_fd)
            os.close(started.r_fd)
            oom = 0
            if started.cgroup and started.cgroup.oom_killed():
                oom = group.memory_mb if group.own_budget else started.cgroup.limits["memory"] >> 20
            if started.cgroup is not None:
                started.cgroup.remove()
    if job.expect_alive and not seen.alive:
        printed = _output_text(seen).strip()
        printed = f": {printed[-300:]}" if printed else ""
        if seen.killed_for in ("timeout", "budget"):
            raise InfrastructureError(said("the {isolation} for this attempt did not start in time{printed}",
                                           isolation=str(placement.kind), printed=printed))
        raise InfrastructureError(said("the {isolation} for this attempt did not start (exit code {code}){printed}",
                                       isolation=str(placement.kind), code=str(started.proc.returncode),
                                       printed=printed))
    explain_death(started.proc, job, seen, jailed=placement.kind is Isolation.JAIL, oom_cap_mb=oom,
                  budget_s=plan.total_s)
    return seen.records, _output_text(seen)
