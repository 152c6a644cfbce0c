"""mistake: d_rope fixed at 64
message: Your answer uses d_rope = 64 (DeepSeek-V3's value, the default) whatever d_rope is
  passed; use the argument.
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    per = {"mha": 2 * n_heads * head_dim, "gqa": 2 * n_kv_heads * head_dim,
           "mqa": 2 * head_dim, "mla": d_latent + 64}[kind]   # slip: d_rope ignored
    return per * n_tokens * n_layers * bytes_per_element
