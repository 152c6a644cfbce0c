"""mistake: head_dim fixed at 128
message: Your answer uses head_dim = 128 (DeepSeek-V3's value, the default) whatever
  head_dim is passed; use the argument.
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    hd = 128                               # slip: "the head dim is always 128"
    per = {"mha": 2 * n_heads * hd, "gqa": 2 * n_kv_heads * hd, "mqa": 2 * hd,
           "mla": d_latent + d_rope}[kind]
    return per * n_tokens * n_layers * bytes_per_element
