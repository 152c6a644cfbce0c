"""expect: pass
slip: none -- numpy throughout; returns an int64 array instead of a list.
"""
import numpy as np


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    parent = np.asarray(parent)
    kids = np.bincount(parent[parent >= 0], minlength=len(parent))
    alive = np.ones(len(parent), dtype=bool)
    order, freed = [], 0
    while freed < n_needed:
        cand = np.flatnonzero(alive & ~np.asarray(in_use) & (kids == 0))
        if cand.size == 0:
            break
        k = cand[np.lexsort((cand, np.asarray(last_access)[cand]))[0]]
        alive[k] = False
        order.append(k)
        freed += int(tokens[k])
        if parent[k] >= 0:
            kids[parent[k]] -= 1
    return np.array(order, dtype=np.int64)
