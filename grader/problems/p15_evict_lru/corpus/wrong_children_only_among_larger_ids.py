"""expect: fail
slip: looks for a node's children only among the nodes after it (ids larger than its own), as if a parent always came before its children.
"""


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    n = len(parent)
    gone = [False] * n
    out, freed = [], 0
    while freed < n_needed:
        best = None
        for k in range(n):
            if gone[k] or in_use[k]:
                continue
            if any(parent[j] == k and not gone[j] for j in range(k + 1, n)):
                continue
            if best is None or (last_access[k], k) < (last_access[best], best):
                best = k
        if best is None:
            break
        gone[best] = True
        out.append(best)
        freed += int(tokens[best])
    return out
