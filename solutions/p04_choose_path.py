"""Problem 4 -- model answer: FLOPs of the expand and absorb paths, and the choice."""


def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    # Causal pairs: new token j (0-based) sees n_ctx - n_new + 1 + j tokens.
    pairs = n_new * n_ctx - n_new * (n_new - 1) // 2

    # expand: every cached latent -> per-head k_nope (d_nope) and v (d_v), d_latent MACs each.
    expand_tokens = n_ctx * 2 * n_heads * d_latent * (d_nope + d_v)
    # per pair and head: q.k over d_nope + d_rope, then p * v over d_v.
    expand_pairs = pairs * 2 * n_heads * (d_nope + d_rope + d_v)

    # absorb: each new query q_nope -> q_lat (W_UK), each latent output -> v (W_UV).
    absorb_tokens = n_new * 2 * n_heads * d_latent * (d_nope + d_v)
    # per pair and head: [q_lat; q_rope].[c; k_rope] over d_latent + d_rope, p * c over d_latent.
    absorb_pairs = pairs * 2 * n_heads * (d_latent + d_rope + d_latent)

    return {"expand": expand_tokens + expand_pairs, "absorb": absorb_tokens + absorb_pairs}


def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return "expand" if f["expand"] < f["absorb"] else "absorb"
