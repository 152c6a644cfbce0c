"""mistake: a full last page copied
message: You copied a full shared last page. Full pages are never written again, so sharing
  them is safe: copy only when seqlen % page_size != 0.
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    cow = bool(n_new > 0 and table and refcount[table[-1]] > 1)
    grow = -(-(seqlen + n_new) // page_size) - len(table)
    if grow + cow > len(free):
        return None, table, refcount, free
    copies = []
    if cow:
        src, dst = table[-1], free.pop()
        refcount[src] -= 1
        refcount[dst] = 1
        table[-1] = dst
        copies.append((src, dst, seqlen - (len(table) - 1) * page_size))
    for _ in range(grow):
        page = free.pop()
        refcount[page] = 1
        table.append(page)
    return copies, table, refcount, free
