"""mistake: in_use ignored
message: A node in use (on a running request's path) must never be evicted, however old.
"""
import heapq


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    kids = [0] * len(parent)
    for p in parent:
        if p >= 0:
            kids[p] += 1
    heap = [(int(last_access[k]), k) for k in range(len(parent)) if kids[k] == 0]
    heapq.heapify(heap)
    out, freed = [], 0
    while heap and freed < n_needed:
        _, k = heapq.heappop(heap)
        out.append(k)
        freed += int(tokens[k])
        if parent[k] >= 0:
            kids[parent[k]] -= 1
            if kids[parent[k]] == 0:
                heapq.heappush(heap, (int(last_access[parent[k]]), int(parent[k])))
    return out
