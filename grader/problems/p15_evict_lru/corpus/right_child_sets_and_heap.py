"""expect: pass
slip: none -- a set of remaining children per node (children of the root kept apart), a heap of (last_access, id); makes no assumption about the order of the ids.
"""
import heapq


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    n = len(parent)
    kids = {k: set() for k in range(n)}
    for child in range(n):
        p = int(parent[child])
        if p != -1:
            kids[p].add(child)
    heap = [(int(last_access[k]), k) for k in range(n) if not kids[k] and not in_use[k]]
    heapq.heapify(heap)
    evicted, freed = [], 0
    while heap and freed < n_needed:
        _, node = heapq.heappop(heap)
        evicted.append(node)
        freed += int(tokens[node])
        p = int(parent[node])
        if p == -1:
            continue                         # a child of the root: no parent to update
        kids[p].discard(node)
        if not kids[p] and not in_use[p]:
            heapq.heappush(heap, (int(last_access[p]), p))
    return evicted
