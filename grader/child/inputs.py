"""Inputs must not change: arrays frozen by the operating system before the attempt runs,
everything else snapshotted and compared after each call."""
from __future__ import annotations

import os


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

def snapshots(cases) -> dict:
    """{case index: the snapshots of its arguments}, taken before the attempt's file is
    read: their memory is the harness's, and no later code can touch them."""
    return {i: {k: snapshot(v) for k, v in args.items()} for i, _, args in cases}
