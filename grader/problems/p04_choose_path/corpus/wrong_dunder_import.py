"""expect: fail
slip: __import__ with a name built at run time, to get mlacourse.flops.
reason: uses_reference
"""
_flops = getattr(__import__("".join(["mla", "course"]) + ".flops"), "flops")


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    return _flops.attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return "expand" if f["expand"] < f["absorb"] else "absorb"
