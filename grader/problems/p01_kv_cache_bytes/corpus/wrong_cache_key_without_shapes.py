"""expect: fail
slip: memoises the answer with a hand-made key of (kind, n_tokens, n_layers, bytes_per_element), leaving the head shapes out of the key.
"""
_seen = {}


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    key = (kind, n_tokens, n_layers, bytes_per_element)
    if key in _seen:
        return _seen[key]
    heads = {"mha": n_heads, "gqa": n_kv_heads, "mqa": 1}
    if kind == "mla":
        per_layer_token = d_latent + d_rope
    else:
        per_layer_token = 2 * heads[kind] * head_dim
    _seen[key] = n_tokens * n_layers * per_layer_token * bytes_per_element
    return _seen[key]
