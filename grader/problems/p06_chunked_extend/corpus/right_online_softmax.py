"""expect: pass
slip: none -- walks the prefix chunks with a running max / sum / accumulator (online softmax).
"""
import numpy as np


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    S, H, _ = q_nope.shape
    n_prefix = c_kv.shape[0] - S
    m = np.full((H, S), -np.inf)
    l = np.zeros((H, S))
    acc = np.zeros((H, S, w_uv.shape[-1]))

    def add(rows, kr, visible):
        nonlocal m, l, acc
        k = np.einsum("tc,hcd->htd", rows, w_uk)                   # [H, n, d_nope]
        v = np.einsum("tc,hcd->htd", rows, w_uv)                   # [H, n, d_v]
        s = (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, kr)) * scale
        s = np.where(visible, s, -np.inf)
        m_new = np.maximum(m, s.max(-1))                           # finite after the first part
        a = np.exp(m - m_new)
        p = np.exp(s - m_new[..., None])
        l = l * a + p.sum(-1)
        acc = acc * a[..., None] + p @ v
        m = m_new

    for lo in range(0, n_prefix, chunk):
        hi = min(lo + chunk, n_prefix)
        add(c_kv[lo:hi], k_rope[lo:hi], True)
    add(c_kv[n_prefix:], k_rope[n_prefix:], np.tril(np.ones((S, S), dtype=bool)))
    return (acc / l[..., None]).transpose(1, 0, 2), m + np.log(l)
