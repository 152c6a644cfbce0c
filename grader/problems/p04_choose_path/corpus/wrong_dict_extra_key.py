"""expect: fail
slip: attention_flops also returns a "choice" key; the dict must have exactly expand and absorb.
reason: wrong_type
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2
    up = 2 * n_heads * d_latent * (d_nope + d_v)
    e = n_ctx * up + pairs * 2 * n_heads * (d_nope + d_rope + d_v)
    a = n_new * up + pairs * 2 * n_heads * (2 * d_latent + d_rope)
    return {"expand": e, "absorb": a, "choice": "expand" if e < a else "absorb"}   # slip


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return "expand" if f["expand"] < f["absorb"] else "absorb"
