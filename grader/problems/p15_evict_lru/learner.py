"""A right answer to problem 15, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
"""
import heapq


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    kids = [0] * len(parent)
    for p in parent:
        if p >= 0:
            kids[p] += 1
    heap = [(int(last_access[k]), k) for k in range(len(parent)) if kids[k] == 0 and not in_use[k]]
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
                heapq.heappush(heap, (int(last_access[p]), int(p)))
    return out
