"""expect: fail
slip: computes the list of chunk boundaries once per chunk size and reuses it, though it also depends on the prefix length.
"""
import numpy as np

_bounds = {}


def _attend(q_nope, q_rope, c, kr, w_uk, w_uv, scale, mask=None):
    k = np.einsum("tc,hcd->htd", c, w_uk)
    v = np.einsum("tc,hcd->htd", c, w_uv)
    s = scale * (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, kr))
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    z = e.sum(-1)
    return np.einsum("hst,htd->hsd", e, v) / z[..., None], m[..., 0] + np.log(z)


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    n_new = q_nope.shape[0]
    n_prefix = c_kv.shape[0] - n_new
    if chunk not in _bounds:
        _bounds[chunk] = [(lo, min(lo + chunk, n_prefix)) for lo in range(0, n_prefix, chunk)]
    parts = [_attend(q_nope, q_rope, c_kv[lo:hi], k_rope[lo:hi], w_uk, w_uv, scale)
             for lo, hi in _bounds[chunk] if hi > lo]
    parts.append(_attend(q_nope, q_rope, c_kv[n_prefix:], k_rope[n_prefix:], w_uk, w_uv, scale,
                         np.tril(np.ones((n_new, n_new), bool))))
    lses = np.stack([l for _, l in parts])
    lse = np.logaddexp.reduce(lses, axis=0)
    out = sum(np.exp(l - lse)[..., None] * o for o, l in parts)
    return out.transpose(1, 0, 2), lse
