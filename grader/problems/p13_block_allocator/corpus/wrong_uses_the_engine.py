"""expect: fail
slip: wraps the course's own allocator instead of writing one.
reason: uses_reference
"""
from mlacourse.engine.pages import OutOfPages
from mlacourse.engine.pages import append_slots as _append
from mlacourse.engine.pages import release as _release


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    try:
        copies = _append(table, seqlen, n_new, page_size, refcount, free)
    except OutOfPages:
        return None, table, refcount, free
    return copies, table, refcount, free


def release(table, refcount, free):
    return _release(table, refcount, free), table, refcount, free
