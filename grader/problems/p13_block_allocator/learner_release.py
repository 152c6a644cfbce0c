"""A right `release`, in the style of the named mistakes that are a change to it
(mistakes.diff: '=== name.py from learner_release.py'); grader/slips.py expands them.
"""


def release(table, refcount, free):
    freed = []
    for p in table:
        refcount[p] -= 1
        if refcount[p] == 0:
            freed.append(p)
            free.append(p)
    table.clear()
    return freed, table, refcount, free
