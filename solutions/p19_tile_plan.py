"""Problem 19: the tile plan of a causal prefill with a prefix offset (chapter 9).

For each block of queries, two numbers decide everything: the keys its first query sees (lo)
and the keys its last real query sees (hi). Every query of the block sees between lo and hi
keys, so a tile that ends by lo is seen whole by all of them, a tile that starts at or after
hi by none, and the tiles between need the mask.
"""
import numpy as np

SKIPPED, MASKED, WHOLE = 0, 1, 2


def tile_plan(n_q, n_k, block_m, block_n, causal=True):
    """int64 [ceil(n_q / block_m), ceil(n_k / block_n)]: 0 skipped, 1 masked, 2 whole."""
    for name, value, least in (("n_q", n_q, 0), ("n_k", n_k, 0), ("block_m", block_m, 1), ("block_n", block_n, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ValueError(f"tile_plan: {name} must be an integer >= {least}, got {value!r}")
    n_blocks = -(-n_q // block_m)
    n_tiles = -(-n_k // block_n)
    plan = np.full((n_blocks, n_tiles), SKIPPED, dtype=np.int64)
    for b in range(n_blocks):
        first = b * block_m                      # the block's first query
        last = min(first + block_m, n_q) - 1     # its last real query (padding rows do not count)
        if causal:
            # query j sits at position n_k - n_q + j: it sees n_k - n_q + 1 + j keys, within 0 .. n_k
            lo = min(max(n_k - n_q + 1 + first, 0), n_k)
            hi = min(max(n_k - n_q + 1 + last, 0), n_k)
        else:
            lo = hi = n_k
        for t in range(n_tiles):
            start, end = t * block_n, (t + 1) * block_n   # key positions start .. end - 1
            if end <= lo:            # the first query sees the whole tile, so every query does
                plan[b, t] = WHOLE
            elif start < hi:         # the last real query sees part of it
                plan[b, t] = MASKED
    return plan
