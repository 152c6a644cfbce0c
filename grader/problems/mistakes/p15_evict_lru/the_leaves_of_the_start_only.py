"""mistake: the leaves of the start only
message: A parent whose last child you evict becomes a leaf in the same call: it is a
  candidate from then on, with its own last_access.
"""


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    has_child = set(int(p) for p in parent if p >= 0)
    leaves = [k for k in range(len(parent)) if k not in has_child and not in_use[k]]
    leaves.sort(key=lambda k: (last_access[k], k))
    out, freed = [], 0
    for k in leaves:
        if freed >= n_needed:
            break
        out.append(k)
        freed += int(tokens[k])
    return out
