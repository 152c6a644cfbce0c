"""expect: fail
slip: takes free pages from the front, free.pop(0).
mistake: pages taken from the front of free
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    cow = bool(n_new > 0 and seqlen % page_size and refcount[table[-1]] > 1)
    grow = -(-(seqlen + n_new) // page_size) - len(table)
    if grow + cow > len(free):
        return None, table, refcount, free
    copies = []
    if cow:
        src, dst = table[-1], free.pop(0)
        refcount[src] -= 1
        refcount[dst] = 1
        table[-1] = dst
        copies.append((src, dst, seqlen % page_size))
    for _ in range(grow):
        page = free.pop(0)
        refcount[page] = 1
        table.append(page)
    return copies, table, refcount, free


def release(table, refcount, free):
    freed = []
    for p in table:
        refcount[p] -= 1
        if refcount[p] == 0:
            freed.append(p)
    free.extend(freed)
    table.clear()
    return freed, table, refcount, free
