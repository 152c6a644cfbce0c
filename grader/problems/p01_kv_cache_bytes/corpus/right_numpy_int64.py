"""expect: pass
slip: none -- numpy int64 arithmetic, returns a numpy integer.
"""
import numpy as np


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    if kind == "mla":
        per_token = np.int64(d_latent) + d_rope
    elif kind == "mqa":
        per_token = np.int64(2) * head_dim
    elif kind == "gqa":
        per_token = np.int64(2) * n_kv_heads * head_dim
    else:
        per_token = np.int64(2) * n_heads * head_dim
    return per_token * np.int64(n_tokens) * n_layers * bytes_per_element
