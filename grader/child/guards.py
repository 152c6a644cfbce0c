"""The Python-level guards of the child: what graded code may not read, write, start,
signal or import, and what the guards saw. In the OS sandbox (grader/jail.py) they are a
second line: there the course is not in the sandbox at all; without it, they are all there is.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys

from .protocol import RunStatus

# this package's own files: the guards let the harness read them (it may import one lazily)
_HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_FILES = sorted(os.path.join(_HERE, f) for f in os.listdir(_HERE) if f.endswith(".py"))


class ReferenceUseError(PermissionError):
    """Graded code reached for the course's own implementation (import or source read)."""

class _ExitCalled(BaseException):
    """os._exit inside graded code: turned into an exception so the verdict can say so."""

# ----------------------------------------------------------------------- data the attempt may import

class DataRecord:
    """A read-only record of named fields: what a spec lets graded code import from the
    course (e.g. the GPU table) -- the numbers, without the methods that compute answers.
    Asking for one of those methods counts as using the reference."""

    def __init__(self, type_name: str, fields: dict, methods=()):
        object.__setattr__(self, "_type", type_name)
        object.__setattr__(self, "_fields", dict(fields))
        object.__setattr__(self, "_methods", frozenset(methods))

    def __getattr__(self, name):
        fields = object.__getattribute__(self, "_fields")
        if name in fields:
            return fields[name]
        kind = object.__getattribute__(self, "_type")
        if name in object.__getattribute__(self, "_methods"):
            WATCH.saw_reference(f"{kind}.{name}()")
            raise ReferenceUseError(f"{kind}.{name}() is the course's reference implementation; graded "
                                    f"code gets only the data ({', '.join(fields)})")
        raise AttributeError(
            f"{object.__getattribute__(self, '_type')} has no attribute {name!r} in graded code: "
            f"only its data is available ({', '.join(fields)}); compute the rest yourself")

    def __setattr__(self, name, value):
        raise AttributeError("the course's data is read-only")

    def __repr__(self):
        fields = object.__getattribute__(self, "_fields")
        inner = ", ".join(f"{k}={v!r}" for k, v in fields.items())
        return f"{object.__getattribute__(self, '_type')}({inner})"

def rebuild_data(x):
    """Plain data from the judge (see runner.data_view) -> values with DataRecords."""
    if isinstance(x, dict) and "__record__" in x:
        return DataRecord(x["__record__"], {k: rebuild_data(v) for k, v in x["fields"].items()},
                          x.get("methods", ()))
    if isinstance(x, dict):
        return {k: rebuild_data(v) for k, v in x.items()}
    if isinstance(x, list):
        return [rebuild_data(v) for v in x]
    return x

# ----------------------------------------------------------------------- the guards

class Watch:
    """What the guards saw while graded code ran: use of the course's reference, calls of
    os._exit. One per process; ``take`` hands out and clears what was seen during one case."""

    def __init__(self):
        self.reference_uses: list[str] = []
        self.exit_calls: list = []

    def saw_reference(self, what: str):
        if what not in self.reference_uses:
            self.reference_uses.append(what)

    def take(self) -> list:
        seen = list(self.reference_uses)
        self.reference_uses.clear()
        return seen

    def take_exits(self) -> list:
        calls, self.exit_calls = self.exit_calls, []
        return calls

WATCH = Watch()

# Audit events that change the file system (their path arguments are checked) and
# events that start another program (refused outright: a child process would not be
# under this guard).
_PATH_EVENTS = {"os.remove", "os.rmdir", "os.mkdir", "os.rename", "os.replace", "os.symlink",
                "os.link", "os.truncate", "os.chmod", "os.chown", "os.utime", "shutil.rmtree",
                "shutil.copyfile", "shutil.move"}

_SPAWN_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                 "os.fork", "os.forkpty", "pty.spawn"}

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC

def _under(path: str, folders) -> bool:
    return any(path == f or path.startswith(f + os.sep) for f in folders)

def install_guard(scratch: str, protected=(), readable=()):
    """From now on, in this process: refuse writes outside `scratch`, the start of other
    programs, reads inside the `protected` folders (the course's reference code, except
    the files in `readable`: the attempt itself), and reads of other processes' /proc
    entries. An audit hook cannot be removed from Python code, so graded code cannot edit
    the judge or the specs to fake a later pass, nor read the reference to copy it.
    (Native code, e.g. through ctypes, is not covered: this guards against Python, it is
    not an operating-system sandbox.)"""
    scratch = os.path.realpath(scratch)
    protected = tuple(os.path.realpath(p) for p in protected)
    readable = {os.path.realpath(p) for p in readable}
    own_proc = (f"/proc/{os.getpid()}", "/proc/self", "/proc/thread-self")

    def real(path):
        try:
            return os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return None

    def inside_scratch(path) -> bool:
        if isinstance(path, int):  # an already-open descriptor (stdout, the result pipe)
            return True
        r = real(path)
        return r is not None and (r == os.devnull or _under(r, (scratch,)))

    def refuse_read(path) -> str | None:
        if isinstance(path, int):
            return None
        r = real(path)
        if r is None:
            return None
        if protected and _under(r, protected) and r not in readable:
            return r
        if r.startswith("/proc/") and r.split("/")[2].isdigit() and not _under(r, own_proc):
            return r
        return None

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                      (isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writing and not inside_scratch(path):
                raise PermissionError(f"graded code may not write to {os.fsdecode(path)!s}: the judge only "
                                      f"allows writes inside its scratch folder")
            bad = refuse_read(path)
            if bad is not None:
                WATCH.saw_reference(f"reading {bad}")
                raise ReferenceUseError(f"graded code may not read {bad}: it belongs to the course's "
                                        "reference implementation or to the judge")
        elif event in _PATH_EVENTS:
            for a in args:
                if isinstance(a, (str, bytes, os.PathLike)) and not inside_scratch(a):
                    raise PermissionError(f"graded code may not change {os.fsdecode(a)!s} ({event}): "
                                          f"the judge only allows changes inside its scratch folder")
        elif event in _SPAWN_EVENTS:
            raise PermissionError(f"graded code may not start other programs ({event})")
        elif event in ("os.kill", "os.killpg") and args and args[0] not in (0, os.getpid()):
            raise PermissionError(f"graded code may not signal other processes ({event})")

    sys.addaudithook(hook)

# the course's packages: graded code may not import them (except what a spec provides);
# the sandbox hides installed copies of them too (grader/jail.py)
COURSE_PACKAGES = ("mlacourse", "grader", "classroom", "solutions", "kernels")

class _CourseBlocker(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """First on sys.meta_path: imports of the course's packages either get the data a
    spec provides (a made-up module holding only that data) or are refused."""

    def __init__(self, provided: dict):
        self.provided = provided  # {"mlacourse.hardware": {"GPUS": ...}}
        self.parents = {n.rsplit(".", i)[0] for n in provided for i in range(n.count(".") + 1)}

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in COURSE_PACKAGES:
            return None
        if fullname in self.provided or fullname in self.parents:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname not in self.provided)
        WATCH.saw_reference(f"import {fullname}")
        allowed = ", ".join(sorted(self.provided)) or "nothing"
        raise ReferenceUseError(f"import {fullname}: graded code may not import the course's reference "
                                f"implementation (from the course it may import: {allowed})")

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        # parents are made as empty packages (is_package above), so only data to fill in
        for name, value in self.provided.get(module.__name__, {}).items():
            setattr(module, name, value)

def block_course_imports(provided: dict):
    """Refuse imports of the course's packages from now on; `provided` maps module names
    to the {name: plain data} graded code may import instead."""
    for name in list(sys.modules):
        if name.split(".")[0] in COURSE_PACKAGES:
            del sys.modules[name]
    sys.meta_path.insert(0, _CourseBlocker({m: {k: rebuild_data(v) for k, v in names.items()}
                                            for m, names in provided.items()}))

def trip_os_exit():
    """os._exit in graded code raises instead of ending the process silently, so the
    verdict can say what happened (the harness keeps the real one)."""
    def _exit(code=0):
        WATCH.exit_calls.append(code)  # seen even if it was called from a thread
        raise _ExitCalled(code)
    os._exit = _exit
    try:
        import posix
        posix._exit = _exit
    except ImportError:
        pass

class ReferenceProfiler:
    """For code that shares a process with the course (a notebook, the browser): while
    active, notes any call into a function defined under the reference folders."""

    def __init__(self, folders, allowed_files=()):
        self.folders = tuple(os.path.realpath(f) for f in folders)
        self.allowed = {os.path.realpath(f) for f in allowed_files}
        self._seen_files: dict = {}

    def _is_reference(self, filename: str) -> bool:
        hit = self._seen_files.get(filename)
        if hit is None:
            r = os.path.realpath(filename) if not filename.startswith("<") else filename
            hit = _under(r, self.folders) and r not in self.allowed
            self._seen_files[filename] = hit
        return hit

    def _profile(self, frame, event, arg):
        if event == "call" and self._is_reference(frame.f_code.co_filename):
            mod = frame.f_globals.get("__name__", "?")
            WATCH.saw_reference(f"{mod}.{frame.f_code.co_name}")

    def __enter__(self):
        import threading
        self._old = sys.getprofile()
        sys.setprofile(self._profile)
        threading.setprofile(self._profile)
        return self

    def __exit__(self, *exc):
        import threading
        sys.setprofile(self._old)
        threading.setprofile(None)
        return False

def _reference_record(uses):
    return {"status": RunStatus.USES_REFERENCE, "uses": uses}

def die_with_parent():
    """Linux: ask the kernel to kill this process when the judge that started it dies, so
    graded code cannot outlive the judge (and signal whatever process adopts it)."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the judge died before the request was made
        _REAL_EXIT(70)
