"""expect: pass
slip: none -- functools.lru_cache over every argument (a correct memo: the key is the whole call).
"""
from functools import lru_cache


@lru_cache(maxsize=None)
def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    if kind == "mla":
        width = d_latent + d_rope
    else:
        kv_heads = {"mha": n_heads, "gqa": n_kv_heads, "mqa": 1}[kind]
        width = 2 * kv_heads * head_dim
    return n_tokens * n_layers * width * bytes_per_element
