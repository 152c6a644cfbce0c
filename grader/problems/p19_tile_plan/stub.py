import numpy as np


def tile_plan(n_q, n_k, block_m, block_n, causal=True):
    """The tile plan of one sequence: which KV tiles each query block loads, and how.

    n_q, n_k          ints >= 0: the sequence's queries (new tokens) and keys (prefix + new)
    block_m, block_n  ints >= 1: queries per block, keys per KV tile
    causal            bool: bottom-right aligned causal mask (query j at position
                      n_k - n_q + j sees keys 0 .. n_k - n_q + j), or every key

    Returns an integer array [ceil(n_q / block_m), ceil(n_k / block_n)]:
        0  skipped: no real query of the block sees a key of the tile
        2  whole:   every real query of the block sees all block_n positions of the tile
        1  masked:  anything else
    Rows past n_q (padding of the last block) do not count. Do not change the inputs.
    """
    # TODO(problem 19): for each query block, the keys its first and last real query see; classify each tile.
    raise NotImplementedError("problem 19 (tile_plan) is not written yet")
