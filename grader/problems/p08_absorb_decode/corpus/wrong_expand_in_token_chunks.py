"""expect: fail
slip: still expands the keys and values, just 1024 tokens at a time (online softmax over chunks) -- the method the problem forbids.
reason: memory
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    H, T = q_nope.shape[0], c_kv.shape[0]
    m = np.full(H, -np.inf)
    l = np.zeros(H)
    acc = np.zeros((H, w_uv.shape[-1]))
    for lo in range(0, T, 1024):
        c = c_kv[lo:lo + 1024]
        k = np.matmul(c, w_uk)                                  # slip: expanded keys [H, n, d_nope]
        v = np.matmul(c, w_uv)                                  # slip: expanded values [H, n, d_v]
        s = (np.einsum("hd,hnd->hn", q_nope, k) + q_rope @ k_rope[lo:lo + 1024].T) * scale
        m_new = np.maximum(m, s.max(1))
        a = np.exp(m - m_new)
        p = np.exp(s - m_new[:, None])
        l = l * a + p.sum(1)
        acc = acc * a[:, None] + np.einsum("hn,hnd->hd", p, v)
        m = m_new
    return acc / l[:, None]
