"""expect: fail
slip: hard-codes head_dim 128 (V3's value) and ignores the argument; the factor 2 is there.
mistake: head_dim fixed at 128
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    hd = 128                               # slip: "the head dim is always 128"
    per = {"mha": 2 * n_heads * hd, "gqa": 2 * n_kv_heads * hd, "mqa": 2 * hd,
           "mla": d_latent + d_rope}[kind]
    return per * n_tokens * n_layers * bytes_per_element
