"""expect: pass
slip: none -- keeps the reference counts in a numpy array and returns it as an int array.
"""
import numpy as np


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    rc = np.array(refcount, dtype=np.int64)
    table, free = list(table), list(free)
    tail = seqlen % page_size
    cow = bool(n_new > 0 and tail and rc[table[-1]] > 1)
    grow = int(np.ceil((seqlen + n_new) / page_size)) - len(table)
    if grow + int(cow) > len(free):
        return None, table, rc, free
    copies = []
    if cow:
        dst = free.pop()
        copies.append((table[-1], dst, tail))
        rc[table[-1]] -= 1
        rc[dst] = 1
        table[-1] = dst
    for _ in range(grow):
        table.append(free.pop())
        rc[table[-1]] = 1
    return copies, table, rc, free


def release(table, refcount, free):
    rc = np.array(refcount, dtype=np.int64)
    freed = []
    for p in table:
        rc[p] -= 1
        if rc[p] == 0:
            freed.append(p)
    return freed, [], rc, list(free) + freed
