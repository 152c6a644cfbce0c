"""Runs a learner's file on a list of cases, in a separate process (or in-process where
there are no subprocesses, e.g. the browser).

This file is executed by path with ``python -I -u`` and imports nothing from the
grader: it must work in a bare interpreter. The judge writes a job (a pickle made by
the judge -- trusted) to a temp file and reads plain-data records back from a dedicated pipe
(``--fd``), one line each: ``<token>\\t<json>``. Lines without the job's random token
are ignored, so text the learner prints cannot pose as a record; and records are only
data (JSON, arrays as base64 bytes with a numeric dtype), so nothing the learner's code
does here can run code in the judge. The judge decides every verdict itself.

Records: {"event": "ready"} after the import; {"event": "start", "i": i} before case i;
{"event": "done", "i": i, "status": ..., ...} after it; {"event": "import_error", ...}.
Case statuses: ok (with "result"), not_implemented, error, memory_error, system_exit,
missing_function.
"""
from __future__ import annotations

import base64
import copy
import importlib.util
import io
import json
import os
import pickle
import sys
import traceback

OUTPUT_KEEP = 4000  # characters of printed output kept per case


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
        return x
    if isinstance(x, int):
        return x
    if isinstance(x, float):
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


# ----------------------------------------------------------------------- running

def learner_traceback(exc: BaseException, path: str) -> str:
    """The exception with only the frames of the learner's own file."""
    frames = traceback.extract_tb(exc.__traceback__)
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


# ----------------------------------------------------------------------- the guard

# Audit events that change the file system (their path arguments are checked) and
# events that start another program (refused outright: a child process would not be
# under this guard).
_PATH_EVENTS = {"os.remove", "os.rmdir", "os.mkdir", "os.rename", "os.replace", "os.symlink",
                "os.link", "os.truncate", "os.chmod", "os.chown", "os.utime", "shutil.rmtree",
                "shutil.copyfile", "shutil.move"}
_SPAWN_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                 "os.fork", "os.forkpty", "pty.spawn"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def install_guard(scratch: str):
    """From now on, refuse (PermissionError) writes outside `scratch` and the start of
    other programs. Installed after the judge's own imports and before the learner's
    file is imported; an audit hook cannot be removed from Python code, so graded code
    cannot edit the judge, the problem specs or other learners' files to fake a later
    pass. (Native code, e.g. through ctypes, is not covered: this is a guard against
    tampering from Python, not an operating-system sandbox.)"""
    scratch = os.path.realpath(scratch)
    allowed = (scratch + os.sep, os.devnull)

    def inside(path) -> bool:
        if isinstance(path, int):  # an already-open descriptor (stdout, the result pipe)
            return True
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return real == os.devnull or (real + os.sep).startswith(allowed[0])

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                      (isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writing and not inside(path):
                raise PermissionError(f"graded code may not write to {os.fsdecode(path)!s}: the judge only "
                                      f"allows writes inside its scratch folder")
        elif event in _PATH_EVENTS:
            for a in args:
                if isinstance(a, (str, bytes, os.PathLike)) and not inside(a):
                    raise PermissionError(f"graded code may not change {os.fsdecode(a)!s} ({event}): "
                                          f"the judge only allows changes inside its scratch folder")
        elif event in _SPAWN_EVENTS:
            raise PermissionError(f"graded code may not start other programs ({event})")

    sys.addaudithook(hook)


def load_module(path: str, name: str = "learner_solution"):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_case(fn, args: dict, path: str, memory_mb=None, check_inputs=True) -> dict:
    """Call fn(**args) and describe what happened as a plain dict."""
    kept = {}
    if check_inputs:
        for k, v in args.items():
            if hasattr(v, "copy") and hasattr(v, "shape"):
                kept[k] = v.copy()
    out, err = _CappedText(), _CappedText()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    old = set_memory_headroom(memory_mb) if memory_mb else None
    tracing = _start_tracing() if memory_mb else False
    rec = {}
    try:
        try:
            result = fn(**args)
            peak = _stop_tracing() if tracing else 0
            tracing = False
            if peak > memory_mb * 2**20 if memory_mb else False:
                # where RLIMIT_DATA is not enforced (macOS), numpy's own accounting decides
                rec = {"status": "memory_error", "type": "MemoryError",
                       "message": f"it allocated {peak / 2**20:.0f} MB at peak (numpy arrays), "
                                  f"over this case's {memory_mb} MB"}
            else:
                rec = {"status": "ok", "result": encode(result)}
        finally:
            if tracing:
                _stop_tracing()
            restore_memory(old)
    except NotImplementedError as e:
        rec = {"status": "not_implemented", "message": str(e)}
    except SystemExit as e:
        rec = {"status": "system_exit", "message": f"SystemExit({e.code!r})"}
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 -- everything the learner raises is data
        rec = {"status": "memory_error" if _is_memory_error(e) else "error",
               "message": learner_traceback(e, path), "type": type(e).__name__}
    finally:
        sys.stdout, sys.stderr = saved
    printed = out.text() + err.text()
    if printed:
        rec["output"] = printed
    if kept:
        import numpy as np
        changed = []
        for k, before in kept.items():
            try:
                same = np.array_equal(np.asarray(args[k]), before, equal_nan=True)
            except Exception:
                same = False
            if not same:
                changed.append(k)
        if changed:
            rec["mutated"] = changed
    return rec


def run_in_process(path, cases, functions=None, module=None):
    """Yield (index, record) for each case, in this process (browser / notebook).
    cases: list of (index, function name, args, memory_mb). ``module`` may be any
    object holding the functions (then ``path`` is only used to trim tracebacks)."""
    if module is None:
        try:
            module = load_module(path)
        except BaseException as e:  # noqa: BLE001
            yield None, {"event": "import_error", "message": learner_traceback(e, path),
                         "type": type(e).__name__}
            return
    for i, fname, args, memory_mb in cases:
        fn = getattr(module, fname, None)
        if not callable(fn):
            yield i, {"status": "missing_function", "function": fname}
            continue
        args = copy.deepcopy(args)
        yield i, run_case(fn, args, path, memory_mb)


def main():
    fd = int(sys.argv[sys.argv.index("--fd") + 1])
    job_path = sys.argv[sys.argv.index("--job") + 1]
    with open(job_path, "rb") as f:
        job = pickle.load(f)
    os.unlink(job_path)
    token = job["token"]
    channel = os.fdopen(fd, "w", buffering=1)

    def send(obj):
        channel.write(token + "\t" + json.dumps(obj) + "\n")
        channel.flush()

    for p in job.get("sys_path", []):
        if p not in sys.path:
            sys.path.append(p)
    for m in job.get("preimport", []):
        try:
            __import__(m)
        except Exception:
            pass
    if job["memory_mb"]:
        set_memory_headroom(job["memory_mb"], hard_too=True)
    install_guard(os.getcwd())  # the judge starts this process in its own scratch folder
    path = job["path"]
    try:
        module = load_module(path)
    except SystemExit as e:
        send({"event": "import_error", "message": f"the file called exit ({e.code!r}) while being imported",
              "type": "SystemExit"})
        return
    except BaseException as e:  # noqa: BLE001
        send({"event": "import_error", "message": learner_traceback(e, path),
              "type": type(e).__name__})
        return
    send({"event": "ready"})
    for i, fname, args, memory_mb in job["cases"]:
        send({"event": "start", "i": i})
        fn = getattr(module, fname, None)
        if not callable(fn):
            rec = {"status": "missing_function", "function": fname}
        else:
            rec = run_case(fn, args, path, memory_mb)
        try:
            line = json.dumps(dict(rec, event="done", i=i))
        except (TypeError, ValueError) as e:
            line = json.dumps({"event": "done", "i": i, "status": "error",
                               "message": f"the result could not be sent back ({e})"})
        channel.write(token + "\t" + line + "\n")
        channel.flush()
    send({"event": "finished"})


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # leave now: threads or atexit hooks the learner's code started must not keep the
    # process alive (the judge would wait for them)
    os._exit(0)
