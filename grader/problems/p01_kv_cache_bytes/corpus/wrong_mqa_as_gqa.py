"""expect: fail
slip: treats MQA like GQA (n_kv_heads key/value heads); MQA has exactly one.
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    if kind == "mha":
        per = 2 * n_heads * head_dim
    elif kind in ("gqa", "mqa"):            # slip
        per = 2 * n_kv_heads * head_dim
    else:
        per = d_latent + d_rope
    return per * n_tokens * n_layers * bytes_per_element
