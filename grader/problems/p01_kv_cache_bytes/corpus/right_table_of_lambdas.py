"""expect: pass
slip: none -- a dict of per-kind formulas instead of an if/elif chain.
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    numbers = {                                   # numbers cached per token per layer
        "mha": lambda: 2 * n_heads * head_dim,
        "gqa": lambda: 2 * n_kv_heads * head_dim,
        "mqa": lambda: 2 * head_dim,
        "mla": lambda: d_latent + d_rope,
    }
    return n_layers * n_tokens * numbers[kind]() * bytes_per_element
