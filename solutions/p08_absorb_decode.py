"""Problem 8 -- model answer: absorbed-path decode, never expanding the cache."""
import numpy as np


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    # Fold W_UK into the query: q_lat[h] = w_uk[h] @ q_nope[h].       [n_heads, d_latent]
    q_lat = np.einsum("hn,hln->hl", q_nope, w_uk)
    # Every head scores the same cached rows [c; k_rope].              [n_heads, T]
    logits = scale * (q_lat @ c_kv.T + q_rope @ k_rope.T)
    # Softmax over the tokens, shifted by each head's max so exp cannot overflow.
    logits = logits - logits.max(axis=1, keepdims=True)
    weights = np.exp(logits)
    weights = weights / weights.sum(axis=1, keepdims=True)
    # Weighted sum of latents, then W_UV once per head.                [n_heads, d_v]
    o_lat = weights @ c_kv
    return np.einsum("hl,hlv->hv", o_lat, w_uv)
