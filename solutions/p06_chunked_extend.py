"""Problem 6 - chunked_extend: model answer."""
import numpy as np


def _attend_rows(q_nope, q_rope, c_rows, kr_rows, w_uk, w_uv, scale, causal):
    """Expand-path attention of all new queries over some cached rows.

    Returns out [H, S, d_v] and lse [H, S]."""
    k_nope = np.einsum("tc,hcd->htd", c_rows, w_uk)              # [H, n, d_nope]
    v = np.einsum("tc,hcd->htd", c_rows, w_uv)                   # [H, n, d_v]
    scores = np.einsum("shd,hnd->hsn", q_nope, k_nope)           # [H, S, n]
    scores = (scores + np.einsum("shr,nr->hsn", q_rope, kr_rows)) * scale
    if causal:  # the new block: rows are the S new tokens themselves
        scores = np.where(np.tril(np.ones(scores.shape[1:], dtype=bool)), scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)                     # finite: each row sees a key
    p = np.exp(scores - top)
    total = p.sum(axis=-1, keepdims=True)
    return (p @ v) / total, (top + np.log(total))[..., 0]


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    n_prefix = c_kv.shape[0] - q_nope.shape[0]
    parts = []
    for lo in range(0, n_prefix, chunk):                         # the last chunk may be short
        hi = min(lo + chunk, n_prefix)
        parts.append(_attend_rows(q_nope, q_rope, c_kv[lo:hi], k_rope[lo:hi], w_uk, w_uv,
                                  scale, causal=False))
    parts.append(_attend_rows(q_nope, q_rope, c_kv[n_prefix:], k_rope[n_prefix:], w_uk, w_uv,
                              scale, causal=True))
    outs = np.stack([o for o, _ in parts])                       # [n_parts, H, S, d_v]
    lses = np.stack([l for _, l in parts])                       # [n_parts, H, S]
    lse = np.logaddexp.reduce(lses, axis=0)                      # [H, S]
    out = (np.exp(lses - lse)[..., None] * outs).sum(axis=0)     # [H, S, d_v]
    return out.transpose(1, 0, 2), lse
