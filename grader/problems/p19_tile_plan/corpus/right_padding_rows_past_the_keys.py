"""expect: pass
slip: none -- takes the last query of every block as m0 + block_m - 1, padding rows included. Those rows would sit past the last key, and clipped to n_k they see what the last real query sees (all n_k keys), so the plan does not change.
"""
import numpy as np


def tile_plan(n_q, n_k, block_m, block_n, causal=True):
    n_blocks, n_tiles = -(-n_q // block_m), -(-n_k // block_n)
    plan = []
    for b in range(n_blocks):
        m0 = b * block_m
        if causal:
            lo = min(max(n_k - n_q + 1 + m0, 0), n_k)
            hi = min(max(n_k - n_q + m0 + block_m, 0), n_k)      # the block's last row, real or not
        else:
            lo = hi = n_k
        row = []
        for t in range(n_tiles):
            if (t + 1) * block_n <= lo:
                row.append(2)
            elif t * block_n < hi:
                row.append(1)
            else:
                row.append(0)
        plan.append(row)
    return np.array(plan, dtype=np.int32).reshape(n_blocks, n_tiles)
