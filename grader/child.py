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


def set_memory_headroom(mb, hard_too=False):
    """Cap private writable memory (RLIMIT_DATA) at its current size + mb (the hard
    limit too when hard_too, so the code under test cannot lift it). Returns the
    previous limits for restore_memory, or None where unsupported. RLIMIT_DATA (not
    RLIMIT_AS) so that torch/CUDA's large address-space reservations still work."""
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
        resource.setrlimit(resource.RLIMIT_DATA, (cap, cap if hard_too else hard))
    except (ValueError, OSError):
        return None
    return old


def restore_memory(old):
    if old is not None:
        import resource
        resource.setrlimit(resource.RLIMIT_DATA, old)


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

class Launch:
    """One `kernel[grid](...)` call of graded code: the tensors handed to it, with their
    contents just before and just after it ran (to tell what the kernel wrote)."""

    def __init__(self, run, args, kwargs):
        self.run, self.args, self.kwargs = run, args, kwargs
        self.tensors = [a for a in (*args, *kwargs.values()) if _is_tensor(a)]
        self.before = [t.detach().clone() for t in self.tensors]
        self.after = None

    def finished(self):
        self.after = [t.detach().clone() for t in self.tensors]

    def rerun_poisoned(self, k, unsure):
        """Run the launch again on copies of its tensors as they were before it, with
        tensor k's `unsure` positions set to a value the launch did not leave there (NaN,
        or 1.0 where it left NaN); return tensor k's contents afterwards."""
        import torch
        copies = {}

        def fresh(a):
            i = next((j for j, t in enumerate(self.tensors) if t is a), None)
            if i is None:
                return a
            if i not in copies:
                copies[i] = self.before[i].clone()
            return copies[i]
        args = [fresh(a) for a in self.args]
        kwargs = {key: fresh(a) for key, a in self.kwargs.items()}
        target = copies.get(k)
        if target is None:
            return None
        shape = tuple(target.shape)
        left_nan = torch.isnan(self.after[k])
        with torch.no_grad():  # in place: the strides the kernel uses stay
            target.masked_fill_(torch.as_tensor(unsure.reshape(shape), device=target.device) & ~left_nan,
                                float("nan"))
            target.masked_fill_(torch.as_tensor(unsure.reshape(shape), device=target.device) & left_nan, 1.0)
        self.run(*args, **kwargs)
        return _contents(target)


def _is_tensor(a) -> bool:
    return type(a).__module__.startswith("torch") and hasattr(a, "numel") and hasattr(a, "detach")


def _contents(t):
    """A tensor's values as a numpy array (bf16 / fp16 / fp8 widened to float32)."""
    x = t.detach()
    if x.dtype.is_floating_point and x.element_size() < 4:
        x = x.float()
    return x.cpu().numpy().copy()


def _equal(a, b):
    """Elementwise equality, NaN equal to NaN (numpy arrays of one shape)."""
    import numpy as np
    eq = a == b
    if a.dtype.kind == "f":
        eq = eq | (np.isnan(a) & np.isnan(b))
    return eq


class Watch:
    """What the guards saw while graded code ran: reference use, kernel launches.
    One per process; ``take`` hands out and clears what was seen during one case."""

    def __init__(self):
        self.reference_uses: list[str] = []
        self.exit_calls: list = []
        self.launches = 0
        self.launch_log: list = []  # Launch records of this case, in order

    def saw_reference(self, what: str):
        if what not in self.reference_uses:
            self.reference_uses.append(what)

    def take(self):
        seen = (list(self.reference_uses), self.launches)
        self.reference_uses.clear()
        self.launches = 0
        self.launch_log = []
        return seen

    def kernel_wrote(self, result) -> dict:
        """{"from_kernel": True} when every array in `result` is what this case's launches
        wrote: equal to the final contents of a tensor passed to a launch, unchanged since
        the last launch that had it, and every element of it written by a launch (changed
        by one, or -- where a launch left the value it found, e.g. a 0 over a zero-filled
        tensor -- written again when that launch is re-run with those elements poisoned).
        Otherwise from_kernel False and flat kernel_* fields saying what is wrong (why,
        leaf, of, size, count, rerun_error: plain scalars, as the protocol carries them)."""
        import numpy as np
        leaves = list(result) if isinstance(result, (tuple, list)) else [result]
        tensors = []
        for launch in self.launch_log:
            for t in launch.tensors:
                if not any(t is u for u in tensors):
                    tensors.append(t)
        final = []
        for t in tensors:
            try:
                final.append(_contents(t).ravel())
            except Exception:  # noqa: BLE001 -- a tensor we cannot read is no witness
                final.append(None)
        for i, leaf in enumerate(leaves):
            try:
                arr = _contents(leaf) if hasattr(leaf, "detach") else np.asarray(leaf)
                flat = arr.ravel().astype(np.float64)
            except Exception:  # noqa: BLE001
                return {"from_kernel": False, "kernel_leaf": i, "kernel_why": "unreadable"}
            notes = []
            for t, f in zip(tensors, final):
                if f is None or f.size != flat.size or not _equal(f.astype(np.float64), flat).all():
                    continue
                note = self._written(t, f)
                if note is None:
                    break
                notes.append(note)
            else:
                note = min(notes, key=lambda n: n.get("count", 0)) if notes else {"why": "not_a_launch_tensor"}
                note = dict(note, leaf=i, of=len(leaves), size=int(flat.size))
                return {"from_kernel": False, **{f"kernel_{k}": v for k, v in note.items()}}
        return {"from_kernel": True}

    def _written(self, t, final):
        """None when every element of tensor t was written by a launch, else a note."""
        import numpy as np
        mine = [(launch, next(j for j, u in enumerate(launch.tensors) if u is t))
                for launch in self.launch_log if any(u is t for u in launch.tensors)]
        last, k = mine[-1]
        after = _contents(last.after[k]).ravel()
        if not _equal(after, final).all():
            return {"why": "changed_after"}
        unsure = np.ones(final.size, bool)
        for launch, j in mine:
            unsure &= _equal(_contents(launch.before[j]).ravel(), _contents(launch.after[j]).ravel())
        if not unsure.any():
            return None
        if not last.after[k].dtype.is_floating_point:
            return None  # no NaN to poison an integer tensor with: trust the comparison above
        for launch, j in reversed(mine):
            try:
                got = launch.rerun_poisoned(j, unsure)
            except Exception as e:  # noqa: BLE001
                return {"why": "unwritten", "count": int(unsure.sum()),
                        "rerun_error": f"{type(e).__name__}: {e}"[:200]}
            if got is None:
                continue
            written = _equal(got.ravel(), _contents(launch.after[j]).ravel())  # not the poison
            unsure &= ~written
            if not unsure.any():
                return None
        return {"why": "unwritten", "count": int(unsure.sum())}

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


def count_kernel_launches():
    """If triton is loaded, record `kernel[grid](...)` launches (a problem whose point is
    writing a Triton kernel checks that one ran, and that it wrote the answer), and fill
    new torch tensors with NaN (see poison_new_tensors)."""
    poison_new_tensors()
    jit = sys.modules.get("triton.runtime.jit")
    base = getattr(jit, "KernelInterface", None)
    if base is None or getattr(base, "_judge_counted", False):
        return
    original = base.__getitem__

    def __getitem__(self, grid):
        launch = original(self, grid)

        def counted(*args, **kwargs):
            WATCH.launches += 1
            record = Launch(launch, args, kwargs)
            WATCH.launch_log.append(record)
            try:
                return launch(*args, **kwargs)
            finally:
                record.finished()
        return counted
    base.__getitem__ = __getitem__
    base._judge_counted = True


def poison_new_tensors():
    """If torch is loaded: torch.empty, empty_like, empty_strided and Tensor.new_empty fill
    floating tensors with NaN (their contents are undefined anyway), so that an output a
    kernel must write starts poisoned and a value it never wrote cannot pass for its work."""
    torch = sys.modules.get("torch")
    if torch is None or getattr(torch, "_judge_poisoned", False) or not hasattr(torch, "empty"):
        return

    def poisoned(make):
        def fn(*args, **kwargs):
            t = make(*args, **kwargs)
            try:
                if t.is_floating_point():
                    with torch.no_grad():
                        t.fill_(float("nan"))
            except Exception:  # noqa: BLE001 -- a tensor that cannot be filled stays as made
                pass
            return t
        fn.__name__ = getattr(make, "__name__", "empty")
        fn.__doc__ = getattr(make, "__doc__", None)
        return fn
    for name in ("empty", "empty_like", "empty_strided"):
        if hasattr(torch, name):
            setattr(torch, name, poisoned(getattr(torch, name)))
    if hasattr(torch, "Tensor") and hasattr(torch.Tensor, "new_empty"):
        torch.Tensor.new_empty = poisoned(torch.Tensor.new_empty)
    torch._judge_poisoned = True


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


def run_case(fn, args: dict, path: str, memory_mb=None, check_inputs=True, profiler=None) -> dict:
    """Call fn(**args) and describe what happened as a plain dict."""
    kept = {k: snapshot(v) for k, v in args.items()} if check_inputs else {}
    out, err = _CappedText(), _CappedText()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    old = set_memory_headroom(memory_mb) if memory_mb else None
    tracing = _start_tracing() if memory_mb else False
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
            if peak > memory_mb * 2**20 if memory_mb else False:
                # where RLIMIT_DATA is not enforced (macOS), numpy's own accounting decides
                rec = {"status": RunStatus.MEMORY_ERROR, "type": "MemoryError",
                       "message": f"it allocated {peak / 2**20:.0f} MB at peak (numpy arrays), "
                                  f"over this case's {memory_mb} MB"}
            else:
                rec = {"status": RunStatus.OK, "result": encode(result)}
                if WATCH.launches:
                    rec.update(WATCH.kernel_wrote(result))
        finally:
            if tracing:
                _stop_tracing()
            restore_memory(old)
    except NotImplementedError as e:
        rec = {"status": RunStatus.NOT_IMPLEMENTED, "message": str(e)}
    except SystemExit as e:
        rec = {"status": RunStatus.SYSTEM_EXIT, "message": f"SystemExit({e.code!r})"}
    except _ExitCalled as e:
        rec = {"status": RunStatus.SYSTEM_EXIT, "message": f"os._exit({e.args[0]!r})"}
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 -- everything the learner raises is data
        rec = {"status": RunStatus.MEMORY_ERROR if _is_memory_error(e) else RunStatus.ERROR,
               "message": learner_traceback(e, path), "type": type(e).__name__}
    finally:
        sys.stdout, sys.stderr = saved
    uses, launches = WATCH.take()
    exits = WATCH.take_exits()
    if uses:  # even if the attempt caught the refusal and carried on
        rec = _reference_record(uses)
    elif exits and rec.get("status") != RunStatus.SYSTEM_EXIT:  # os._exit from another thread
        rec = {"status": RunStatus.SYSTEM_EXIT, "message": f"os._exit({exits[0]!r}), from a thread"}
    rec["launches"] = launches
    printed = out.text() + err.text()
    if printed:
        rec["output"] = printed
    changed = changed_inputs(kept, args)
    if changed:
        rec["mutated"] = changed
    return rec


def import_failure(exc: BaseException, path: str) -> dict:
    """The record for a file that could not be imported."""
    uses, _ = WATCH.take()
    if uses:
        return dict(_reference_record(uses), event="import_error")
    if isinstance(exc, SystemExit):
        return {"event": "import_error", "type": "SystemExit",
                "message": f"the file called exit ({exc.code!r}) while being imported"}
    if isinstance(exc, _ExitCalled):
        return {"event": "import_error", "type": "SystemExit",
                "message": f"the file called os._exit({exc.args[0]!r}) while being imported"}
    return {"event": "import_error", "message": learner_traceback(exc, path), "type": type(exc).__name__}


def run_cases(module, path, cases, send, profiler=None):
    """Run each case and send its record; cases: (index, function name, args, memory_mb)."""
    for i, fname, args, memory_mb in cases:
        send({"event": "start", "i": i})
        fn = getattr(module, fname, None)
        if not callable(fn):
            rec = {"status": RunStatus.MISSING_FUNCTION, "function": fname}
        else:
            rec = run_case(fn, args, path, memory_mb, profiler=profiler)
        try:
            line = dict(rec, event="done", i=i)
            json.dumps(line)
        except (TypeError, ValueError) as e:
            line = {"event": "done", "i": i, "status": RunStatus.ERROR,
                    "message": f"the result could not be sent back ({e})"}
        send(line)
    send({"event": "finished"})


def run_in_process(path, cases, module=None, reference_folders=(), allowed_files=()):
    """Yield (index, record) for each case, in this process (browser / Windows).
    cases: list of (index, function name, args, memory_mb). ``module`` may be any
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
        uses, _ = WATCH.take()
        if uses:
            yield None, dict(_reference_record(uses), event="import_error")
            return
    for i, fname, args, memory_mb in cases:
        fn = getattr(module, fname, None)
        if not callable(fn):
            yield i, {"status": RunStatus.MISSING_FUNCTION, "function": fname}
            continue
        yield i, run_case(fn, copy.deepcopy(args), path, memory_mb, profiler=profiler)


def _channel(fd: int, token: str):
    stream = os.fdopen(fd, "w", buffering=1)

    def send(obj):
        stream.write(token + "\t" + json.dumps(obj) + "\n")
        stream.flush()
    return send


def serve_forked(job: dict, module, fd: int):
    """In a forked copy of a notebook's kernel: limits, guards, then the cases."""
    send = _channel(fd, job["token"])
    if job["memory_mb"]:
        set_memory_headroom(job["memory_mb"], hard_too=True)
    install_guard(job["scratch"], protected=job["protected"], readable=[__file__])
    trip_os_exit()
    count_kernel_launches()
    send({"event": "ready"})
    profiler = ReferenceProfiler(job["protected"], allowed_files=[__file__])
    run_cases(module, job["path"], job["cases"], send, profiler=profiler)


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


def main():
    die_with_parent()
    if "--sys-path" in sys.argv:   # run with -S (no site, no .pth files): the packages by hand
        sys.path.extend(p for p in sys.argv[sys.argv.index("--sys-path") + 1].split(os.pathsep) if p)
    fd = int(sys.argv[sys.argv.index("--fd") + 1])
    job_path = sys.argv[sys.argv.index("--job") + 1]
    with open(job_path, "rb") as f:
        job = pickle.load(f)
    try:
        os.unlink(job_path)
    except OSError:
        pass  # read-only in the bubblewrap sandbox, where nothing else can see it
    send = _channel(fd, job["token"])
    for m in job.get("preimport", []):
        try:
            __import__(m)
        except Exception:
            pass
    set_rlimits(job.get("rlimits", {}))
    if job["memory_mb"]:
        set_memory_headroom(job["memory_mb"], hard_too=True)
    send({"event": "alive"})  # from here on, whatever happens is the attempt's doing
    path = job["path"]
    sys.dont_write_bytecode = True
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as e:
        send({"event": "import_error", "message": f"cannot read {path}: {e}", "type": type(e).__name__})
        return
    # the judge starts this process in its own scratch folder
    install_guard(os.getcwd(), protected=job["protected"], readable=[path, __file__])
    block_course_imports(job.get("provided", {}))
    trip_os_exit()
    count_kernel_launches()
    try:
        module = load_module(path, source=source)
    except BaseException as e:  # noqa: BLE001
        send(import_failure(e, path))
        return
    uses, _ = WATCH.take()
    if uses:
        send(dict(_reference_record(uses), event="import_error"))
        return
    count_kernel_launches()  # triton may have been imported by the file itself
    send({"event": "ready"})
    run_cases(module, path, job["cases"], send)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # leave now: threads or atexit hooks the learner's code started must not keep the
    # process alive (the judge would wait for them)
    _REAL_EXIT(0)
