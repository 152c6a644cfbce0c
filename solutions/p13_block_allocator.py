"""Problem 13 - block_allocator: model answer."""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    partial = seqlen % page_size                      # valid slots in a partly filled last page
    cow = n_new > 0 and partial > 0 and refcount[table[-1]] > 1
    n_pages = -(-(seqlen + n_new) // page_size)       # ceil
    grow = n_pages - len(table)
    if grow + cow > len(free):                        # out of pages: touch nothing
        return None, table, refcount, free
    copies = []
    if cow:
        src, dst = table[-1], free.pop()
        refcount[src] -= 1
        refcount[dst] = 1
        table[-1] = dst
        copies.append((src, dst, partial))
    for _ in range(grow):
        page = free.pop()
        refcount[page] = 1
        table.append(page)
    return copies, table, refcount, free


def release(table, refcount, free):
    freed = []
    for page in table:
        refcount[page] -= 1
        if refcount[page] == 0:
            freed.append(page)
    free.extend(freed)
    table.clear()
    return freed, table, refcount, free
