"""mistake: GQA with all heads
message: Your GQA count uses every query head; only n_kv_heads key/value heads are stored.
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    if kind in ("mha", "gqa"):            # slip: GQA is not MHA
        per = 2 * n_heads * head_dim
    elif kind == "mqa":
        per = 2 * head_dim
    else:
        per = d_latent + d_rope
    return per * n_tokens * n_layers * bytes_per_element
