"""expect: fail
slip: takes the element counts and the byte total from mlacourse.cache instead of writing them.
reason: uses_reference
"""
from mlacourse import cache

DTYPE = {1: "fp8", 2: "bf16", 4: "fp32"}


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    el = {"mha": lambda: cache.mha_elements(n_heads, head_dim),
          "gqa": lambda: cache.gqa_elements(n_kv_heads, head_dim),
          "mqa": lambda: cache.mqa_elements(head_dim),
          "mla": lambda: cache.mla_elements(d_latent, d_rope)}[kind]()
    return cache.cache_bytes(el, n_layers=n_layers, n_tokens=n_tokens, dtype=DTYPE[bytes_per_element])
