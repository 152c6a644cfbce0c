"""expect: pass
slip: none -- choose_path decides from the sign of (expand - absorb), written term by term.
"""


def _pairs(n_new, n_ctx):
    return n_new * n_ctx - n_new * (n_new - 1) // 2


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    p = _pairs(n_new, n_ctx)
    per_row = 2 * n_heads * d_latent * (d_nope + d_v)
    return {"expand": n_ctx * per_row + p * 2 * n_heads * (d_nope + d_rope + d_v),
            "absorb": n_new * per_row + p * 2 * n_heads * (2 * d_latent + d_rope)}


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    # expand - absorb = (n_ctx - n_new) * up-projection - pairs * (extra per-pair work of absorb)
    up = d_latent * (d_nope + d_v)
    extra = 2 * d_latent - d_nope - d_v
    diff = (n_ctx - n_new) * up - _pairs(n_new, n_ctx) * extra
    return "expand" if diff < 0 else "absorb"
