"""mistake: n_kv_heads fixed at 8
message: Your answer uses n_kv_heads = 8 (DeepSeek-V3's value, the default) whatever
  n_kv_heads is passed; use the argument.
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    per = {"mha": 2 * n_heads * head_dim, "gqa": 2 * 8 * head_dim,   # slip
           "mqa": 2 * head_dim, "mla": d_latent + d_rope}[kind]
    return per * n_tokens * n_layers * bytes_per_element
