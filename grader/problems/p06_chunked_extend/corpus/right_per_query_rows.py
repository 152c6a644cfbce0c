"""expect: pass
slip: none -- the new block is handled query by query (query i sees new rows 0..i), merged by logaddexp.
"""
import numpy as np


def _attend(q_n, q_r, rows, kr, w_uk, w_uv, scale):
    """One query, all heads, some cached rows -> out [H, d_v], lse [H]."""
    k = np.einsum("tc,hcd->htd", rows, w_uk)
    v = np.einsum("tc,hcd->htd", rows, w_uv)
    s = (np.einsum("hd,htd->ht", q_n, k) + q_r @ kr.T) * scale     # [H, n]
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    return np.einsum("ht,htd->hd", p / p.sum(-1, keepdims=True), v), (m[:, 0] + np.log(p.sum(-1)))


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    S, H, _ = q_nope.shape
    n_prefix = c_kv.shape[0] - S
    out = np.zeros((S, H, w_uv.shape[-1]))
    lse = np.zeros((H, S))
    for i in range(S):
        parts = [_attend(q_nope[i], q_rope[i], c_kv[lo:lo + chunk][: n_prefix - lo],
                         k_rope[lo:lo + chunk][: n_prefix - lo], w_uk, w_uv, scale)
                 for lo in range(0, n_prefix, chunk)]
        new = slice(n_prefix, n_prefix + i + 1)
        parts.append(_attend(q_nope[i], q_rope[i], c_kv[new], k_rope[new], w_uk, w_uv, scale))
        total = np.logaddexp.reduce([l for _, l in parts], axis=0)   # [H]
        out[i] = sum(np.exp(l - total)[:, None] * o for o, l in parts)
        lse[:, i] = total
    return out, lse
