"""Problem 3 - expand_prefill: causal prefill through the expand path.

Chapter: notebooks/03_two_paths.ipynb
Check your answer: python practice/judge.py 3      (hints: python practice/judge.py 3 --hint)
The whole statement: python practice/judge.py 3 --statement
"""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    """Causal MLA attention for T prefill tokens, expanding the latents into per-head K/V.

    q_nope [T, n_heads, d_nope]   q_rope [T, n_heads, d_rope]  (already rotated)
    c_kv   [T, d_latent]          k_rope [T, d_rope]           (already rotated, shared by heads)
    w_uk   [n_heads, d_latent, d_nope]   w_uv [n_heads, d_latent, d_v]
    scale  float

    Returns out [T, n_heads, d_v]; token s attends to tokens 0..s.
    """
    # TODO(problem 3): expand k_nope and v, score (nope + rope) * scale, causal softmax, weight v.
    raise NotImplementedError("problem 3 (expand_prefill) is not written yet")
