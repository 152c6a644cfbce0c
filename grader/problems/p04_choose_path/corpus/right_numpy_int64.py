"""expect: pass
slip: none -- numpy int64 arithmetic, numpy integers in the dict.
"""
import numpy as np


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    n_new, n_ctx = np.int64(n_new), np.int64(n_ctx)
    seen = np.arange(n_ctx - n_new + 1, n_ctx + 1, dtype=np.int64)   # keys each new token sees
    pairs = seen.sum()
    h = np.int64(n_heads)
    e = 2 * h * (n_ctx * d_latent * (d_nope + d_v) + pairs * (d_nope + d_rope + d_v))
    a = 2 * h * (n_new * d_latent * (d_nope + d_v) + pairs * (d_latent + d_rope + d_latent))
    return {"expand": e, "absorb": a}


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return "expand" if f["expand"] < f["absorb"] else "absorb"
