"""expect: fail
slip: wrote the page size of the chapter's example (4) into the code instead of using page_size.
"""


P = 4


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    partial = seqlen % P
    cow = n_new > 0 and partial > 0 and refcount[table[-1]] > 1
    grow = -(-(seqlen + n_new) // P) - len(table)
    if grow + cow > len(free):
        return None, table, refcount, free
    copies = []
    if cow:
        src, dst = table[-1], free.pop()
        refcount[src] -= 1
        refcount[dst] = 1
        table[-1] = dst
        copies.append((src, dst, partial))
    for _ in range(max(grow, 0)):
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
