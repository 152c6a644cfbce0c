"""expect: pass
slip: none -- lru_cache on functions of every argument (a correct memo).
"""
from functools import lru_cache


@lru_cache(maxsize=None)
def _flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent):
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2
    expand = n_ctx * n_heads * d_latent * (d_nope + d_v) + pairs * n_heads * (d_nope + d_rope + d_v)
    absorb = n_new * n_heads * d_latent * (d_nope + d_v) + pairs * n_heads * (2 * d_latent + d_rope)
    return 2 * expand, 2 * absorb


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    e, a = _flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return {"expand": e, "absorb": a}


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    e, a = _flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return "expand" if e < a else "absorb"
