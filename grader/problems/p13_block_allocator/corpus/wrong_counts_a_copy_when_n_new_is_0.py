"""expect: fail
slip: counts the copy-on-write page before looking at n_new, so n_new = 0 on a shared half-full page with no free page comes back out of pages.
"""


def needs_copy(table, seqlen, page_size, refcount):
    return seqlen % page_size != 0 and refcount[table[-1]] > 1


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    cow = needs_copy(table, seqlen, page_size, refcount)
    grow = -(-(seqlen + n_new) // page_size) - len(table)
    if len(free) < grow + int(cow):
        return None, table, refcount, free
    copies = []
    if cow and n_new > 0:
        src = table[-1]
        dst = free.pop()
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
