"""expect: fail
slip: inside each part subtracts the part's single largest score (over all heads and new tokens) instead of each row's maximum.
"""
import numpy as np


def _part(q_nope, q_rope, c, kr, w_uk, w_uv, scale, mask=None):
    k = np.einsum("tc,hcd->htd", c, w_uk)
    v = np.einsum("tc,hcd->htd", c, w_uv)
    s = scale * (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, kr))
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    top = s.max()                                   # one number for the whole part
    e = np.exp(s - top)
    z = e.sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.einsum("hst,htd->hsd", e, v) / z[..., None], top + np.log(z)


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    n_new = q_nope.shape[0]
    n_prefix = c_kv.shape[0] - n_new
    parts = []
    for lo in range(0, n_prefix, chunk):
        hi = min(lo + chunk, n_prefix)
        parts.append(_part(q_nope, q_rope, c_kv[lo:hi], k_rope[lo:hi], w_uk, w_uv, scale))
    parts.append(_part(q_nope, q_rope, c_kv[n_prefix:], k_rope[n_prefix:], w_uk, w_uv, scale,
                       np.tril(np.ones((n_new, n_new), bool))))
    lses = np.stack([l for _, l in parts])
    m = lses.max(0)
    w = np.exp(lses - m)
    out = sum(wi[..., None] * o for wi, (o, _) in zip(w, parts)) / w.sum(0)[..., None]
    return out.transpose(1, 0, 2), m + np.log(w.sum(0))
