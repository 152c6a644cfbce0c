"""mistake: no rope in the pair cost
message: Your per-pair cost leaves out the d_rope dimensions: the score is a dot product
  over d_nope + d_rope (expand) or d_latent + d_rope (absorb).
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2
    up = 2 * n_heads * d_latent * (d_nope + d_v)
    return {"expand": n_ctx * up + pairs * 2 * n_heads * (d_nope + d_v),     # slip
            "absorb": n_new * up + pairs * 2 * n_heads * (2 * d_latent)}     # slip
