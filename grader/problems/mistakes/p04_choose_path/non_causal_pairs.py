"""mistake: non-causal pairs
message: Your FLOP count is the non-causal one (n_new * n_ctx pairs): each new token only
  sees itself and the tokens before it.
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * n_ctx                                  # slip: not causal
    up = 2 * n_heads * d_latent * (d_nope + d_v)
    return {"expand": n_ctx * up + pairs * 2 * n_heads * (d_nope + d_rope + d_v),
            "absorb": n_new * up + pairs * 2 * n_heads * (2 * d_latent + d_rope)}
