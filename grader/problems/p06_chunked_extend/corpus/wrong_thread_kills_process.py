"""expect: fail
slip: leaves a "watchdog" thread running that calls os._exit(0) once three calls were made (mid-grading).
reason: exit
"""
import os
import threading
import time

import numpy as np

_started = []
_calls = [0]


def _watchdog():
    while _calls[0] < 3:
        time.sleep(0.01)
    os._exit(0)                                                # slip: kills the whole process


def _attend(q_nope, q_rope, rows, kr, w_uk, w_uv, scale, causal=False):
    k = np.einsum("tc,hcd->htd", rows, w_uk)
    v = np.einsum("tc,hcd->htd", rows, w_uv)
    s = (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, kr)) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[1:], dtype=bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    return (p @ v) / p.sum(-1, keepdims=True), (m + np.log(p.sum(-1, keepdims=True)))[..., 0]


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    if not _started:
        _started.append(threading.Thread(target=_watchdog))     # left running after return
        _started[0].start()
    _calls[0] += 1
    time.sleep(0.1)                                            # "some work": the watchdog fires here
    n_prefix = c_kv.shape[0] - q_nope.shape[0]
    parts = [_attend(q_nope, q_rope, c_kv[lo:min(lo + chunk, n_prefix)], k_rope[lo:min(lo + chunk, n_prefix)],
                     w_uk, w_uv, scale) for lo in range(0, n_prefix, chunk)]
    parts.append(_attend(q_nope, q_rope, c_kv[n_prefix:], k_rope[n_prefix:], w_uk, w_uv, scale, causal=True))
    lse = np.logaddexp.reduce([l for _, l in parts], axis=0)
    out = sum(np.exp(l - lse)[..., None] * o for o, l in parts)
    return out.transpose(1, 0, 2), lse
