"""mistake: n_needed counted in nodes
message: n_needed is a number of tokens: add each evicted node's tokens and stop when the
  sum reaches n_needed, not after n_needed nodes.
"""
import heapq


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    kids = [0] * len(parent)
    for p in parent:
        if p >= 0:
            kids[p] += 1
    heap = [(int(last_access[k]), k) for k in range(len(parent)) if kids[k] == 0 and not in_use[k]]
    heapq.heapify(heap)
    out = []
    while heap and len(out) < n_needed:
        _, k = heapq.heappop(heap)
        out.append(k)
        p = parent[k]
        if p >= 0:
            kids[p] -= 1
            if kids[p] == 0 and not in_use[p]:
                heapq.heappush(heap, (int(last_access[p]), int(p)))
    return out
