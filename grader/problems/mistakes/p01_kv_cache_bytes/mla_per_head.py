"""mistake: MLA per head
message: Your MLA count multiplies by n_heads; the latent and the rotary key are shared by
  all heads, so they are stored once per token per layer.
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    per = {"mha": 2 * n_heads * head_dim, "gqa": 2 * n_kv_heads * head_dim,
           "mqa": 2 * head_dim,
           "mla": n_heads * (d_latent + d_rope)}[kind]   # slip: per head
    return per * n_tokens * n_layers * bytes_per_element
