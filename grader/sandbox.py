"""Run a learner's attempt away from the judge and bring back plain records.

Where it runs (``records.Isolation``, chosen by runner.grade; a ``Placement`` adds the
account for "user"):
  jail     a bubblewrap sandbox (grader/jail.py) in a per-attempt cgroup
           (grader/limits.py): the operating system is the boundary. Classroom grading
           requires it; the learner's judge uses it wherever bwrap works.
  process  a fresh ``python -I`` process with the judge's Python-level guard (an audit
           hook and an import blocker in grader/child.py): a courtesy for self-study
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

A record is the child's dict for one case (grader/child.py, ``RunStatus``), checked and
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
from .child import RunStatus
from .records import Isolation
from .spec import TORCH_STACK

CHILD = Path(_child.__file__).resolve()
OUTPUT_CAP = 8000            # characters of fd-level output kept per run
RECORD_CAP = 256 * 2**20     # bytes: a result larger than this is refused
START_GAP_S = 5.0            # seconds allowed between one case's end and the next one's start
STARTUP_S = {"numpy": 20.0, "torch": 60.0}  # interpreter + imports, before the file runs
# what native code prints when it cannot get memory (OpenBLAS, C++, glibc)
MEMORY_WORDS = ("memory allocation", "cannot allocate memory", "bad_alloc", "out of memory",
                "memoryerror", "failed to allocate")
# the whole attempt (every process it starts, its files in the sandbox's tmpfs, memfds):
# the interpreter and its imports, plus the largest case's memory_mb, plus this margin
BASE_MEMORY_MB = {"numpy": 512, "torch": 2048}
NO_CAP_MEMORY_MB = 16384       # a GPU run (CUDA maps large host regions): a loose backstop
MAX_PIDS = {"numpy": 64, "torch": 128}   # processes and threads, in all
FILE_MB = 64                   # RLIMIT_FSIZE where no cgroup caps the files together


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
    cases: list                 # (index, function name, args, memory_mb)
    timeouts: dict              # index -> seconds
    startup_s: float            # for the interpreter, the imports and the file itself
    payload: dict = field(default_factory=dict)  # everything else the child reads
    expect_alive: bool = False  # a fresh child says "alive" before it reads the attempt


@dataclass
class Watched:
    """What the watch loop saw."""
    records: dict = field(default_factory=dict)
    current: int | None = None   # the case running when the child stopped
    alive: bool = False          # the child started and is about to read the attempt
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


def stack(problem) -> str:
    """The key of the tables above: "torch" for a problem that needs torch and Triton
    (Problem.needs_torch: a slower start, more memory and threads), else "numpy"."""
    return "torch" if problem.needs_torch else "numpy"


# --------------------------------------------------------------------------- 1. the job

def build_job(problem, path: str, cases: list, protected: list, provided: dict) -> Job:
    heavy = problem.needs_torch
    jobs = [(i, c.function, c.args, c.memory_mb) for i, c in enumerate(cases)]
    timeouts = {i: (c.timeout_s or problem.timeout_s) for i, c in enumerate(cases)}
    # CUDA's driver maps large private regions of host memory: no cap for GPU runs
    memory_mb = None if heavy and has_gpu() else problem.memory_mb
    token = secrets.token_hex(16)
    payload = {"token": token, "path": str(Path(path).resolve()), "cases": jobs,
               "memory_mb": memory_mb, "protected": protected, "provided": provided,
               "preimport": ["numpy", *(TORCH_STACK if heavy else ())], "rlimits": {}}
    startup = STARTUP_S[stack(problem)] + problem.timeout_s
    return Job(token, jobs, timeouts, startup, payload)


def memory_cap_mb(problem, cases: list) -> int:
    """The cap on everything one attempt holds at once (cgroup, or RLIMIT_AS headroom)."""
    if problem.needs_torch and has_gpu():
        return NO_CAP_MEMORY_MB
    biggest = max([c.memory_mb or problem.memory_mb or 0 for c in cases] + [problem.memory_mb or 0])
    return BASE_MEMORY_MB[stack(problem)] + biggest + jail.TMPFS_MB[stack(problem)]


def fallback_rlimits(problem, cases: list, uid: int | None = None) -> dict:
    """Where no cgroup holds the attempt: per-process limits the child sets on itself."""
    out = {"fsize": FILE_MB << 20}
    if not (problem.needs_torch and has_gpu()):
        out["as_headroom_mb"] = memory_cap_mb(problem, cases)
    if sys.platform.startswith("linux"):
        # RLIMIT_NPROC counts every process and thread of the user (or of the sandbox's
        # user namespace); as root it does not apply at all
        out["nproc"] = MAX_PIDS[stack(problem)] + _tasks_of(os.getuid() if uid is None else uid)
    return out


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


def child_env(problem, scratch: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    # the child may write only inside its scratch folder (child.install_guard): point
    # temp files and the caches libraries like to write there too
    for k in ("TMPDIR", "TRITON_CACHE_DIR", "MPLCONFIGDIR", "XDG_CACHE_HOME"):
        env[k] = scratch
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = "1"  # fast start, and memory use that does not depend on the core count
    if problem.needs_torch and "TRITON_INTERPRET" not in env and not has_gpu():
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


@dataclass
class Started:
    """A running child: the process, the result pipe, its output, and what to undo."""
    proc: object
    r_fd: int
    out_fd: int
    out_file: object = None            # the Popen pipe object (closed after), or None
    cgroup: limits.Cgroup | None = None
    user: int | None = None            # USER isolation: every process of this uid dies after


def _write_job(job: Job, folder: str) -> Path:
    job_file = Path(folder) / "job.pkl"
    fd = os.open(job_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pickle.dumps(job.payload))
    return job_file


def start_child(job: Job, problem, scratch: str, isolation: Placement, cases: list) -> Started:
    """A fresh interpreter running grader/child.py in ``isolation`` (JAIL, USER or PROCESS)."""
    job.expect_alive = True
    heavy = problem.needs_torch
    r_fd, w_fd = os.pipe()
    cg = None
    try:
        if isolation.kind is Isolation.JAIL:
            cg = limits.create(memory_cap_mb(problem, cases) << 20, MAX_PIDS[stack(problem)])
            if cg is None:
                job.payload["rlimits"] = fallback_rlimits(problem, cases)
            job_file = _write_job(job, scratch)
            argv = jail.command(str(CHILD), str(job_file), job.payload["path"], w_fd, heavy,
                                interpret_triton=problem.needs_torch and not has_gpu(),
                                hide=[str(ROOT), *job.payload["protected"]], gpu=heavy and has_gpu())
            env, cwd, user = {}, scratch, None   # bwrap starts with nothing of ours
        elif isolation.kind is Isolation.USER:
            argv, env, cwd = _as_user(job, problem, cases, scratch, isolation, w_fd)
            user = isolation.uid
        else:
            job.payload["rlimits"] = fallback_rlimits(problem, cases)
            job_file = _write_job(job, scratch)
            argv = [sys.executable, "-I", "-u", str(CHILD), "--fd", str(w_fd), "--job", str(job_file)]
            env, cwd, user = child_env(problem, scratch), scratch, None
        extra = {"user": isolation.uid, "group": isolation.gid, "extra_groups": []} if user is not None else {}
        proc = subprocess.Popen(limits.wrap(argv, cg), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, pass_fds=(w_fd,), cwd=cwd, env=env,
                                start_new_session=True, **extra)
    except BaseException:
        os.close(r_fd)
        if cg is not None:
            cg.remove()
        raise
    finally:
        os.close(w_fd)
    return Started(proc, r_fd, proc.stdout.fileno(), proc.stdout, cg, user)


ROOT = CHILD.parent.parent


def _as_user(job: Job, problem, cases: list, scratch: str, isolation: Placement, w_fd: int):
    """Gradescope without namespaces: the child as another user, who can read the child
    runner (a copy), the job and the attempt, and write only its own scratch folder."""
    os.chmod(scratch, 0o755)
    shutil.copyfile(CHILD, Path(scratch) / "child.py")
    os.chmod(Path(scratch) / "child.py", 0o644)
    work = Path(scratch) / "work"
    work.mkdir(mode=0o700)
    os.chown(work, isolation.uid, isolation.gid)
    job.payload["rlimits"] = fallback_rlimits(problem, cases, uid=isolation.uid)
    job_file = _write_job(job, scratch)
    os.chown(job_file, isolation.uid, isolation.gid)
    exe, _ = jail.interpreter()
    env = jail.environment(problem.needs_torch, problem.needs_torch and not has_gpu())
    env.update({"HOME": str(work), "TMPDIR": str(work), "MPLCONFIGDIR": str(work / ".matplotlib"),
                "XDG_CACHE_HOME": str(work / ".cache"), "TRITON_CACHE_DIR": str(work / ".triton")})
    argv = [exe, "-I", "-S", "-u", str(Path(scratch) / "child.py"), "--fd", str(w_fd), "--job", str(job_file),
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

_STATUSES = {s.value for s in RunStatus}
_TEXT_FIELDS = ("message", "output", "type", "function", "signal")


def clean_record(event: dict, import_error: bool = False) -> dict:
    """A record rebuilt from what came over the pipe, every field checked: graded code
    can write anything there (it holds the token), so a field of the wrong type, a
    status the judge does not know or a result that does not decode becomes that
    attempt's failure -- never an exception in the judge."""
    def text(v):
        return v if isinstance(v, str) else repr(v)[:2000]

    def strings(v):
        return [text(x) for x in v][:20] if isinstance(v, list) else [text(v)]

    rec = {}
    if import_error:
        rec["event"] = "import_error"
    status = event.get("status")
    if status is not None or not import_error:
        if status not in _STATUSES:
            return {"status": RunStatus.ERROR, "type": "ProtocolError", **rec,
                    "message": f"the process running the attempt sent a record the judge cannot read "
                               f"(status {text(status)[:80]})"}
        rec["status"] = RunStatus(status)
    for k in _TEXT_FIELDS:
        if k in event:
            rec[k] = text(event[k])
    for k in ("uses", "mutated"):
        if k in event:
            rec[k] = strings(event[k])
    if "launches" in event:
        rec["launches"] = event["launches"] if type(event["launches"]) is int else 0
    if "from_kernel" in event:
        rec["from_kernel"] = event["from_kernel"] is True
    for k in ("code", "timeout_s"):
        if k in event:
            rec[k] = event[k] if type(event[k]) in (int, float) else None
    for k, v in event.items():   # any other field: kept only as plain scalars or a list of them
        if k not in rec and k not in ("event", "i", "result") and _plain(v):
            rec[k] = v
    if rec.get("status") == RunStatus.OK:
        try:
            _child.decode(event.get("result"))
        except Exception as e:  # noqa: BLE001 -- a garbled result: the attempt's failure
            return {"status": RunStatus.ERROR, "type": "ProtocolError",
                    "message": f"the result sent back could not be read ({type(e).__name__}: {str(e)[:200]})"}
        rec["result"] = event.get("result")
    return rec


def _plain(v) -> bool:
    scalar = (str, int, float, bool, type(None))
    return isinstance(v, scalar) or (isinstance(v, list) and len(v) <= 100 and all(isinstance(x, scalar) for x in v))


def _handle(event: dict, job: Job, seen: Watched) -> float | None:
    """Apply one protocol event; returns a new deadline (seconds from now) or None."""
    ev = event.get("event")
    if ev == "alive":
        seen.alive = True
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
                except (ValueError, RecursionError):
                    continue
                if isinstance(event, dict):
                    new = _handle(event, job, seen)
                    if new is not None:
                        deadline = time.monotonic() + new
    seen.output = b"".join(parts)[:OUTPUT_CAP]
    return seen


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

def explain_death(proc, job: Job, seen: Watched, jailed: bool = False, oom_cap_mb: int = 0) -> None:
    """The child stopped before finishing: pin a record on the case it was running (or on
    the import), and mark the cases after it not run. ``jailed``: the exit status is
    bwrap's (128 + N for a child killed by signal N); ``oom_cap_mb``: the cgroup's memory
    cap (of that many MB) killed it."""
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
    if seen.killed_for == "timeout":
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


def run(problem, path: str | None, cases: list, protected: list, provided: dict,
        placement: Placement, module=None) -> tuple[dict, str]:
    """Run the cases where ``placement`` says: a fresh child for a file (JAIL, PROCESS or
    USER), a fork for ``module`` (FORK: an object holding a notebook's functions).
    Returns ({case index: record}, output). Raises InfrastructureError when the child never
    got as far as reading the attempt."""
    if (placement.kind is Isolation.FORK) != (module is not None) or placement.kind is Isolation.NONE:
        raise ValueError(f"cannot run {'a notebook' if module is not None else 'a file'} in {placement}: "
                         "a file runs in jail, process or user, a notebook's functions in a fork")
    with tempfile.TemporaryDirectory(prefix="mla-judge-") as scratch:
        job = build_job(problem, path or "<notebook>", cases, protected, provided)
        if module is None:
            started = start_child(job, problem, scratch, placement, cases)
        else:
            job.payload["path"] = path or "<notebook>"
            job.startup_s = START_GAP_S + problem.timeout_s  # nothing to import
            started = start_fork(job, module, scratch)
        seen = Watched(killed_for="interrupted")  # until watch returns
        try:
            seen = watch(started.proc, job, started.r_fd, started.out_fd)
        finally:
            reap(started, seen)
            if started.out_file is not None:
                started.out_file.close()
            else:
                os.close(started.out_fd)
            os.close(started.r_fd)
            oom = started.cgroup.limits["memory"] >> 20 if started.cgroup and started.cgroup.oom_killed() else 0
            if started.cgroup is not None:
                started.cgroup.remove()
    if job.expect_alive and not seen.alive:
        printed = _output_text(seen).strip()
        raise InfrastructureError(
            f"the {placement.kind} for this attempt did not start"
            + (" in time" if seen.killed_for == "timeout" else f" (exit code {started.proc.returncode})")
            + (f": {printed[-300:]}" if printed else ""))
    explain_death(started.proc, job, seen, jailed=placement.kind is Isolation.JAIL, oom_cap_mb=oom)
    return seen.records, _output_text(seen)
