"""expect: fail
slip: from mlacourse.flops import attention_flops -- the course's own answer, re-exported.
reason: uses_reference
"""
from mlacourse.flops import attention_flops  # noqa: F401


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return "expand" if f["expand"] < f["absorb"] else "absorb"
