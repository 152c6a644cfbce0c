"""expect: pass
slip: none: counts the pages it needs (the copy's and the growth's) before it takes any; the
  style of the near-copy wrong attempts of wrong.diff, which change it.
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    partial = seqlen % page_size
    cow = n_new > 0 and partial > 0 and refcount[table[-1]] > 1
    grow = -(-(seqlen + n_new) // page_size) - len(table)
    if grow + cow > len(free):
        return None, table, refcount, free
    copies = []
    if cow:
        src, dst = table[-1], free.pop()
        refcount[src] -= 1
        refcount[dst] = 1
        table[-1] = dst
        copies.append((src, dst, partial))
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
