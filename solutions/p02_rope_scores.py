"""Problem 2 - rope_scores: model answer."""
import numpy as np


def _rotate_pairs(x, pos, theta):
    """Rotate interleaved pairs (x[2i], x[2i+1]) of x [..., d] by pos * theta**(-2i/d).

    pos broadcasts against x.shape[:-1]."""
    d = x.shape[-1]
    freqs = theta ** (-np.arange(0, d, 2) / d)                  # [d/2]
    ang = np.asarray(pos, dtype=np.float64)[..., None] * freqs  # [..., d/2]
    cos, sin = np.cos(ang), np.sin(ang)
    pairs = np.asarray(x, dtype=np.float64).reshape(x.shape[:-1] + (d // 2, 2))
    a, b = pairs[..., 0], pairs[..., 1]                         # [..., d/2] each
    rotated = np.stack([a * cos - b * sin, a * sin + b * cos], axis=-1)
    return rotated.reshape(x.shape)


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    d_nope, d_rope = q_nope.shape[-1], q_rope.shape[-1]
    q_r = _rotate_pairs(q_rope, q_pos, theta)          # [H, d_rope]: all heads at q_pos
    k_r = _rotate_pairs(k_rope, k_pos, theta)          # [T, d_rope]: one rope key for all heads
    content = np.einsum("hd,thd->ht", q_nope, k_nope)  # [H, T]
    position = q_r @ k_r.T                             # [H, T]
    return (content + position) / np.sqrt(d_nope + d_rope)
