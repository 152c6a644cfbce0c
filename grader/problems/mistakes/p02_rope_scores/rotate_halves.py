"""mistake: rotate halves
message: You rotated the pairs (x[i], x[i + d/2]) (the GPT-NeoX layout); DeepSeek's RoPE
  rotates interleaved pairs (x[2i], x[2i+1]).
"""
import numpy as np


def _rot(x, pos, theta):
    d = x.shape[-1]
    ang = np.asarray(pos, dtype=np.float64)[..., None] * theta ** (-np.arange(0, d, 2) / d)
    a, b = x[..., : d // 2], x[..., d // 2:]                 # slip: halves, not even/odd
    return np.concatenate([a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)], -1)


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    s = np.einsum("hd,thd->ht", q_nope, k_nope) + _rot(q_rope, q_pos, theta) @ _rot(k_rope, k_pos, theta).T
    return s / np.sqrt(q_nope.shape[1] + q_rope.shape[1])
