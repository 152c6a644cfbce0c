"""expect: pass
slip: none -- builds full 'd_nope + d_rope' keys per head by concatenation, one matmul.
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    T, H, _ = q_nope.shape
    k_nope = np.einsum("tc,hcd->htd", c_kv, w_uk)                        # [H, T, d_nope]
    k = np.concatenate([k_nope, np.broadcast_to(k_rope, (H,) + k_rope.shape)], axis=-1)
    q = np.concatenate([q_nope, q_rope], axis=-1).transpose(1, 0, 2)     # [H, T, d_qk]
    s = q @ k.transpose(0, 2, 1) * scale                                  # [H, T, T]
    s = np.where(np.arange(T)[None, :] <= np.arange(T)[:, None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    return (p @ np.einsum("tc,hcd->htd", c_kv, w_uv)).transpose(1, 0, 2)
