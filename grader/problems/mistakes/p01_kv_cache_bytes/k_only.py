"""mistake: K only
message: Your count is half: MHA, GQA and MQA store a key AND a value per KV head (the
  factor 2).
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    if kind == "mha":
        per = n_heads * head_dim          # slip: no factor 2 for V
    elif kind == "gqa":
        per = n_kv_heads * head_dim
    elif kind == "mqa":
        per = head_dim
    else:
        per = d_latent + d_rope
    return per * n_tokens * n_layers * bytes_per_element
