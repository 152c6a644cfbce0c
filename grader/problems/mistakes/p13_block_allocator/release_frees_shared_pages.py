"""mistake: release frees shared pages
message: release freed pages that other tables still hold; drop one reference and free a
  page only when its count reaches 0.
"""


def release(table, refcount, free):
    freed = list(table)
    for p in table:
        refcount[p] = 0
    free.extend(freed)
    table.clear()
    return freed, table, refcount, free
