"""expect: pass
slip: none -- treats the cache as 576-style rows [c; k_rope] and the query as [q_lat; q_rope] (an MQA).
"""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    q_full = np.concatenate([np.matmul(w_uk, q_nope[:, :, None])[..., 0], q_rope], axis=1)  # [H, d_c + d_r]
    rows = np.concatenate([c_kv, k_rope], axis=1)                                        # [T, d_c + d_r]
    s = q_full @ rows.T * scale
    m = s.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(s - m).sum(axis=1, keepdims=True))
    o_lat = np.exp(s - lse) @ c_kv                                                       # [H, d_latent]
    return np.matmul(o_lat[:, None, :], w_uv)[:, 0, :]                                   # [H, d_v]
