"""expect: fail
slip: caches every rotated key at every position 0..4999 "to be fast" -- gigabytes of tables.
reason: memory
"""
import numpy as np


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    d = k_rope.shape[1]
    inv_freq = theta ** (-np.arange(0, d, 2) / d)
    table = []                                   # slip: grows without bound
    for p in range(5000):
        ang = np.full((4096, 1), float(p)) * inv_freq
        block = np.empty((4096, 4096))           # 128 MB per position, written below
        block[:] = np.cos(ang).sum()
        table.append(block)
    k_rot = np.stack([table[int(p)][0, :d] for p in k_pos])
    s = np.einsum("hd,thd->ht", q_nope, k_nope) + q_rope @ k_rot.T
    return s / np.sqrt(q_nope.shape[1] + d)
