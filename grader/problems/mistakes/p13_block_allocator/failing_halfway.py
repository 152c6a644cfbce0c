"""mistake: failing halfway
message: When the pool runs short you changed part of the state before giving up. Count the
  pages the call needs (growth plus the copy) first, and if free is too short return (None,
  table, refcount, free) untouched.
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    copies = []
    if n_new > 0 and seqlen % page_size and refcount[table[-1]] > 1:
        if not free:
            return None, table, refcount, free
        src, dst = table[-1], free.pop()
        refcount[src] -= 1
        refcount[dst] = 1
        table[-1] = dst
        copies.append((src, dst, seqlen % page_size))
    while len(table) * page_size < seqlen + n_new:
        if not free:
            return None, table, refcount, free
        page = free.pop()
        refcount[page] = 1
        table.append(page)
    return copies, table, refcount, free
