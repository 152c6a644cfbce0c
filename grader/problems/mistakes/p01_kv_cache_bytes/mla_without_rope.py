"""mistake: MLA without rope
message: Your MLA count has only the d_latent latent numbers; each token also caches the
  d_rope rotary key numbers (512 + 64 = 576 for V3).
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    per = {"mha": 2 * n_heads * head_dim, "gqa": 2 * n_kv_heads * head_dim,
           "mqa": 2 * head_dim,
           "mla": d_latent}[kind]         # slip: + d_rope missing
    return per * n_tokens * n_layers * bytes_per_element
