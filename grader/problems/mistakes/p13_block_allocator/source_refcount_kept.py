"""mistake: source refcount kept
message: After copy-on-write the request no longer holds the old page: drop one reference to
  it (refcount[src] -= 1).
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    cow = bool(n_new > 0 and seqlen % page_size and refcount[table[-1]] > 1)
    grow = -(-(seqlen + n_new) // page_size) - len(table)
    if grow + cow > len(free):
        return None, table, refcount, free
    copies = []
    if cow:
        src, dst = table[-1], free.pop()
        refcount[dst] = 1
        table[-1] = dst
        copies.append((src, dst, seqlen % page_size))
    for _ in range(grow):
        page = free.pop()
        refcount[page] = 1
        table.append(page)
    return copies, table, refcount, free
