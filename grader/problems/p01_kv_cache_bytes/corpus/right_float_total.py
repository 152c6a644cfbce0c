"""expect: pass
slip: none -- computes in floats (exact below 2**53) and returns a float.
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    total = float(n_tokens) * n_layers * bytes_per_element
    if kind == "mla":
        return total * (d_latent + d_rope)
    heads = n_heads if kind == "mha" else n_kv_heads if kind == "gqa" else 1
    return total * heads * head_dim * 2.0
