"""expect: fail
slip: an online softmax over the prefix chunks whose maximum is taken from the first part only and never raised afterwards.
"""
import numpy as np


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    S, H, _ = q_nope.shape
    n_prefix = c_kv.shape[0] - S
    m = None
    l = np.zeros((H, S))
    acc = np.zeros((H, S, w_uv.shape[-1]))

    def add(rows, kr, visible):
        nonlocal m, l, acc
        k = np.einsum("tc,hcd->htd", rows, w_uk)
        v = np.einsum("tc,hcd->htd", rows, w_uv)
        s = (np.einsum("shd,htd->hst", q_nope, k) + np.einsum("shr,tr->hst", q_rope, kr)) * scale
        s = np.where(visible, s, -np.inf)
        if m is None:
            m = s.max(-1)                     # set once, by the first part
        p = np.exp(s - m[..., None])
        l = l + p.sum(-1)
        acc = acc + p @ v

    for lo in range(0, n_prefix, chunk):
        add(c_kv[lo:lo + chunk][: n_prefix - lo], k_rope[lo:lo + chunk][: n_prefix - lo], True)
    add(c_kv[n_prefix:], k_rope[n_prefix:], np.tril(np.ones((S, S), dtype=bool)))
    return (acc / l[..., None]).transpose(1, 0, 2), m + np.log(l)
