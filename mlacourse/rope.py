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


# ---- the other layout in circulation: rotate-half ------------------------------------
#
# DeepSeek's reference code (inference/model.py, apply_rotary_emb) rotates *interleaved*
# pairs (0,1), (2,3), ...: it views the 64 rope dims as 32 complex numbers. The GPT-NeoX /
# Llama convention ("rotate_half", used by Hugging Face's apply_rotary_pos_emb) pairs dim j
# with dim j + d/2 instead. Hugging Face's DeepseekV3Attention therefore first permutes the
# rope dims of q and k (its apply_rotary_pos_emb_interleave: view(d/2, 2).transpose) so that
# checkpoint weights trained with interleaved pairs land on the right frequencies.

def apply_rope_half(x, positions, theta: float = 10000.0) -> np.ndarray:
    """Rotate-half RoPE: dim j (j < d/2) pairs with dim j + d/2 and rotates by frequency j.
    Same arguments and broadcasting as apply_rope."""
    x = np.asarray(x)
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    d = x.shape[-1]
    ang = rope_angles(positions, d, theta)  # [..., d/2]
    cos, sin = np.cos(ang).astype(dtype), np.sin(ang).astype(dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def interleaved_to_half(d_rope: int) -> np.ndarray:
    """Index permutation p with x_half = x_interleaved[..., p]: the even dims first, then
    the odd ones (what Hugging Face's view(d/2, 2).transpose(-1, -2) does).
    Then apply_rope_half(x[..., p], pos) == apply_rope(x, pos)[..., p]."""
    if d_rope % 2:
        raise ValueError(f"d_rope must be even, got {d_rope}")
    return np.concatenate([np.arange(0, d_rope, 2), np.arange(1, d_rope, 2)])


# ---- YaRN: the real checkpoint's softmax scale ------------------------------------------
#
# DeepSeek-V3 was trained at 4K and extended to 128K with YaRN. Its reference code
# (inference/model.py) uses rope_factor 40, mscale 1.0, original_seq_len 4096,
# beta_fast 32, beta_slow 1 (ModelArgs defaults; config_671B.json does not override them),
# and when the serving length exceeds 4096 it multiplies the softmax scale by mscale**2
# with mscale = 0.1 * 1.0 * ln(40) + 1. Hugging Face's DeepseekV3Attention does the same
# from rope_scaling.mscale_all_dim; the factor it puts on cos/sin is
# yarn_mscale(40, mscale) / yarn_mscale(40, mscale_all_dim) = 1 for V3 (both are 1.0).
YARN_V3 = dict(factor=40.0, mscale=1.0, mscale_all_dim=1.0, original_seq_len=4096,
               beta_fast=32, beta_slow=1)


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """YaRN's attention temperature term: 0.1 * mscale * ln(factor) + 1 (1 for factor <= 1)."""
    if factor <= 1:
        return 1.0
    return 0.1 * mscale * float(np.log(factor)) + 1.0


def yarn_softmax_scale(d_qk: int, factor: float = YARN_V3["factor"],
                       mscale_all_dim: float = YARN_V3["mscale_all_dim"]) -> float:
    """The softmax scale the V3 checkpoint runs with beyond 4K: d_qk**-0.5 * m**2."""
    return d_qk ** -0.5 * yarn_mscale(factor, mscale_all_dim) ** 2


def yarn_inv_freq(d_rope: int, theta: float = 10000.0, factor: float = YARN_V3["factor"],
                  original_seq_len: int = YARN_V3["original_seq_len"],
                  beta_fast: float = YARN_V3["beta_fast"], beta_slow: float = YARN_V3["beta_slow"]):
    """Per-pair frequencies [d_rope/2] after YaRN: fast pairs (many turns within the original
    length) keep theta^(-2i/d), slow pairs are divided by `factor`, and a linear ramp blends
    the pairs between the two correction dims, as in DeepSeek's precompute_freqs_cis."""
    base = theta ** (-np.arange(0, d_rope, 2, dtype=np.float64) / d_rope)

    def dim_for(rotations):  # the pair index that turns `rotations` times in original_seq_len
        return d_rope * np.log(original_seq_len / (rotations * 2 * np.pi)) / (2 * np.log(theta))

    low = max(int(np.floor(dim_for(beta_fast))), 0)
    high = min(int(np.ceil(dim_for(beta_slow))), d_rope - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d_rope // 2) - low) / (high - low), 0, 1)  # 0: keep, 1: divide
    return base * (1 - ramp) + base / factor * ramp
