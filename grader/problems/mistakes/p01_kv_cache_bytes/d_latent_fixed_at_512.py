"""mistake: d_latent fixed at 512
message: Your answer uses d_latent = 512 (DeepSeek-V3's value, the default) whatever
  d_latent is passed; use the argument.
"""
import math


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    per_token = {"mha": 2 * n_heads * head_dim,
                 "gqa": 2 * n_kv_heads * head_dim,
                 "mqa": 2 * head_dim,
                 "mla": 512 + d_rope}[kind]                   # slip: 512
    return per_token * n_tokens * n_layers * bytes_per_element
