"""mistake: one FLOP per multiply-add
message: Your counts are exactly half: count 2 FLOPs per multiply-add.
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2
    up = n_heads * d_latent * (d_nope + d_v)
    return {"expand": n_ctx * up + pairs * n_heads * (d_nope + d_rope + d_v),
            "absorb": n_new * up + pairs * n_heads * (2 * d_latent + d_rope)}
