"""expect: fail
slip: remembers each choice in a table keyed by (n_new, n_ctx), as if the model shapes never changed.
"""
_choice = {}


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2
    expand = 2 * (n_ctx * d_latent * n_heads * (d_nope + d_v) + pairs * n_heads * (d_nope + d_rope + d_v))
    absorb = 2 * (n_new * n_heads * d_latent * (d_nope + d_v) + pairs * n_heads * (2 * d_latent + d_rope))
    return {"expand": expand, "absorb": absorb}


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    if (n_new, n_ctx) not in _choice:
        f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
        _choice[(n_new, n_ctx)] = "expand" if f["expand"] < f["absorb"] else "absorb"
    return _choice[(n_new, n_ctx)]
