"""expect: fail
slip: keeps the allocator's lists in module globals like the engine does, copied from the first call, and ignores the lists passed to later calls.
"""
_REFCOUNT = None
_FREE = None


def _state(refcount, free):
    global _REFCOUNT, _FREE
    if _REFCOUNT is None or len(_REFCOUNT) != len(refcount):
        _REFCOUNT, _FREE = list(refcount), list(free)
    return _REFCOUNT, _FREE


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    rc, fr = _state(refcount, free)
    table = list(table)
    need = -(-(seqlen + n_new) // page_size) - len(table)
    cow = n_new > 0 and seqlen % page_size != 0 and rc[table[-1]] > 1
    if need + cow > len(fr):
        return None, table, list(rc), list(fr)
    copies = []
    if cow:
        dst = fr.pop()
        rc[table[-1]] -= 1
        rc[dst] = 1
        copies.append((table[-1], dst, seqlen % page_size))
        table[-1] = dst
    for _ in range(need):
        p = fr.pop()
        rc[p] = 1
        table.append(p)
    return copies, table, list(rc), list(fr)


def release(table, refcount, free):
    rc, fr = _state(refcount, free)
    freed = []
    for p in table:
        rc[p] -= 1
        if rc[p] == 0:
            freed.append(p)
            fr.append(p)
    return freed, [], list(rc), list(fr)
