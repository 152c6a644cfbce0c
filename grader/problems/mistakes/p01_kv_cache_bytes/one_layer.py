"""mistake: one layer
message: Your count is for a single layer; every one of the n_layers layers keeps its own
  cache.
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    per = {"mha": 2 * n_heads * head_dim, "gqa": 2 * n_kv_heads * head_dim,
           "mqa": 2 * head_dim, "mla": d_latent + d_rope}[kind]
    return per * n_tokens * bytes_per_element      # slip: n_layers forgotten
