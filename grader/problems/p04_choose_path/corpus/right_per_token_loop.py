"""expect: pass
slip: none -- counts the pairs by looping over the new tokens; choose_path compares the counts.
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = 0
    for j in range(n_new):                     # new token j sees n_ctx - n_new + 1 + j tokens
        pairs += n_ctx - n_new + 1 + j
    up = 2 * d_latent * (d_nope + d_v) * n_heads          # one latent -> k_nope and v, all heads
    expand = n_ctx * up + pairs * 2 * n_heads * (d_nope + d_rope + d_v)
    absorb = n_new * up + pairs * 2 * n_heads * (2 * d_latent + d_rope)
    return {"expand": expand, "absorb": absorb}


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return "absorb" if f["absorb"] <= f["expand"] else "expand"
