"""expect: fail
slip: each new token is counted as seeing only the tokens BEFORE it, not itself.
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * n_ctx - n_new * (n_new + 1) // 2      # slip: off by one per token
    up = 2 * n_heads * d_latent * (d_nope + d_v)
    return {"expand": n_ctx * up + pairs * 2 * n_heads * (d_nope + d_rope + d_v),
            "absorb": n_new * up + pairs * 2 * n_heads * (2 * d_latent + d_rope)}


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return "expand" if f["expand"] < f["absorb"] else "absorb"
