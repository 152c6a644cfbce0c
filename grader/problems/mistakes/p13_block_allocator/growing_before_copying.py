"""mistake: growing before copying
message: Copy-on-write comes first: its page is the first one popped, then the growth pages.
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    last = len(table) - 1
    cow = n_new > 0 and seqlen % page_size > 0 and refcount[table[last]] > 1
    grow = -(-(seqlen + n_new) // page_size) - len(table)
    if grow + cow > len(free):
        return None, table, refcount, free
    for _ in range(grow):
        page = free.pop()
        refcount[page] = 1
        table.append(page)
    copies = []
    if cow:
        src, dst = table[last], free.pop()
        refcount[src] -= 1
        refcount[dst] = 1
        table[last] = dst
        copies.append((src, dst, seqlen % page_size))
    return copies, table, refcount, free
