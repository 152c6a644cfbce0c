"""Problem 3 - expand_prefill: model answer."""
import numpy as np


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    n_tok = c_kv.shape[0]
    # 1. expand: every cached latent becomes a key and a value for every head
    k_nope = np.einsum("tc,hcd->htd", c_kv, w_uk)             # [H, T, d_nope]
    v = np.einsum("tc,hcd->htd", c_kv, w_uv)                  # [H, T, d_v]
    # 2. score: per-head content part plus the shared rope key
    scores = np.einsum("shd,htd->hst", q_nope, k_nope)        # [H, T(queries), T(keys)]
    scores = scores + np.einsum("shr,tr->hst", q_rope, k_rope)
    scores = scores * scale
    # 3. causal softmax over keys: query s sees keys 0..s
    visible = np.tril(np.ones((n_tok, n_tok), dtype=bool))   # [T, T]
    scores = np.where(visible, scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)      # finite: the diagonal is visible
    p = np.exp(scores)
    p = p / p.sum(axis=-1, keepdims=True)                     # [H, T, T]
    return np.einsum("hst,htd->shd", p, v)                    # [T, H, d_v]
