"""expect: fail
slip: uses V3's shapes (128 heads, 128/64/128/512) literally and ignores the shape arguments.
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2
    up = 2 * 128 * 512 * (128 + 128)                      # slip: literals
    return {"expand": n_ctx * up + pairs * 2 * 128 * (128 + 64 + 128),
            "absorb": n_new * up + pairs * 2 * 128 * (2 * 512 + 64)}


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return "expand" if f["expand"] < f["absorb"] else "absorb"
