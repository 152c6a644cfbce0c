"""expect: fail
slip: stacks [w_uk | w_uv] once and keeps it in a module variable keyed by their shapes, so a later call with other weights of the same shape uses stale ones.
"""
import numpy as np

_stacked = {}


def _weights(w_uk, w_uv):
    key = (w_uk.shape, w_uv.shape)
    if key not in _stacked:
        _stacked[key] = np.concatenate([w_uk, w_uv], axis=2)   # [H, d_latent, d_nope + d_v]
    return _stacked[key]


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    d_nope = w_uk.shape[2]
    w = _weights(w_uk, w_uv)
    n_new = q_nope.shape[0]
    n_prefix = c_kv.shape[0] - n_new
    spans = [(lo, min(lo + chunk, n_prefix), False) for lo in range(0, n_prefix, chunk)]
    spans.append((n_prefix, c_kv.shape[0], True))
    outs, lses = [], []
    for lo, hi, causal in spans:
        kv = np.einsum("tc,hcd->htd", c_kv[lo:hi], w)
        k, v = kv[..., :d_nope], kv[..., d_nope:]
        s = scale * (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, k_rope[lo:hi]))
        if causal:
            s = np.where(np.tril(np.ones((n_new, n_new), bool)), s, -np.inf)
        m = s.max(-1, keepdims=True)
        e = np.exp(s - m)
        outs.append(np.einsum("hst,htd->hsd", e, v) / e.sum(-1)[..., None])
        lses.append(m[..., 0] + np.log(e.sum(-1)))
    lse = np.logaddexp.reduce(np.stack(lses), axis=0)
    out = sum(np.exp(l - lse)[..., None] * o for o, l in zip(outs, lses))
    return out.transpose(1, 0, 2), lse
