"""mistake: d_latent fixed at 512
message: Your answer uses d_latent = 512 (DeepSeek-V3's value, the default) whatever
  d_latent is passed; use the argument.
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    d_latent = 512  # slip
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2
    expand = 2 * n_ctx * n_heads * d_latent * (d_nope + d_v) + 2 * pairs * n_heads * (d_nope + d_rope + d_v)
    absorb = 2 * n_new * n_heads * d_latent * (d_nope + d_v) + 2 * pairs * n_heads * (2 * d_latent + d_rope)
    return {"expand": expand, "absorb": absorb}
