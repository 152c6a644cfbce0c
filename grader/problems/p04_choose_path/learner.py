"""A right answer to problem 4, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2
    expand = 2 * n_ctx * n_heads * d_latent * (d_nope + d_v) + 2 * pairs * n_heads * (d_nope + d_rope + d_v)
    absorb = 2 * n_new * n_heads * d_latent * (d_nope + d_v) + 2 * pairs * n_heads * (2 * d_latent + d_rope)
    return {"expand": expand, "absorb": absorb}
