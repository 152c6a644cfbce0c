"""expect: fail
slip: forgets that nothing is written when n_new is 0, and copies anyway.
mistake: copied with n_new = 0
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    cow = bool(seqlen % page_size and refcount[table[-1]] > 1)
    grow = -(-(seqlen + n_new) // page_size) - len(table)
    if grow + cow > len(free):
        return None, table, refcount, free
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
