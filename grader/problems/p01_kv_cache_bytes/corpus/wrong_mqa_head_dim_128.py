"""expect: fail
slip: the MQA branch hard-codes one head of 128 numbers; only the default case has head_dim 128.
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    if kind == "mha":
        per = 2 * n_heads * head_dim
    elif kind == "gqa":
        per = 2 * n_kv_heads * head_dim
    elif kind == "mqa":
        per = 2 * 128                      # slip: a literal instead of head_dim
    else:
        per = d_latent + d_rope
    return per * n_tokens * n_layers * bytes_per_element
