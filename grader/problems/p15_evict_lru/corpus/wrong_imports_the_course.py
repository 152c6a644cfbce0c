"""expect: fail
slip: calls the course's own evict_lru instead of writing one.
reason: uses_reference
"""
from mlacourse.engine.radix import evict_lru as _course


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    return _course(parent, tokens, last_access, in_use, n_needed)
