"""expect: fail
slip: ignores chunk; expands the WHOLE prefix, one head at a time (each head still holds T rows).
reason: memory
"""
import numpy as np


def _attend(q_nope, q_rope, rows, kr, w_uk, w_uv, scale, causal=False):
    """All new queries over some cached rows: out [H, S, d_v], lse [H, S]."""
    k = np.einsum("tc,hcd->htd", rows, w_uk)                   # [H, n, d_nope]
    v = np.einsum("tc,hcd->htd", rows, w_uv)                   # [H, n, d_v]
    s = (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, kr)) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[1:], dtype=bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    tot = p.sum(-1, keepdims=True)
    return (p @ v) / tot, (m + np.log(tot))[..., 0]


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    S, H, _ = q_nope.shape
    T = c_kv.shape[0]
    visible = np.arange(T)[None, :] <= np.arange(S)[:, None] + (T - S)
    out = np.zeros((S, H, w_uv.shape[-1]))
    lse = np.zeros((H, S))
    for h in range(H):                                         # slip: per head, but all T rows
        k = c_kv @ w_uk[h]                                     # [T, d_nope]
        s = (q_nope[:, h] @ k.T + q_rope[:, h] @ k_rope.T) * scale
        del k
        s = np.where(visible, s, -np.inf)
        m = s.max(-1, keepdims=True)
        p = np.exp(s - m)
        tot = p.sum(-1, keepdims=True)
        out[:, h] = (p @ (c_kv @ w_uv[h])) / tot
        lse[h] = (m + np.log(tot))[:, 0]
    return out, lse
