"""expect: pass
slip: none -- builds new lists instead of changing the given ones, and uses math.ceil.
"""
import math


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    table, refcount, free = list(table), list(refcount), list(free)
    used = seqlen % page_size
    shared_tail = n_new > 0 and used != 0 and refcount[table[-1]] >= 2
    target = math.ceil((seqlen + n_new) / page_size)
    wanted = (target - len(table)) + (1 if shared_tail else 0)
    if wanted > len(free):
        return None, table, refcount, free
    copies = []
    if shared_tail:
        fresh = free.pop()
        copies = [(table[-1], fresh, used)]
        refcount[table[-1]] -= 1
        refcount[fresh] = 1
        table = table[:-1] + [fresh]
    while len(table) < target:
        fresh = free.pop()
        refcount[fresh] = 1
        table = table + [fresh]
    return copies, table, refcount, free


def release(table, refcount, free):
    refcount = list(refcount)
    gone = []
    for page in table:
        refcount[page] -= 1
        if not refcount[page]:
            gone.append(page)
    return gone, [], refcount, list(free) + gone
