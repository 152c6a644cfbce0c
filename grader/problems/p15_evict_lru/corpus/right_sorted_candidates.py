"""expect: pass
slip: none -- keeps a sorted list of candidates and inserts a parent with bisect.
"""
import bisect


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    n = len(parent)
    left = [0] * n
    for k in range(n):
        if parent[k] != -1:
            left[int(parent[k])] += 1
    cands = sorted((int(last_access[k]), k) for k in range(n) if left[k] == 0 and not in_use[k])
    out, freed = [], 0
    while cands and freed < n_needed:
        _, k = cands.pop(0)
        out.append(k)
        freed += int(tokens[k])
        p = int(parent[k])
        if p != -1:
            left[p] -= 1
            if left[p] == 0 and not in_use[p]:
                bisect.insort(cands, (int(last_access[p]), p))
    return out
