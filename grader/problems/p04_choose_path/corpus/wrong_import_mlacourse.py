"""expect: fail
slip: import mlacourse, then call mlacourse.flops for both answers.
reason: uses_reference
"""
import mlacourse


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    return mlacourse.flops.attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    return mlacourse.flops.choose_path(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
