"""expect: pass
slip: none -- split into small helpers, checks the pool before touching anything.
"""


def _pages_for(n_tokens, page_size):
    return -(-n_tokens // page_size)


def _take(free, refcount):
    page = free.pop()
    refcount[page] = 1
    return page


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    filled = seqlen % page_size
    must_copy = n_new > 0 and filled > 0 and refcount[table[-1]] > 1
    extra = _pages_for(seqlen + n_new, page_size) - len(table)
    if len(free) < extra + int(must_copy):
        return None, table, refcount, free
    copies = []
    if must_copy:
        src = table[-1]
        dst = _take(free, refcount)
        refcount[src] -= 1
        table[-1] = dst
        copies.append((src, dst, filled))
    table.extend(_take(free, refcount) for _ in range(extra))
    return copies, table, refcount, free


def release(table, refcount, free):
    for page in table:
        refcount[page] -= 1
    freed = [p for i, p in enumerate(table) if refcount[p] == 0 and p not in table[:i]]
    free += freed
    del table[:]
    return freed, table, refcount, free
