"""expect: fail
slip: caches the FLOP counts with functools.lru_cache on a helper that takes only (n_new, n_ctx, n_heads) and reads the other shapes from a module variable set by the last call.
"""
from functools import lru_cache

_dims = {}


@lru_cache(maxsize=None)
def _counts(n_new, n_ctx, n_heads):
    d = _dims
    pairs = n_ctx * n_new - n_new * (n_new - 1) // 2
    e = n_ctx * d["d_latent"] * n_heads * (d["d_nope"] + d["d_v"]) + pairs * n_heads * (d["d_nope"] + d["d_rope"] + d["d_v"])
    a = n_new * n_heads * d["d_latent"] * (d["d_nope"] + d["d_v"]) + pairs * n_heads * (2 * d["d_latent"] + d["d_rope"])
    return 2 * e, 2 * a


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    _dims.update(d_nope=d_nope, d_rope=d_rope, d_v=d_v, d_latent=d_latent)
    e, a = _counts(n_new, n_ctx, n_heads)
    return {"expand": e, "absorb": a}


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return "expand" if f["expand"] < f["absorb"] else "absorb"
