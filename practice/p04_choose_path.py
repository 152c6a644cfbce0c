"""Problem 4 - choose_path: count both paths' FLOPs and pick the cheaper.

Chapter: notebooks/04_flops_and_path_choice.ipynb
Check your answer: python practice/judge.py 4      (hints: python practice/judge.py 4 --hint)
The whole statement: python practice/judge.py 4 --statement

The n_new new tokens are the last n_new of the n_ctx tokens attended; each one sees
itself and every token before it. Count 2 FLOPs per multiply-add, and only the work
that differs between the two paths:
  expand: up-project all n_ctx cached latents into per-head k_nope and v, then per
          (query, key) pair a score over d_nope + d_rope and a value sum over d_v.
  absorb: fold W_UK into each new query and apply W_UV to each new latent output,
          then per pair a score over d_latent + d_rope and a value sum over d_latent.
All of it happens in every one of the n_heads heads.
"""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    """Return {"expand": E, "absorb": A}: the FLOPs of each path (ints or floats)."""
    # TODO(problem 4): count the (query, key) pairs, then the two totals.
    raise NotImplementedError("attention_flops: count the FLOPs of both paths")


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    """Return "expand" or "absorb", whichever needs fewer FLOPs; a tie returns "absorb"."""
    # TODO(problem 4): compare the two counts from attention_flops.
    raise NotImplementedError("choose_path: pick the cheaper path")
