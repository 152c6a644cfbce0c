"""mistake: an unshared page copied
message: You copied a last page that no one else holds (refcount 1); write into it in place.
  Copy only when refcount[table[-1]] > 1.
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    cow = bool(n_new > 0 and seqlen % page_size)
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
