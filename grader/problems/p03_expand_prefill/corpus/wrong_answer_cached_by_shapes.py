"""expect: fail
slip: memoises the whole answer by the argument shapes ("the judge calls it twice with the same sizes").
"""
import numpy as np

_answers = {}


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    key = tuple(a.shape for a in (q_nope, q_rope, c_kv, k_rope, w_uk, w_uv))
    if key in _answers:
        return _answers[key]
    T = c_kv.shape[0]
    out = np.zeros((T, w_uv.shape[0], w_uv.shape[2]))
    for h in range(w_uk.shape[0]):
        k = c_kv @ w_uk[h]
        v = c_kv @ w_uv[h]
        for s in range(T):
            sc = scale * (k[: s + 1] @ q_nope[s, h] + k_rope[: s + 1] @ q_rope[s, h])
            e = np.exp(sc - sc.max())
            out[s, h] = e @ v[: s + 1] / e.sum()
    _answers[key] = out
    return out
