"""expect: pass
slip: none -- counts the key/value heads each kind stores, then K and V of each.
"""
import math


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    if kind == "mla":
        per_token = d_latent + d_rope             # one latent + one shared rope key
    else:
        kv_heads = {"mha": n_heads, "gqa": n_kv_heads, "mqa": 1}[kind]
        per_token = kv_heads * 2 * head_dim       # a key and a value per stored head
    return math.prod([per_token, n_tokens, n_layers, bytes_per_element])
