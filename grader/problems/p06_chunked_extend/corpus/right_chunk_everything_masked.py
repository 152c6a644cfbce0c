"""expect: pass
slip: none -- chunks ALL T rows (prefix and new) with the bottom-right causal mask per chunk.
"""
import numpy as np


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    S = q_nope.shape[0]
    T = c_kv.shape[0]
    n_prefix = T - S
    outs, lses = [], []
    for lo in range(0, T, chunk):
        hi = min(lo + chunk, T)
        k = np.einsum("tc,hcd->htd", c_kv[lo:hi], w_uk)
        v = np.einsum("tc,hcd->htd", c_kv[lo:hi], w_uv)
        s = (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, k_rope[lo:hi])) * scale
        cols = np.arange(lo, hi)[None, :]
        visible = cols <= n_prefix + np.arange(S)[:, None]           # query i sees rows <= n_prefix + i
        s = np.where(visible, s, -np.inf)
        m = s.max(-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)                         # a chunk a query cannot see
        p = np.exp(s - m)
        tot = p.sum(-1, keepdims=True)
        with np.errstate(divide="ignore"):
            lses.append(np.where(tot[..., 0] > 0, m[..., 0] + np.log(tot[..., 0]), -np.inf))
        outs.append((p @ v) / np.where(tot > 0, tot, 1.0))
    lses, outs = np.stack(lses), np.stack(outs)                      # [n, H, S], [n, H, S, d_v]
    lse = np.logaddexp.reduce(lses, axis=0)                          # every query sees a row
    out = (np.exp(lses - lse)[..., None] * outs).sum(0)
    return out.transpose(1, 0, 2), lse
