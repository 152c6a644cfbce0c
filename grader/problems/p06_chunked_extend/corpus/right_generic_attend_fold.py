"""expect: pass
slip: none -- one attend(rows, mask) for prefix chunks and the new block, folded with a 2-way merge.
"""
import numpy as np


def _attend(q_nope, q_rope, rows, kr, w_uk, w_uv, scale, mask=None):
    q = np.concatenate([q_nope, q_rope], -1).transpose(1, 0, 2)           # [H, S, d_qk]
    k = np.concatenate([np.matmul(rows, w_uk),
                        np.broadcast_to(kr, (w_uk.shape[0],) + kr.shape)], -1)  # [H, n, d_qk]
    s = q @ k.transpose(0, 2, 1) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    return (p @ np.matmul(rows, w_uv)) / p.sum(-1, keepdims=True), (m + np.log(p.sum(-1, keepdims=True)))[..., 0]


def _merge(a, b):
    if a is None:
        return b
    lse = np.logaddexp(a[1], b[1])
    return np.exp(a[1] - lse)[..., None] * a[0] + np.exp(b[1] - lse)[..., None] * b[0], lse


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    S = q_nope.shape[0]
    n_prefix = c_kv.shape[0] - S
    acc = None
    start = 0
    while start < n_prefix:
        stop = min(start + chunk, n_prefix)
        acc = _merge(acc, _attend(q_nope, q_rope, c_kv[start:stop], k_rope[start:stop], w_uk, w_uv, scale))
        start = stop
    acc = _merge(acc, _attend(q_nope, q_rope, c_kv[n_prefix:], k_rope[n_prefix:], w_uk, w_uv, scale,
                              np.tril(np.ones((S, S), dtype=bool))))
    return acc[0].transpose(1, 0, 2), acc[1]
