"""Problem 6 - chunked_extend: extend after a long prefix, expanding it chunk by chunk.

Chapter: notebooks/04_flops_and_path_choice.ipynb
Check your answer: python practice/judge.py 6      (hints: python practice/judge.py 6 --hint)
The whole statement: python practice/judge.py 6 --statement
"""
import numpy as np


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    """Causal attention of n_new new tokens over T cached rows (the last n_new are the new
    tokens), expanding at most `chunk` prefix rows into per-head K/V at a time.

    q_nope [n_new, n_heads, d_nope]   q_rope [n_new, n_heads, d_rope]  (rotated)
    c_kv   [T, d_latent]              k_rope [T, d_rope]               (rotated, shared)
    w_uk   [n_heads, d_latent, d_nope]   w_uv [n_heads, d_latent, d_v]
    scale  float                      chunk  int

    Returns (out [n_new, n_heads, d_v], lse [n_heads, n_new]); new token i sees rows
    0 .. T - n_new + i. Merge the parts by log-sum-exp.
    """
    # TODO(problem 6): prefix chunks (no mask) + new block (causal) -> merge by lse.
    raise NotImplementedError("problem 6 (chunked_extend) is not written yet")
