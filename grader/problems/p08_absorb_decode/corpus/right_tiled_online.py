"""expect: pass
slip: none -- the absorbed path over the cached tokens in tiles of 64, with each head's running max raised tile by tile (online softmax).
"""
import numpy as np

TILE = 64


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_lat = np.einsum("hd,hcd->hc", q_nope, w_uk)               # [H, d_latent]
    H = q_nope.shape[0]
    m = np.full(H, -np.inf)
    l = np.zeros(H)
    acc = np.zeros((H, c_kv.shape[1]))
    for lo in range(0, c_kv.shape[0], TILE):
        rows, rope = c_kv[lo:lo + TILE], k_rope[lo:lo + TILE]
        s = (q_lat @ rows.T + q_rope @ rope.T) * scale             # [H, n]
        m_new = np.maximum(m, s.max(axis=1))
        a = np.exp(m - m_new)
        p = np.exp(s - m_new[:, None])
        l = l * a + p.sum(axis=1)
        acc = acc * a[:, None] + p @ rows
        m = m_new
    return np.einsum("hc,hcv->hv", acc / l[:, None], w_uv)
