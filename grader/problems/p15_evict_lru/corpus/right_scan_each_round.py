"""expect: pass
slip: none -- no heap: each round scans every node for the best candidate (quadratic, fine here).
"""


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    n = len(parent)
    alive = [True] * n
    out, freed = [], 0
    while freed < n_needed:
        best = None
        for k in range(n):
            if not alive[k] or in_use[k]:
                continue
            if any(alive[c] and parent[c] == k for c in range(n)):
                continue  # still has a child in the cache
            if best is None or (last_access[k], k) < (last_access[best], best):
                best = k
        if best is None:
            break
        alive[best] = False
        out.append(best)
        freed += int(tokens[best])
    return out
