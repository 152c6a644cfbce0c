"""expect: pass
slip: none -- lists every page the call will pop (the copy's only when n_new > 0 and the partial last page is shared), checks that list against free, then applies it.
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    plan = []
    partial = seqlen % page_size
    if n_new and partial and refcount[table[-1]] >= 2:
        plan.append("copy")
    want = (seqlen + n_new + page_size - 1) // page_size
    plan += ["grow"] * (want - len(table))
    if len(plan) > len(free):
        return None, table, refcount, free
    table, refcount, free = list(table), list(refcount), list(free)
    copies = []
    for step in plan:
        page = free.pop()
        refcount[page] = 1
        if step == "copy":
            src = table[-1]
            refcount[src] -= 1
            table[-1] = page
            copies.append((src, page, partial))
        else:
            table.append(page)
    return copies, table, refcount, free


def release(table, refcount, free):
    refcount, free = list(refcount), list(free)
    freed = []
    for page in table:
        refcount[page] -= 1
        if refcount[page] == 0:
            freed.append(page)
            free.append(page)
    return freed, [], refcount, free
