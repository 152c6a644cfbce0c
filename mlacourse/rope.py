"""Rotary position embedding on interleaved pairs (dims 0&1, 2&3, ...), as DeepSeek's
reference inference code applies it to the 64 decoupled RoPE dims."""
from __future__ import annotations

import numpy as np


def rope_angles(positions, d_rope: int, theta: float = 10000.0) -> np.ndarray:
    """Rotation angles [..., d_rope // 2] for integer positions [...].

    Pair i rotates by position * theta^(-2i/d_rope)."""
    if d_rope % 2:
        raise ValueError(f"d_rope must be even, got {d_rope}")
    inv_freq = theta ** (-np.arange(0, d_rope, 2, dtype=np.float64) / d_rope)  # [d_rope/2]
    return np.asarray(positions, dtype=np.float64)[..., None] * inv_freq


def apply_rope(x, positions, theta: float = 10000.0) -> np.ndarray:
    """Rotate x [..., d_rope] by the positions, which broadcast against x.shape[:-1].

    Examples: k_rope [T, d_rope] with positions [T]; q_rope [T, H, d_rope] with
    positions[:, None]. Returns an array of x's float dtype (float64 for ints)."""
    x = np.asarray(x)
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    ang = rope_angles(positions, x.shape[-1], theta)  # [..., d_rope/2]
    cos, sin = np.cos(ang).astype(dtype), np.sin(ang).astype(dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]
    out = np.empty(np.broadcast_shapes(x.shape, cos.shape[:-1] + (x.shape[-1],)), dtype=dtype)
    out[..., 0::2] = x_even * cos - x_odd * sin
    out[..., 1::2] = x_even * sin + x_odd * cos
    return out


def rotation_matrix(position: float, d_rope: int, theta: float = 10000.0) -> np.ndarray:
    """The [d_rope, d_rope] block-diagonal matrix R_p with apply_rope(x, p) == R_p @ x."""
    ang = rope_angles(position, d_rope, theta)
    r = np.zeros((d_rope, d_rope))
    for i, a in enumerate(np.atleast_1d(ang)):
        c, s = np.cos(a), np.sin(a)
        r[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[c, -s], [s, c]]
    return r
