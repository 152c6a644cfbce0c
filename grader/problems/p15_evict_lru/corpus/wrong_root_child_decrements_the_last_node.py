"""expect: fail
slip: after evicting a node it decrements children[parent[x]] without checking for -1, so evicting a child of the root decrements the LAST node's count (index -1).
"""
import heapq


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    n = len(parent)
    children = [0] * n
    for k in range(n):
        if parent[k] != -1:
            children[parent[k]] += 1
    heap = [(int(last_access[k]), k) for k in range(n) if children[k] == 0 and not in_use[k]]
    heapq.heapify(heap)
    out, freed = [], 0
    while heap and freed < n_needed:
        _, x = heapq.heappop(heap)
        out.append(x)
        freed += int(tokens[x])
        p = parent[x]
        children[p] -= 1
        if children[p] == 0 and not in_use[p]:
            heapq.heappush(heap, (int(last_access[p]), int(p)))
    return out
