"""A right `choose_path`, in the style of the named mistakes that are a change to it
(mistakes.diff: '=== name.py from learner_choose_path.py'); grader/slips.py expands them.
"""


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2       # causal (query, key) pairs
    up = 2 * n_heads * d_latent * (d_nope + d_v)            # up-projecting one token's K and V
    expand = n_ctx * up + pairs * 2 * n_heads * (d_nope + d_rope + d_v)
    absorb = n_new * up + pairs * 2 * n_heads * (2 * d_latent + d_rope)
    return "expand" if expand < absorb else "absorb"
