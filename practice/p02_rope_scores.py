"""Problem 2 - rope_scores: attention scores with decoupled RoPE.

Chapter: notebooks/02_mla_and_decoupled_rope.ipynb
Check your answer: python practice/judge.py 2      (hints: python practice/judge.py 2 --hint)
The whole statement: python practice/judge.py 2 --statement
"""
import numpy as np


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    """Pre-softmax scores of one query token against T cached keys.

    q_nope [n_heads, d_nope]     q_rope [n_heads, d_rope]  (not yet rotated)
    k_nope [T, n_heads, d_nope]  k_rope [T, d_rope]        (shared by all heads, not yet rotated)
    q_pos  int                   k_pos  [T] int            theta: RoPE base

    Returns scores [n_heads, T]:
      (q_nope[h] . k_nope[t, h] + rot(q_rope[h], q_pos) . rot(k_rope[t], k_pos[t]))
      / sqrt(d_nope + d_rope)
    where rot rotates interleaved pairs (x[2i], x[2i+1]) by p * theta**(-2i/d_rope).
    """
    # TODO(problem 2): rotate the rope parts, add the two dot products, scale.
    raise NotImplementedError("problem 2 (rope_scores) is not written yet")
