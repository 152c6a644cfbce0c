"""expect: fail
slip: choose_path uses V3's crossover (about 171 new tokens) for every shape.
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2
    up = 2 * n_heads * d_latent * (d_nope + d_v)
    return {"expand": n_ctx * up + pairs * 2 * n_heads * (d_nope + d_rope + d_v),
            "absorb": n_new * up + pairs * 2 * n_heads * (2 * d_latent + d_rope)}


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    return "absorb" if n_new <= 171 else "expand"         # slip: V3-only rule of thumb
