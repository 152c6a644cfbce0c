"""What crosses the pipe: the statuses of a call, plain data both ways, bounded texts.

Only plain data goes back (``encode``): numbers, strings, containers and numeric numpy
arrays. Each record has a ``status`` from ``RunStatus``. On the wire every line is
``<token>\\t<json>``; the judge ignores lines without the token it chose.
"""
from __future__ import annotations

import base64
import json
import os
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

def cut(text: str, limit: int = TEXT_KEEP) -> str:
    """``text`` if it is short enough, else its first ``limit`` characters and a note of
    how much was cut. Every text a record carries passes through here (and again through
    the judge's own check of the record: grader/sandbox.py clean_record)."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" \u2026 ({len(text) - limit:,} more characters cut)"

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

def _channel(fd: int, token: str):
    stream = os.fdopen(fd, "w", buffering=1)

    def send(obj):
        stream.write(token + "\t" + json.dumps(obj) + "\n")
        stream.flush()
    return send
