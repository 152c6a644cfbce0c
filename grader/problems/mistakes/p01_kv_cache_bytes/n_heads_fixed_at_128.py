"""mistake: n_heads fixed at 128
message: Your answer uses n_heads = 128 (DeepSeek-V3's value, the default) whatever n_heads
  is passed; use the argument.
"""
import math


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    per_token = {"mha": 2 * 128 * head_dim,                 # slip: 128 heads, always
                 "gqa": 2 * n_kv_heads * head_dim,
                 "mqa": 2 * head_dim,
                 "mla": d_latent + d_rope}[kind]
    return per_token * n_tokens * n_layers * bytes_per_element
