"""expect: pass
slip: none -- float arithmetic, pairs as n_new * (2 n_ctx - n_new + 1) / 2.
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * (2.0 * n_ctx - n_new + 1.0) / 2.0
    madds_expand = n_ctx * n_heads * d_latent * (d_nope + d_v) + pairs * n_heads * (d_nope + d_rope + d_v)
    madds_absorb = n_new * n_heads * d_latent * (d_nope + d_v) + pairs * n_heads * (d_latent + d_rope + d_latent)
    return {"expand": 2.0 * madds_expand, "absorb": 2.0 * madds_absorb}


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return min(("absorb", "expand"), key=lambda k: f[k])    # min keeps "absorb" on a tie
