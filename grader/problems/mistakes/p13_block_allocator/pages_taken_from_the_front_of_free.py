"""mistake: pages taken from the front of free
message: Take free pages from the END of the list, free.pop(), not free[0] / free.pop(0).
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    cow = bool(n_new > 0 and seqlen % page_size and refcount[table[-1]] > 1)
    grow = -(-(seqlen + n_new) // page_size) - len(table)
    if grow + cow > len(free):
        return None, table, refcount, free
    copies = []
    if cow:
        src, dst = table[-1], free.pop(0)
        refcount[src] -= 1
        refcount[dst] = 1
        table[-1] = dst
        copies.append((src, dst, seqlen % page_size))
    for _ in range(grow):
        page = free.pop(0)
        refcount[page] = 1
        table.append(page)
    return copies, table, refcount, free
