"""expect: fail
slip: each part's softmax uses exp(score) without subtracting the max (overflows for large scores).
"""
import numpy as np


def _attend(q_nope, q_rope, rows, kr, w_uk, w_uv, scale, causal=False):
    k = np.einsum("tc,hcd->htd", rows, w_uk)
    v = np.einsum("tc,hcd->htd", rows, w_uv)
    s = (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, kr)) * scale
    p = np.exp(s)                                              # slip: no max subtracted
    if causal:
        p = p * np.tril(np.ones(s.shape[1:]))
    tot = p.sum(-1, keepdims=True)
    return (p @ v) / tot, np.log(tot)[..., 0]


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    n_prefix = c_kv.shape[0] - q_nope.shape[0]
    parts = [_attend(q_nope, q_rope, c_kv[lo:lo + chunk][: n_prefix - lo], k_rope[lo:lo + chunk][: n_prefix - lo],
                     w_uk, w_uv, scale) for lo in range(0, n_prefix, chunk)]
    parts.append(_attend(q_nope, q_rope, c_kv[n_prefix:], k_rope[n_prefix:], w_uk, w_uv, scale, causal=True))
    lse = np.logaddexp.reduce([l for _, l in parts], axis=0)
    out = sum(np.exp(l - lse)[..., None] * o for o, l in parts)
    return out.transpose(1, 0, 2), lse
