"""mistake: one page too many at a boundary
message: Your page count is (seqlen + n_new) // page_size + 1, one too many when the tokens
  end exactly on a page boundary; use ceil: -(-(seqlen + n_new) // page_size).
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    cow = bool(n_new > 0 and seqlen % page_size and refcount[table[-1]] > 1)
    grow = (seqlen + n_new) // page_size + 1 - len(table)
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
