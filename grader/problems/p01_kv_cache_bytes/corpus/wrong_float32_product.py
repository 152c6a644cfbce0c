"""expect: fail
slip: multiplies the four factors in a float32 numpy product, which rounds totals above 2**24 bytes.
"""
import numpy as np


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    per_token = {"mha": 2 * n_heads * head_dim, "gqa": 2 * n_kv_heads * head_dim,
                 "mqa": 2 * head_dim, "mla": d_latent + d_rope}[kind]
    factors = np.array([n_tokens, n_layers, per_token, bytes_per_element], dtype=np.float32)
    return float(np.prod(factors))
