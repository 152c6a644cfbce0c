"""expect: fail
slip: returns a formatted string ("2,302,672,896 bytes") instead of a number.
reason: wrong_type
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    per = {"mha": 2 * n_heads * head_dim, "gqa": 2 * n_kv_heads * head_dim,
           "mqa": 2 * head_dim, "mla": d_latent + d_rope}[kind]
    return f"{per * n_tokens * n_layers * bytes_per_element:,} bytes"
