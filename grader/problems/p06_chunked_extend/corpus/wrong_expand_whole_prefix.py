"""expect: fail
slip: ignores chunk and expands all T rows at once with one bottom-right causal mask.
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
    S, T = q_nope.shape[0], c_kv.shape[0]
    visible = np.arange(T)[None, :] <= np.arange(S)[:, None] + (T - S)     # [S, T]
    k = np.einsum("tc,hcd->htd", c_kv, w_uk)                  # slip: [H, T, d_nope] for all T rows
    v = np.einsum("tc,hcd->htd", c_kv, w_uv)
    s = (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, k_rope)) * scale
    s = np.where(visible, s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    tot = p.sum(-1, keepdims=True)
    return ((p @ v) / tot).transpose(1, 0, 2), (m + np.log(tot))[..., 0]
