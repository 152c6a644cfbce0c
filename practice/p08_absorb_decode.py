"""Problem 8 - absorb_decode: decode from the latent cache only (expanding K/V is rejected).

Chapter: notebooks/03_two_paths.ipynb
Check your answer: python practice/judge.py 8      (hints: python practice/judge.py 8 --hint)
The whole statement: python practice/judge.py 8 --statement

Shapes:
  q_nope [n_heads, d_nope]            q_rope [n_heads, d_rope]  (already rotated)
  c_kv   [T, d_latent]  the latent cache, new token included
  k_rope [T, d_rope]    rotated, shared by all heads
  w_uk   [n_heads, d_latent, d_nope]  w_uv [n_heads, d_latent, d_v]
  out    [n_heads, d_v]

Per head h, with k_t = c_kv[t] @ w_uk[h] and v_t = c_kv[t] @ w_uv[h]:
  out[h] = sum_t softmax_t(scale * (q_nope[h] . k_t + q_rope[h] . k_rope[t])) * v_t
but never build k_t or v_t for the cached tokens: regroup the products so that the
heads work on the latents directly. Do not modify the inputs; keep the softmax stable.
"""
import numpy as np  # noqa: F401


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    """Return out [n_heads, d_v] for one new token, computed in the latent space."""
    # TODO(problem 8): absorb W_UK into the query, score against c_kv and k_rope,
    # softmax over the T tokens, weight the latents, apply W_UV last.
    raise NotImplementedError("absorb_decode: compute attention in the latent space")
