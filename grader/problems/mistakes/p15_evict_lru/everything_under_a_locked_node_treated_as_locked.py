"""mistake: everything under a locked node treated as locked
message: in_use marks the node itself; a branch under an in-use node that no running request
  reads is not locked and can be evicted.
"""
import heapq


def _locked(k, parent, in_use):
    while k >= 0:
        if in_use[k]:
            return True
        k = parent[k]
    return False


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    kids = [0] * len(parent)
    for p in parent:
        if p >= 0:
            kids[p] += 1
    heap = [(int(last_access[k]), k) for k in range(len(parent)) if kids[k] == 0 and not _locked(k, parent, in_use)]
    heapq.heapify(heap)
    out, freed = [], 0
    while heap and freed < n_needed:
        _, k = heapq.heappop(heap)
        out.append(k)
        freed += int(tokens[k])
        p = parent[k]
        if p >= 0:
            kids[p] -= 1
            if kids[p] == 0 and not _locked(p, parent, in_use):
                heapq.heappush(heap, (int(last_access[p]), int(p)))
    return out
