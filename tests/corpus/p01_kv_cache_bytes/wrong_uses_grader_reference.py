"""expect: fail
slip: imports the judge's own spec and returns its reference answer.
reason: uses_reference
"""
from grader.problems.p01_kv_cache_bytes import reference


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    return reference(kind, n_tokens, n_layers, bytes_per_element, n_heads, head_dim,
                     n_kv_heads, d_latent, d_rope)
