"""expect: pass
slip: none -- treats each interleaved pair as a complex number and rotates by exp(i*angle).
"""
import numpy as np


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    d_rope = q_rope.shape[-1]
    inv_freq = theta ** (-np.arange(0, d_rope, 2) / d_rope)          # [d_rope/2]
    qc = q_rope[:, 0::2] + 1j * q_rope[:, 1::2]                       # [H, d_rope/2]
    kc = k_rope[:, 0::2] + 1j * k_rope[:, 1::2]                       # [T, d_rope/2]
    qc = qc * np.exp(1j * q_pos * inv_freq)
    kc = kc * np.exp(1j * np.asarray(k_pos)[:, None] * inv_freq)
    # real dot product of two rotated pairs = Re(q * conj(k)) summed over pairs
    rope = np.real(qc @ np.conj(kc).T)                                # [H, T]
    nope = np.einsum("hd,thd->ht", q_nope, k_nope)
    return (nope + rope) / np.sqrt(q_nope.shape[-1] + d_rope)
