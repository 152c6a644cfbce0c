"""mistake: bytes_per_element fixed at 2
message: Your answer uses bytes_per_element = 2 (DeepSeek-V3's value, the default) whatever
  bytes_per_element is passed; use the argument.
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    per = {"mha": 2 * n_heads * head_dim, "gqa": 2 * n_kv_heads * head_dim,
           "mqa": 2 * head_dim, "mla": d_latent + d_rope}[kind]
    return per * n_tokens * n_layers * 2    # slip: the dtype is hard-coded
