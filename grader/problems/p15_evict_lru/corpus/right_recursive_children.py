"""expect: pass
slip: none -- builds child lists first; a tuple key (time, id) in a heap; returns a tuple.
"""
import heapq


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    children = {k: set() for k in range(len(parent))}
    for k, p in enumerate(parent):
        if p >= 0:
            children[int(p)].add(k)
    heap = [(last_access[k], k) for k, c in children.items() if not c and not in_use[k]]
    heapq.heapify(heap)
    chosen, freed = [], 0
    while heap and freed < n_needed:
        _, k = heapq.heappop(heap)
        chosen.append(int(k))
        freed += tokens[k]
        p = int(parent[k])
        if p >= 0:
            children[p].discard(k)
            if not children[p] and not in_use[p]:
                heapq.heappush(heap, (last_access[p], p))
    return tuple(chosen)
