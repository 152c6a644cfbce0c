"""The part of the judge that runs the learner's code, and nothing else.

Three ways in, one way of running a case (``run_case``):
  * a fresh process: ``python -I -u grader/child.py --fd N --job FILE`` (the command line
    judge; ``main`` below). The course's own packages are never imported here, so graded
    code cannot reach the reference answers: imports of them are refused by a finder,
    reads of their source files by an audit hook.
  * a forked copy of a notebook's kernel (``serve_forked``), for ``check()`` in Jupyter:
    the functions live in that process, and so does the course's code, so a profiler
    notices any call into it instead.
  * in-process (the browser, Windows): the same profiler, without limits.

Only plain data goes back (``encode``): numbers, strings, containers and numeric numpy
arrays. Each record has a ``status`` from ``RunStatus``. On the wire every line is
``<token>\\t<json>``; the judge ignores lines without the token it chose.
"""
from __future__ import annotations

import base64
import copy
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import os
import pickle
import sys
import traceback
import types
from enum import Enum

OUTPUT_KEEP = 4000  # characters of printed output kept per case
TEXT_KEEP = 4000    # characters of any other text a record carries (a traceback, a message)
SOURCE_CAP = 4 * 2**20   # bytes of the attempt's file: a larger file is refused unread
_REAL_EXIT = os._exit  # the harness's own way out (graded code gets a tripwire instead)


class RunStatus(str, Enum):
    """What happened to one call of a learner's function (or to the process running it)."""
    OK = "ok"                              # returned a value
    NOT_IMPLEMENTED = "not_implemented"    # raised NotImplementedError: not started
    ERROR = "error"                        # raised another exception
    MEMORY_ERROR = "memory_error"          # raised MemoryError under the cap
    SYSTEM_EXIT = "system_exit"            # called sys.exit / exit / os._exit
    MISSING_FUNCTION = "missing_function"  # the file does not define it
    USES_REFERENCE = "uses_reference"      # reached for the course's reference code
    TIMEOUT = "timeout"                    # still running at its deadline (killed)
    CRASHED = "crashed"                    # killed by a signal (segfault, ...)
    OUT_OF_MEMORY = "out_of_memory"        # native code gave up allocating and ended the process
    EXITED = "exited"                      # the process ended without a Python exception
    TOO_LARGE = "too_large"                # the result was too large to send back
    NOT_RUN = "not_run"                    # an earlier case took the process down

    def __str__(self):
        return self.value


class ReferenceUseError(PermissionError):
    """Graded code reached for the course's own implementation (import or source read)."""


class _ExitCalled(BaseException):
    """os._exit inside graded code: turned into an exception so the verdict can say so."""


def cut(text: str, limit: int = TEXT_KEEP) -> str:
    """``text`` if it is short enough, else its first ``limit`` characters and a note of
    how much was cut. Every text a record carries passes through here (and again through
    the judge's own check of the record: grader/sandbox.py clean_record)."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" \u2026 ({len(text) - limit:,} more characters cut)"


class _CappedText(io.TextIOBase):
    """stdout/stderr replacement that keeps the first OUTPUT_KEEP characters."""

    def __init__(self):
        self.parts, self.kept, self.total = [], 0, 0

    def writable(self):
        return True

    def write(self, s):
        s = str(s)
        self.total += len(s)
        if self.kept < OUTPUT_KEEP:
            piece = s[:OUTPUT_KEEP - self.kept]
            self.parts.append(piece)
            self.kept += len(piece)
        return len(s)

    def text(self):
        out = "".join(self.parts)
        if self.total > self.kept:
            out += f"\n... ({self.total - self.kept} more characters of output not shown)"
        return out


# ----------------------------------------------------------------------- plain data

def encode(x, depth=0):
    """Learner result -> JSON-able tree. Arrays become {"__nd__": dtype, shape, b64}."""
    if depth > 20:
        return {"__unsupported__": "a structure nested too deeply"}
    if x is None or isinstance(x, (bool, str)):
        return str(x) if isinstance(x, str) and type(x) is not str else x
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        x = float(x)
        return {"__float__": repr(x)} if x != x or x in (float("inf"), float("-inf")) else x
    if isinstance(x, dict):
        return {"__dict__": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in x.items()]}
    if isinstance(x, (list, tuple)):
        return {"__list__" if isinstance(x, list) else "__tuple__": [encode(v, depth + 1) for v in x]}
    mod = type(x).__module__ or ""
    if mod.startswith("torch") and hasattr(x, "detach"):
        t = x.detach().cpu()
        if not t.dtype.is_complex and t.dtype.is_floating_point and t.element_size() < 4:
            t = t.float()  # bfloat16 / float16 / fp8 have no (or no safe) numpy twin
        x = t.numpy()
    if mod.startswith("numpy") or hasattr(x, "__array_interface__") or mod.startswith("torch"):
        import numpy as np
        if isinstance(x, np.generic):
            return encode(x.item(), depth + 1)
        if isinstance(x, np.ndarray):
            if x.dtype.kind not in "biuf":
                return {"__unsupported__": f"numpy array of dtype {x.dtype}"}
            a = np.ascontiguousarray(x)
            return {"__nd__": a.dtype.str, "shape": list(a.shape),
                    "b64": base64.b64encode(a.tobytes()).decode("ascii")}
    return {"__unsupported__": f"{type(x).__module__}.{type(x).__qualname__}"}


def decode(x):
    """Inverse of encode, safe on untrusted input: builds only numbers, strings,
    containers and numeric numpy arrays."""
    if isinstance(x, list):  # bare JSON lists never come from encode; be lenient
        return [decode(v) for v in x]
    if not isinstance(x, dict):
        return x
    if "__float__" in x:
        return float(x["__float__"]) if x["__float__"] in ("nan", "inf", "-inf") else float("nan")
    if "__list__" in x:
        return [decode(v) for v in x["__list__"]]
    if "__tuple__" in x:
        return tuple(decode(v) for v in x["__tuple__"])
    if "__dict__" in x:
        out = {}
        for k, v in x["__dict__"]:
            k = decode(k)
            try:
                hash(k)
            except TypeError:
                k = repr(k)
            out[k] = decode(v)
        return out
    if "__nd__" in x:
        import numpy as np
        dt = np.dtype(str(x["__nd__"]))
        if dt.kind not in "biuf" or dt.itemsize > 16:
            return {"__unsupported__": f"array of dtype {dt}"}
        shape = tuple(int(s) for s in x["shape"])
        raw = base64.b64decode(x["b64"])
        return np.frombuffer(raw, dtype=dt).reshape(shape).copy()
    if "__unsupported__" in x:
        return {"__unsupported__": str(x["__unsupported__"])}
    return {str(k): decode(v) for k, v in x.items()}


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


# ----------------------------------------------------------------------- running

def learner_traceback(exc: BaseException, path: str) -> str:
    """The exception with only the frames of the learner's own file."""
    # lookup_lines=False: read source lines only for the frames shown (the learner's)
    frames = traceback.StackSummary.extract(traceback.walk_tb(exc.__traceback__), lookup_lines=False)
    if path.startswith("<"):  # functions handed over in-process (a notebook): drop our frames
        here = os.path.abspath(__file__)
        frames = [f for f in frames if os.path.abspath(f.filename) != here]
    else:
        frames = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)]
    lines = [f"  {os.path.basename(f.filename)}, line {f.lineno}, in {f.name}: {(f.line or '').strip()}"
             for f in frames[-6:]]
    msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return "\n".join(lines + [msg])


def _vm_data_bytes():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def set_memory_headroom(mb):
    """Cap private writable memory (RLIMIT_DATA) at its current size + mb, soft and hard
    limits alike, before the attempt's file is read: a process cannot raise its hard
    limit, so the code under test cannot lift it. Returns the previous limits, or None
    where unsupported. RLIMIT_DATA (not RLIMIT_AS) so that torch/CUDA's large
    address-space reservations still work."""
    try:
        import resource
    except ImportError:
        return None
    now = _vm_data_bytes()
    if now is None:
        return None
    old = resource.getrlimit(resource.RLIMIT_DATA)
    cap = now + int(mb) * 2**20
    hard = old[1]
    if hard != resource.RLIM_INFINITY and hard < cap:
        cap = hard
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
    except (ValueError, OSError):
        return None
    return old


def _start_tracing() -> bool:
    """Count allocations (numpy reports its array buffers to tracemalloc)."""
    import tracemalloc
    if tracemalloc.is_tracing():
        return False
    tracemalloc.start()
    return True


def _stop_tracing() -> int:
    import tracemalloc
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def _is_memory_error(e: BaseException) -> bool:
    text = str(e).lower()
    return isinstance(e, MemoryError) or (isinstance(e, RuntimeError) and (
        "can't allocate memory" in text or "out of memory" in text))


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


def load_module(path: str, name: str = "learner_solution", source: bytes | None = None):
    """Import the file at `path` as module `name`; from `source` (its bytes, read before
    the guards went up) when given, so that no cached bytecode beside it is needed."""
    if source is None:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    exec(compile(source, path, "exec", dont_inherit=True), mod.__dict__)
    return mod


def _reference_record(uses):
    return {"status": RunStatus.USES_REFERENCE, "uses": uses}


# ----------------------------------------------------------------------- inputs must not change

def freeze_arrays(cases) -> bool:
    """Hand every numpy array of the cases' arguments over read-only, by the operating
    system: their bytes move into one sealed memfd (no process can write it any more,
    this one included) mapped read-only, and each argument becomes a view of it. An
    in-place write (``x *= 2``, ``x.sort()``) then raises numpy's "read-only" error, and
    no patch of this harness can make it succeed; the judge turns that error into
    "changed its input in place" (grader/runner.py). Lists and dicts stay ordinary Python
    objects: for them the judge can only compare before and after (``changed_inputs``),
    which an attempt that rewrites this harness could fool. Linux only; False elsewhere
    (nothing is changed). Called before the attempt's file is read."""
    import numpy as np
    try:
        import fcntl
        import mmap
        seals = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL
        make = os.memfd_create
    except (ImportError, AttributeError):
        return False
    found = []   # (container, key, array)

    def walk(container, key, depth=0):
        v = container[key]
        if type(v) is np.ndarray and v.dtype.kind in "biufc" and v.size:
            found.append((container, key, v))
        elif type(v) in (list, dict) and depth < 20:
            for k in (range(len(v)) if type(v) is list else list(v)):
                walk(v, k, depth + 1)
    for _, _, args in cases:
        for k in list(args):
            walk(args, k)
    if not found:
        return True
    offsets, size = [], 0
    for _, _, a in found:
        offsets.append(size)
        size += -(-a.nbytes // 64) * 64
    fd = make("judge-inputs", os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, size)
        with mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) as w:
            for (_, _, a), off in zip(found, offsets):
                w[off:off + a.nbytes] = a.tobytes(order="A")
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
        view = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
    finally:
        os.close(fd)
    for (container, key, a), off in zip(found, offsets):
        order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
        container[key] = np.ndarray(a.shape, a.dtype, buffer=view, offset=off, order=order)
    return True


def snapshot(x, depth=0):
    """An immutable, deep record of an argument as the judge sent it (numbers, strings,
    None, numpy arrays, and lists / tuples / dicts of them), to compare after the call.
    Immutable (bytes, tuples) so that nothing the attempt reaches can edit it."""
    import numpy as np
    if depth > 50:
        return ("deep",)
    t = type(x)
    if t is np.ndarray:
        a = np.ascontiguousarray(x)
        return ("nd", a.dtype.str, tuple(a.shape), a.tobytes())
    if t is list or t is tuple:
        return (t.__name__, tuple(snapshot(v, depth + 1) for v in x))
    if t is dict:
        return ("dict", tuple((k, snapshot(v, depth + 1)) for k, v in x.items()))
    if x is None or t in (bool, int, float, str, bytes, complex) or isinstance(x, np.generic):
        return ("val", t, x)
    return ("obj", t, id(x))  # anything else: the same object must still be there


def _plain(v, depth=0) -> bool:
    """Only builtin data all the way down (so that repr runs none of the attempt's code)."""
    t = type(v)
    if t in (str, int, float, bool, type(None)):
        return True
    if t in (list, tuple) and depth < 4 and len(v) <= 50:
        return all(_plain(x, depth + 1) for x in v)
    return False


def _shown(snap_or_value, snapped=True) -> str:
    """A short, safe rendering (never calls the attempt's code: builtins only)."""
    v = restore(snap_or_value) if snapped else snap_or_value
    if _plain(v):
        text = repr(v)
        return text if len(text) <= 60 else text[:57] + "..."
    t = type(v)
    return "an array" if t.__module__ == "numpy" and t.__name__ == "ndarray" else "another kind of object"


def restore(snap):
    """The value a snapshot records (a fresh copy)."""
    import numpy as np
    kind = snap[0]
    if kind == "nd":
        return np.frombuffer(snap[3], dtype=np.dtype(snap[1])).reshape(snap[2]).copy()
    if kind in ("list", "tuple"):
        items = [restore(v) for v in snap[1]]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {k: restore(v) for k, v in snap[1]}
    if kind == "val":
        return snap[2]
    return f"<{snap[1].__name__}>"


def _same(snap, now) -> bool:
    return first_change(snap, now, "") is None


def first_change(snap, now, where: str) -> str | None:
    """Where `now` differs from the snapshot, in words ("waiting[2] was ('r3', 5), now
    ('r3', 2)", "running: the same items in another order"), or None when it does not."""
    import numpy as np
    kind = snap[0]
    t = type(now)
    if kind == "nd":
        if t is not np.ndarray:
            return f"{where} is now {_shown(now, False)} (it was an array)"
        if now.dtype.str != snap[1] or tuple(now.shape) != snap[2]:
            return (f"{where} is now an array of shape {tuple(now.shape)} and dtype {now.dtype} "
                    f"(it was {snap[2]}, {np.dtype(snap[1])})")
        raw = np.ascontiguousarray(now).tobytes()
        if raw == snap[3]:
            return None
        before = restore(snap)
        item = before.dtype.itemsize
        diff = np.frombuffer(raw, np.uint8).reshape(-1, item) != np.frombuffer(snap[3], np.uint8).reshape(-1, item)
        changed = np.flatnonzero(diff.any(axis=1))
        i = int(changed[0])
        idx = tuple(int(j) for j in np.unravel_index(i, before.shape)) if before.ndim else ()
        at = f"{where}[{', '.join(map(str, idx))}]" if idx else where
        return (f"{at} was {before.flat[i].item()!r}, now {now.flat[i].item()!r} ({len(changed)} of "
                f"{before.size} values changed)")
    if kind in ("list", "tuple"):
        want = list if kind == "list" else tuple
        if t is not want:
            return f"{where} is now {_shown(now, False)} (it was a {kind})"
        items = snap[1]
        if len(now) != len(items):
            verb = "removed" if len(now) < len(items) else "added"
            first = next((i for i in range(min(len(now), len(items))) if not _same(items[i], now[i])),
                         min(len(now), len(items)))
            return (f"{where} has {len(now)} item{'s' * (len(now) != 1)}, it had {len(items)}: "
                    f"items were {verb} (the first difference is at {where}[{first}])")
        changes = [i for i in range(len(items)) if not _same(items[i], now[i])]
        if not changes:
            return None
        unused = list(range(len(items)))
        for v in now:  # a reordering: every item still there exactly once
            hit = next((j for j in unused if _same(items[j], v)), None)
            if hit is None:
                break
            unused.remove(hit)
        else:
            return f"{where}: the same items in another order (was {_shown(snap)}, now {_shown(now, False)})"
        i = changes[0]
        return first_change(items[i], now[i], f"{where}[{i}]")
    if kind == "dict":
        if t is not dict:
            return f"{where} is now {_shown(now, False)} (it was a dict)"
        keys = [k for k, _ in snap[1]]
        if list(now.keys()) != keys:
            return f"{where}'s keys are now {_shown(list(now.keys()), False)} (they were {keys!r:.60})"
        for k, v in snap[1]:
            c = first_change(v, now[k], f"{where}[{k!r}]")
            if c:
                return c
        return None
    if kind == "val":
        if t is not snap[1]:
            return f"{where} is now {_shown(now, False)} (it was {_shown(snap)})"
        if now == snap[2] or (now != now and snap[2] != snap[2]):
            return None
        return f"{where} was {_shown(snap)}, now {_shown(now, False)}"
    if kind == "obj":
        return None if (t is snap[1] and id(now) == snap[2]) else f"{where} was replaced"
    return None


def changed_inputs(kept: dict, args: dict) -> list:
    """[words] for every argument that differs from its snapshot; each text starts with the
    argument's name ("waiting has 2 items, ...", "x[1, 2] was ...": plain strings, as the
    protocol carries them), which is how the judge tells which argument changed."""
    out = []
    for k, snap in kept.items():
        try:
            c = first_change(snap, args[k], k)
        except Exception as e:  # noqa: BLE001 -- whatever it became, it is not what was sent
            c = f"{k} changed ({type(e).__name__} while comparing it)"
        if c:
            out.append(c)
    return out


def run_case(fn, args: dict, path: str, trace_memory_mb=None, check_inputs=True, profiler=None,
             kept: dict | None = None) -> dict:
    """Call fn(**args) and describe what happened as a plain dict. The process's memory
    limits were set before the attempt's file was read (``main``, ``serve_forked``);
    ``trace_memory_mb`` adds numpy's own accounting where the system enforces no data
    limit (macOS: a courtesy for self-study, not a boundary)."""
    if kept is None:   # the arguments as sent (main takes them before the attempt is read)
        kept = {k: snapshot(v) for k, v in args.items()} if check_inputs else {}
    out, err = _CappedText(), _CappedText()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    tracing = _start_tracing() if trace_memory_mb else False
    WATCH.take()
    rec = {}
    try:
        try:
            if profiler is not None:
                with profiler:
                    result = fn(**args)
            else:
                result = fn(**args)
            peak = _stop_tracing() if tracing else 0
            tracing = False
            if trace_memory_mb and peak > trace_memory_mb * 2**20:
                rec = {"status": RunStatus.MEMORY_ERROR, "type": "MemoryError",
                       "message": f"it allocated {peak / 2**20:.0f} MB at peak (numpy arrays), "
                                  f"over this case's {trace_memory_mb} MB"}
            else:
                rec = {"status": RunStatus.OK, "result": encode(result)}
        finally:
            if tracing:
                _stop_tracing()
    except NotImplementedError as e:
        rec = {"status": RunStatus.NOT_IMPLEMENTED, "message": cut(str(e))}
    except SystemExit as e:
        rec = {"status": RunStatus.SYSTEM_EXIT, "message": cut(f"SystemExit({e.code!r})", 300)}
    except _ExitCalled as e:
        rec = {"status": RunStatus.SYSTEM_EXIT, "message": cut(f"os._exit({e.args[0]!r})", 300)}
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 -- everything the learner raises is data
        rec = {"status": RunStatus.MEMORY_ERROR if _is_memory_error(e) else RunStatus.ERROR,
               "message": cut(learner_traceback(e, path)), "type": cut(type(e).__name__, 200)}
    finally:
        sys.stdout, sys.stderr = saved
    uses = WATCH.take()
    exits = WATCH.take_exits()
    if uses:  # even if the attempt caught the refusal and carried on
        rec = _reference_record(uses)
    elif exits and rec.get("status") != RunStatus.SYSTEM_EXIT:  # os._exit from another thread
        rec = {"status": RunStatus.SYSTEM_EXIT, "message": cut(f"os._exit({exits[0]!r}), from a thread", 300)}
    printed = out.text() + err.text()
    if printed:
        rec["output"] = printed
    changed = changed_inputs(kept, args)
    if changed:
        rec["mutated"] = changed
    return rec


def import_failure(exc: BaseException, path: str) -> dict:
    """The record for a file that could not be imported."""
    uses = WATCH.take()
    if uses:
        return dict(_reference_record(uses), event="import_error")
    if isinstance(exc, SystemExit):
        return {"event": "import_error", "type": "SystemExit",
                "message": cut(f"the file called exit ({exc.code!r}) while being imported", 300)}
    if isinstance(exc, _ExitCalled):
        return {"event": "import_error", "type": "SystemExit",
                "message": cut(f"the file called os._exit({exc.args[0]!r}) while being imported", 300)}
    return {"event": "import_error", "message": cut(learner_traceback(exc, path)), "type": cut(type(exc).__name__, 200)}


def snapshots(cases) -> dict:
    """{case index: the snapshots of its arguments}, taken before the attempt's file is
    read: their memory is the harness's, and no later code can touch them."""
    return {i: {k: snapshot(v) for k, v in args.items()} for i, _, args in cases}


def run_cases(module, path, cases, send, profiler=None, trace_memory_mb=None, kept: dict | None = None):
    """Run each case and send its record; cases: (index, function name, args)."""
    for i, fname, args in cases:
        send({"event": "start", "i": i})
        fn = getattr(module, fname, None)
        if not callable(fn):
            rec = {"status": RunStatus.MISSING_FUNCTION, "function": fname}
        else:
            rec = run_case(fn, args, path, trace_memory_mb, profiler=profiler,
                           kept=None if kept is None else kept[i])
        try:
            line = {"event": "done", "i": i, **rec}
            json.dumps(line)
        except (TypeError, ValueError) as e:
            line = {"event": "done", "i": i, "status": RunStatus.ERROR,
                    "message": cut(f"the result could not be sent back ({e})")}
        send(line)
    send({"event": "finished"})


def run_in_process(path, cases, module=None, reference_folders=(), allowed_files=()):
    """Yield (index, record) for each case, in this process (browser / Windows).
    cases: list of (index, function name, args). ``module`` may be any
    object holding the functions (then ``path`` is only used to trim tracebacks)."""
    profiler = (ReferenceProfiler(reference_folders, [*allowed_files, __file__])
                if reference_folders else None)
    if module is None:
        try:
            if profiler is not None:
                with profiler:
                    module = load_module(path)
            else:
                module = load_module(path)
        except BaseException as e:  # noqa: BLE001
            yield None, import_failure(e, path)
            return
        uses = WATCH.take()
        if uses:
            yield None, dict(_reference_record(uses), event="import_error")
            return
    for i, fname, args in cases:
        fn = getattr(module, fname, None)
        if not callable(fn):
            yield i, {"status": RunStatus.MISSING_FUNCTION, "function": fname}
            continue
        yield i, run_case(fn, copy.deepcopy(args), path, profiler=profiler)


def _channel(fd: int, token: str):
    stream = os.fdopen(fd, "w", buffering=1)

    def send(obj):
        stream.write(token + "\t" + json.dumps(obj) + "\n")
        stream.flush()
    return send


def serve_forked(job: dict, module, fd: int):
    """In a forked copy of a notebook's kernel: limits, guards, then the cases."""
    send = _channel(fd, job["token"])
    if job.get("freeze_inputs"):
        freeze_arrays(job["cases"])
    if job["memory_mb"]:
        set_memory_headroom(job["memory_mb"])
    install_guard(job["scratch"], protected=job["protected"], readable=[__file__])
    trip_os_exit()
    if job.get("kernel"):   # the notebook's own kernel object, with the judge's launcher
        from grader.kernel_harness import launch_with   # a notebook's kernel process has the course
        k = job["kernel"]
        launch = launch_with(k["launcher"], k["launcher_name"], getattr(module, k["name"]))
        module = types.SimpleNamespace(**{fname: launch for _, fname, _ in job["cases"]})
    send({"event": "ready"})
    profiler = ReferenceProfiler(job["protected"], allowed_files=[__file__])
    run_cases(module, job["path"], job["cases"], send, profiler=profiler, trace_memory_mb=job.get("trace_memory_mb"))


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


def set_rlimits(spec: dict) -> None:
    """Hard limits on this process and all it starts, for runs without a cgroup (see
    grader/limits.py): address space (current size + headroom), files, processes."""
    try:
        import resource
    except ImportError:
        return
    wanted = []
    if spec.get("as_headroom_mb"):
        try:
            with open("/proc/self/status") as f:
                size = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmSize:"))
            wanted.append((resource.RLIMIT_AS, size + int(spec["as_headroom_mb"]) * 2**20))
        except (OSError, StopIteration, ValueError):
            pass
    if spec.get("fsize"):
        wanted.append((resource.RLIMIT_FSIZE, int(spec["fsize"])))
    if spec.get("nproc") and hasattr(resource, "RLIMIT_NPROC"):
        wanted.append((resource.RLIMIT_NPROC, int(spec["nproc"])))
    for which, value in wanted:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass


def kernel_launcher(kernel: dict, cases: list, source: bytes, path: str):
    """For a problem whose answer must be a kernel's: an object whose function (the one the
    cases call) launches the file's kernel with the judge's own launcher. Only the kernel
    is taken from the file (grader/kernel_harness.py); nothing else of it runs here."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the harness lies beside this file
    import kernel_harness
    module = kernel_harness.kernel_module(source, path, kernel["name"], os.getcwd())
    launch = kernel_harness.launch_with(kernel["launcher"], kernel["launcher_name"], getattr(module, kernel["name"]))
    return types.SimpleNamespace(**{fname: launch for _, fname, _ in cases})


def attempt_imports(source: bytes, limit: int = 32) -> list[str]:
    """The top-level packages the attempt's source imports (``import a.b, c as d``,
    ``from e.f import g``), found by a linear scan of its lines, not by running it."""
    names: list[str] = []
    for line in source.decode("utf-8", "replace").splitlines():
        body = line.lstrip(" \t")
        if body.startswith("from "):
            parts = [body[5:].split()[0] if body[5:].split() else ""]
        elif body.startswith("import "):
            parts = [p.strip().split()[0] for p in body[7:].split(";")[0].split(",") if p.strip()]
        else:
            continue
        for part in parts:
            top = part.split(".")[0]
            if top.isidentifier() and top not in names and top not in COURSE_PACKAGES:
                names.append(top)
        if len(names) >= limit:
            break
    return names


def preimport(names) -> None:
    """Import library packages before the attempt runs (their memory is then the
    interpreter's, not the attempt's); one that fails to import is left to the attempt."""
    for m in names:
        try:
            __import__(m)
        except BaseException:  # noqa: BLE001 -- ImportError, SystemExit from a library: the attempt's to meet
            pass


def warm_up_blas() -> None:
    """OpenBLAS allocates its work buffers at the first matrix product: make that happen
    now, in the interpreter's share of memory, not in the budget of the attempt's case."""
    import numpy as np
    for dtype in (np.float64, np.float32):
        a = np.ones((512, 512), dtype)   # large enough for OpenBLAS's buffered path on every core type
        a @ a


def main():
    die_with_parent()
    if "--sys-path" in sys.argv:   # run with -S (no site, no .pth files): the packages by hand
        sys.path.extend(p for p in sys.argv[sys.argv.index("--sys-path") + 1].split(os.pathsep) if p)
    fd = int(sys.argv[sys.argv.index("--fd") + 1])
    go = int(sys.argv[sys.argv.index("--go") + 1]) if "--go" in sys.argv else None
    job_path = sys.argv[sys.argv.index("--job") + 1]
    with open(job_path, "rb") as f:
        job = pickle.load(f)
    try:
        os.unlink(job_path)
    except OSError:
        pass  # read-only in the bubblewrap sandbox, where nothing else can see it
    send = _channel(fd, job["token"])
    path = job["path"]
    sys.dont_write_bytecode = True
    try:
        with open(path, "rb") as f:
            source = f.read(SOURCE_CAP + 1)
    except OSError as e:
        source, unreadable = None, f"cannot read {path}: {e}"
    else:
        unreadable = f"the file is over {SOURCE_CAP >> 20} MB" if len(source) > SOURCE_CAP else None
    preimport(job.get("preimport", []))
    if job.get("preimport_attempt") and source is not None and unreadable is None:
        preimport(attempt_imports(source))
        warm_up_blas()
    if job.get("freeze_inputs"):
        freeze_arrays(job["cases"])
        import warnings   # torch.as_tensor of a read-only array works, and warns about it
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    kept = snapshots(job["cases"])
    set_rlimits(job.get("rlimits", {}))
    if job["memory_mb"]:
        set_memory_headroom(job["memory_mb"])
    send({"event": "alive"})  # the judge may now set this process's memory cap from outside
    if go is not None:
        os.read(go, 1)       # ... and says when it has
        os.close(go)
    # from here on, whatever happens is the attempt's doing
    if unreadable is not None:
        send({"event": "import_error", "message": cut(unreadable), "type": "OSError"})
        return
    # the judge starts this process in its own scratch folder
    install_guard(os.getcwd(), protected=job["protected"], readable=[path, __file__])
    block_course_imports(job.get("provided", {}))
    trip_os_exit()
    try:
        module = kernel_launcher(job["kernel"], job["cases"], source, path) if job.get("kernel") else \
            load_module(path, source=source)
    except BaseException as e:  # noqa: BLE001
        send(import_failure(e, path))
        return
    uses = WATCH.take()
    if uses:
        send(dict(_reference_record(uses), event="import_error"))
        return
    send({"event": "ready"})
    run_cases(module, path, job["cases"], send, trace_memory_mb=job.get("trace_memory_mb"), kept=kept)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # leave now: threads or atexit hooks the learner's code started must not keep the
    # process alive (the judge would wait for them)
    _REAL_EXIT(0)
