"""mistake: expand only the new tokens
message: Your expand count up-projects only the n_new new tokens; the expand path must
  up-project every one of the n_ctx cached latents into per-head keys and values.
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2
    up = 2 * n_heads * d_latent * (d_nope + d_v)
    return {"expand": n_new * up + pairs * 2 * n_heads * (d_nope + d_rope + d_v),   # slip
            "absorb": n_new * up + pairs * 2 * n_heads * (2 * d_latent + d_rope)}
