"""What the child's process may use, set on itself before the attempt's file is read (hard
limits: the attempt cannot raise them), and the libraries it loads first (their memory is the
interpreter's, not the attempt's)."""
from __future__ import annotations

import os
import sys

from .guards import COURSE_PACKAGES


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
