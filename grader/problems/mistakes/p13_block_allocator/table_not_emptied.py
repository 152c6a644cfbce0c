"""mistake: table not emptied
message: After release the request holds no pages: return an empty table.
"""


def release(table, refcount, free):
    freed = []
    for p in table:
        refcount[p] -= 1
        if refcount[p] == 0:
            freed.append(p)
            free.append(p)
    return freed, table, refcount, free
