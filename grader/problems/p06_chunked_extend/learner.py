"""A right answer to problem 6, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
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
    n_prefix = c_kv.shape[0] - q_nope.shape[0]
    parts = []
    for lo in range(0, n_prefix, chunk):
        hi = min(lo + chunk, n_prefix)
        parts.append(_attend(q_nope, q_rope, c_kv[lo:hi], k_rope[lo:hi], w_uk, w_uv, scale))
    parts.append(_attend(q_nope, q_rope, c_kv[n_prefix:], k_rope[n_prefix:], w_uk, w_uv, scale, causal=True))
    lses = np.stack([l for _, l in parts])                     # [n_parts, H, S]
    outs = np.stack([o for o, _ in parts])                     # [n_parts, H, S, d_v]
    lse = np.logaddexp.reduce(lses, axis=0)
    out = (np.exp(lses - lse)[..., None] * outs).sum(0)
    return out.transpose(1, 0, 2), lse
