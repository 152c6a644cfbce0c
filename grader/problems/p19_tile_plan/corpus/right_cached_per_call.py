"""expect: pass
slip: none -- a correct memo: functools.lru_cache keyed on every argument, the plan built in Python tuples and a fresh array returned each call.
"""
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=None)
def _rows(n_q, n_k, block_m, block_n, causal):
    out = []
    for m0 in range(0, n_q, block_m):
        last = min(m0 + block_m, n_q) - 1
        lo = min(max(n_k - n_q + 1 + m0, 0), n_k) if causal else n_k
        hi = min(max(n_k - n_q + 1 + last, 0), n_k) if causal else n_k
        out.append(tuple(2 if t + block_n <= lo else 1 if t < hi else 0 for t in range(0, n_k, block_n)))
    return tuple(out)


def tile_plan(n_q, n_k, block_m, block_n, causal=True):
    rows = _rows(n_q, n_k, block_m, block_n, bool(causal))
    return np.array(rows, dtype=np.int64).reshape(len(rows), -(-n_k // block_n))
