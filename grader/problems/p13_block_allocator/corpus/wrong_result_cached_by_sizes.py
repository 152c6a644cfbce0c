"""expect: fail
slip: memoises append_slots by (seqlen, n_new, page_size, number of free pages) -- the page ids themselves are not in the key.
"""
import copy

_answers = {}


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    key = (seqlen, n_new, page_size, len(free), len(table))
    if key in _answers:
        return copy.deepcopy(_answers[key])
    table, refcount, free = list(table), list(refcount), list(free)
    grow = -(-(seqlen + n_new) // page_size) - len(table)
    cow = bool(n_new) and seqlen % page_size > 0 and refcount[table[-1]] > 1
    if grow + cow > len(free):
        result = (None, table, refcount, free)
    else:
        copies = []
        if cow:
            src, dst = table[-1], free.pop()
            refcount[src] -= 1
            refcount[dst] = 1
            table[-1] = dst
            copies.append((src, dst, seqlen % page_size))
        for _ in range(grow):
            page = free.pop()
            refcount[page] = 1
            table.append(page)
        result = (copies, table, refcount, free)
    _answers[key] = copy.deepcopy(result)
    return result


def release(table, refcount, free):
    refcount, free = list(refcount), list(free)
    freed = []
    for p in table:
        refcount[p] -= 1
        if not refcount[p]:
            freed.append(p)
    free += freed
    return freed, [], refcount, free
