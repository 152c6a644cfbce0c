"""expect: fail
slip: marks each evicted node by setting its last_access to a huge value -- in the caller's array.
reason: mutated_input
"""

BIG = 2**62


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    n = len(parent)
    out, freed = [], 0
    while freed < n_needed:
        cands = [k for k in range(n) if last_access[k] < BIG and not in_use[k]
                 and not any(parent[c] == k and last_access[c] < BIG for c in range(n))]
        if not cands:
            break
        k = min(cands, key=lambda k: (last_access[k], k))
        last_access[k] = BIG
        out.append(k)
        freed += int(tokens[k])
    return out
