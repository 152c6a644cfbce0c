"""expect: fail
slip: multiplies in numpy int32, which silently wraps around past 2**31 bytes.
"""
import numpy as np


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    per = {"mha": 2 * n_heads * head_dim, "gqa": 2 * n_kv_heads * head_dim,
           "mqa": 2 * head_dim, "mla": d_latent + d_rope}[kind]
    factors = np.array([per, n_tokens, n_layers, bytes_per_element], dtype=np.int32)
    return int(np.prod(factors, dtype=np.int32))   # slip: overflows for big caches
