"""expect: pass
slip: none -- works in place and returns lists (the copies as [src, dst, n] lists, the result as a list).
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    have = len(table)
    need_total = (seqlen + n_new + page_size - 1) // page_size
    copy_needed = False
    if n_new and seqlen % page_size and refcount[table[-1]] > 1:
        copy_needed = True
    if need_total - have + copy_needed > len(free):
        return [None, table, refcount, free]
    out = []
    if copy_needed:
        old = table[-1]
        new = free.pop()
        out.append([old, new, seqlen % page_size])
        refcount[old] = refcount[old] - 1
        refcount[new] = 1
        table[have - 1] = new
    for _ in range(need_total - have):
        pg = free.pop()
        refcount[pg] = 1
        table.append(pg)
    return [out, table, refcount, free]


def release(table, refcount, free):
    freed = []
    while table:
        pg = table.pop(0)
        refcount[pg] -= 1
        if refcount[pg] == 0:
            freed.append(pg)
            free.append(pg)
    return [freed, table, refcount, free]
