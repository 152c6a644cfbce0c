"""expect: fail
slip: works out the numbers per token once per kind and keeps them in a dict, so later calls with other head shapes reuse the first call's count.
"""
_PER_TOKEN = {}


def _numbers_per_token(kind, n_heads, head_dim, n_kv_heads, d_latent, d_rope):
    if kind not in _PER_TOKEN:
        if kind == "mha":
            _PER_TOKEN[kind] = 2 * n_heads * head_dim
        elif kind == "gqa":
            _PER_TOKEN[kind] = 2 * n_kv_heads * head_dim
        elif kind == "mqa":
            _PER_TOKEN[kind] = 2 * head_dim
        else:
            _PER_TOKEN[kind] = d_latent + d_rope
    return _PER_TOKEN[kind]


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    per_token = _numbers_per_token(kind, n_heads, head_dim, n_kv_heads, d_latent, d_rope)
    return n_tokens * n_layers * per_token * bytes_per_element
