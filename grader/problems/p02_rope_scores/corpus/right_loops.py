"""expect: pass
slip: none -- plain Python loops over heads, keys and pairs, math.cos / math.sin.
"""
import math

import numpy as np


def _rot(x, pos, theta):
    d = len(x)
    out = [0.0] * d
    for i in range(d // 2):
        a = pos * theta ** (-2 * i / d)
        out[2 * i] = x[2 * i] * math.cos(a) - x[2 * i + 1] * math.sin(a)
        out[2 * i + 1] = x[2 * i] * math.sin(a) + x[2 * i + 1] * math.cos(a)
    return out


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    n_heads, d_nope = q_nope.shape
    d_rope = q_rope.shape[1]
    T = k_rope.shape[0]
    scale = 1.0 / math.sqrt(d_nope + d_rope)
    scores = np.zeros((n_heads, T))
    rk = [_rot(k_rope[t], int(k_pos[t]), theta) for t in range(T)]
    for h in range(n_heads):
        rq = _rot(q_rope[h], q_pos, theta)
        for t in range(T):
            nope = sum(q_nope[h, i] * k_nope[t, h, i] for i in range(d_nope))
            rope = sum(rq[i] * rk[t][i] for i in range(d_rope))
            scores[h, t] = (nope + rope) * scale
    return scores
