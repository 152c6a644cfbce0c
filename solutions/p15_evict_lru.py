"""Problem 15 - evict_lru: model answer."""
import heapq


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    n = len(parent)
    children = [0] * n                               # children still in the cache
    for p in parent:
        if p >= 0:
            children[p] += 1
    heap = [(int(last_access[k]), k) for k in range(n) if not in_use[k] and children[k] == 0]
    heapq.heapify(heap)                              # candidates: unlocked leaves, oldest first
    evicted, freed = [], 0
    while freed < n_needed and heap:
        _, k = heapq.heappop(heap)
        evicted.append(k)
        freed += int(tokens[k])
        p = parent[k]
        if p >= 0:
            children[p] -= 1
            if children[p] == 0 and not in_use[p]:   # the parent is a leaf now: a candidate
                heapq.heappush(heap, (int(last_access[p]), int(p)))
    return evicted
