"""mistake: most recently used first
message: Evict the LEAST recently used candidate first: the smallest last_access.
"""
import heapq


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    kids = [0] * len(parent)
    for p in parent:
        if p >= 0:
            kids[p] += 1
    heap = [(-int(last_access[k]), k) for k in range(len(parent)) if kids[k] == 0 and not in_use[k]]
    heapq.heapify(heap)
    out, freed = [], 0
    while heap and freed < n_needed:
        _, k = heapq.heappop(heap)
        out.append(k)
        freed += int(tokens[k])
        p = parent[k]
        if p >= 0:
            kids[p] -= 1
            if kids[p] == 0 and not in_use[p]:
                heapq.heappush(heap, (-int(last_access[p]), int(p)))
    return out
