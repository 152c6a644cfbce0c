"""Running the attempt: import it, call its functions case by case, send each record.

Three ways in, one way of running a case (``run_case``):
  * a fresh process: ``python -I -u grader/child/__main__.py --fd N --job FILE`` (``main``;
    grader/sandbox.py starts it, in the OS sandbox where there is one). The course's own
    packages are never imported here, so graded code cannot reach the reference answers:
    imports of them are refused by a finder, reads of their source files by an audit hook.
  * a forked copy of a notebook's kernel (``serve_forked``), for ``check()`` in Jupyter:
    the functions live in that process, and so does the course's code, so a profiler
    notices any call into it instead.
  * in-process (the browser, Windows): the same profiler, without limits.
"""
from __future__ import annotations

import copy
import importlib.util
import io
import json
import os
import pickle
import sys
import traceback
import types

from .guards import (WATCH, _ExitCalled, _reference_record, block_course_imports, die_with_parent,
                     install_guard, trip_os_exit, ReferenceProfiler, PACKAGE_FILES)
from .inputs import changed_inputs, freeze_arrays, snapshot, snapshots
from .protocol import OUTPUT_KEEP, SOURCE_CAP, RunStatus, _channel, cut, encode
from .resources import (_is_memory_error, _start_tracing, _stop_tracing, attempt_imports, preimport,
                        set_memory_headroom, set_rlimits, warm_up_blas)


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

# ----------------------------------------------------------------------- running

def learner_traceback(exc: BaseException, path: str) -> str:
    """The exception with only the frames of the learner's own file."""
    # lookup_lines=False: read source lines only for the frames shown (the learner's)
    frames = traceback.StackSummary.extract(traceback.walk_tb(exc.__traceback__), lookup_lines=False)
    if path.startswith("<"):  # functions handed over in-process (a notebook): drop our frames
        frames = [f for f in frames if os.path.abspath(f.filename) not in PACKAGE_FILES]
    else:
        frames = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)]
    lines = [f"  {os.path.basename(f.filename)}, line {f.lineno}, in {f.name}: {(f.line or '').strip()}"
             for f in frames[-6:]]
    msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return "\n".join(lines + [msg])

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
    profiler = (ReferenceProfiler(reference_folders, [*allowed_files, *PACKAGE_FILES])
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

def serve_forked(job: dict, module, fd: int):
    """In a forked copy of a notebook's kernel: limits, guards, then the cases."""
    send = _channel(fd, job["token"])
    if job.get("freeze_inputs"):
        freeze_arrays(job["cases"])
    if job["memory_mb"]:
        set_memory_headroom(job["memory_mb"])
    install_guard(job["scratch"], protected=job["protected"], readable=PACKAGE_FILES)
    trip_os_exit()
    if job.get("kernel"):   # the notebook's own kernel object, with the judge's launcher
        from .kernel import launch_with
        k = job["kernel"]
        launch = launch_with(k["launcher"], k["launcher_name"], getattr(module, k["name"]))
        module = types.SimpleNamespace(**{fname: launch for _, fname, _ in job["cases"]})
    send({"event": "ready"})
    profiler = ReferenceProfiler(job["protected"], allowed_files=PACKAGE_FILES)
    run_cases(module, job["path"], job["cases"], send, profiler=profiler, trace_memory_mb=job.get("trace_memory_mb"))

def kernel_launcher(kernel: dict, cases: list, source: bytes, path: str):
    """For a problem whose answer must be a kernel's: an object whose function (the one the
    cases call) launches the file's kernel with the judge's own launcher. Only the kernel
    is taken from the file (kernel.py: loaded only for the problems that need it); nothing
    else of it runs here."""
    from . import kernel as kernel_harness
    module = kernel_harness.kernel_module(source, path, kernel["name"], os.getcwd())
    launch = kernel_harness.launch_with(kernel["launcher"], kernel["launcher_name"], getattr(module, kernel["name"]))
    return types.SimpleNamespace(**{fname: launch for _, fname, _ in cases})

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
    install_guard(os.getcwd(), protected=job["protected"], readable=[path, *PACKAGE_FILES])
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
