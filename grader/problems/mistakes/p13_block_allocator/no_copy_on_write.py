"""mistake: no copy-on-write
message: A shared, partly filled last page must be copied before the request writes into it
  (copy-on-write): take a free page, copy seqlen % page_size slots, swap it into the table.
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    cow = bool(False)
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
