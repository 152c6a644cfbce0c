"""FLOP and byte accounting for the two MLA paths, path choice, and decode intensity.

Accounting: a multiply-add is 2 FLOPs; only the attention core and the up/absorb
projections that differ between paths are counted (the query/KV down-projections and
W_O are the same for both paths). Bytes count what must cross device memory once.
"""
from __future__ import annotations

from .cache import BYTES_PER_ELEMENT
from .config import DEEPSEEK_V3 as _V3

# Every default width below is read from DEEPSEEK_V3 (config.py), the one place the shapes
# are written down; V3_SHAPES is the same five widths as a dict of keyword arguments.
V3_SHAPES = _V3.attention_shapes
_H, _DN, _DR, _DV, _DC = _V3.n_heads, _V3.d_nope, _V3.d_rope, _V3.d_v, _V3.d_latent


def expand_flops_per_cached_token(n_heads=_H, d_nope=_DN, d_v=_DV, d_latent=_DC) -> int:
    """Up-project one cached latent into every head's k_nope and v: 2*d_latent*H*(d_nope+d_v)."""
    return 2 * d_latent * n_heads * (d_nope + d_v)


def absorb_flops_per_new_token(n_heads=_H, d_nope=_DN, d_v=_DV, d_latent=_DC) -> int:
    """Fold W_UK into one query and apply W_UV to its latent output: 2*H*d_latent*(d_nope+d_v)."""
    return 2 * n_heads * d_nope * d_latent + 2 * n_heads * d_latent * d_v


def expand_flops_per_pair(n_heads=_H, d_nope=_DN, d_rope=_DR, d_v=_DV) -> int:
    """One (query, key) pair in the expand path: QK over d_nope+d_rope, PV over d_v, all heads."""
    return 2 * n_heads * (d_nope + d_rope) + 2 * n_heads * d_v


def absorb_flops_per_pair(n_heads=_H, d_rope=_DR, d_latent=_DC) -> int:
    """One pair in the absorb path: QK over d_latent+d_rope (576), PV over d_latent (512)."""
    return 2 * n_heads * (d_latent + d_rope) + 2 * n_heads * d_latent


def causal_pairs(n_new: int, n_ctx: int) -> int:
    """(query, key) pairs when the n_new new tokens are the last of n_ctx and each sees
    itself and everything before it: n_new*n_ctx - n_new*(n_new-1)/2."""
    if not 1 <= n_new <= n_ctx:
        raise ValueError(f"need 1 <= n_new <= n_ctx, got n_new={n_new}, n_ctx={n_ctx}")
    return n_new * n_ctx - n_new * (n_new - 1) // 2


def sparse_causal_pairs(n_new: int, n_ctx: int, topk: int) -> int:
    """(query, key) pairs when each of the n_new new tokens (the last of n_ctx) attends to
    at most `topk` of the tokens it can see (DeepSeek Sparse Attention, chapter 8): new
    token i sees v_i = n_ctx - n_new + 1 + i tokens and keeps min(topk, v_i) of them.
    Equals causal_pairs while every new token sees at most topk tokens."""
    if not 1 <= n_new <= n_ctx:
        raise ValueError(f"need 1 <= n_new <= n_ctx, got n_new={n_new}, n_ctx={n_ctx}")
    if int(topk) != topk or topk < 1:
        raise ValueError(f"topk must be a whole number >= 1, got {topk!r}")
    first = n_ctx - n_new + 1  # tokens the first new token sees
    if first >= topk:
        return n_new * topk
    m = min(n_new, topk - first + 1)  # new tokens that see at most topk tokens: all they see
    return m * first + m * (m - 1) // 2 + (n_new - m) * topk


def distinct_selected_bounds(n_new: int, n_ctx: int, topk: int) -> tuple[int, int]:
    """(fewest, most) DISTINCT cached tokens the n_new new tokens (the last of n_ctx) can
    select between them with top-k attention, each new token i choosing min(topk, v_i) of the
    v_i = n_ctx - n_new + 1 + i tokens it sees.

      fewest = min(n_ctx, topk)   every token chooses inside the last token's choice (the
                                   visible sets are nested prefixes, so the earlier tokens can
                                   always choose a subset of it): the union is the largest
                                   single choice
      most   = min(n_ctx, n_new * topk)   no two tokens choose the same key where they can
                                   avoid it. The union is at most the selections,
                                   sparse_causal_pairs, and at most n_ctx; and whenever some new
                                   token sees fewer than topk tokens the selections already
                                   number n_ctx or more, so min(n_ctx, sparse_causal_pairs)
                                   equals min(n_ctx, n_new * topk) for every shape.
    The expand path up-projects exactly the union: its cost lies between these two
    (tests/test_core_prefill.py finds both by exhaustive search on small shapes)."""
    if not 1 <= n_new <= n_ctx:
        raise ValueError(f"need 1 <= n_new <= n_ctx, got n_new={n_new}, n_ctx={n_ctx}")
    if int(topk) != topk or topk < 1:
        raise ValueError(f"topk must be a whole number >= 1, got {topk!r}")
    return min(n_ctx, int(topk)), min(n_ctx, n_new * int(topk))


def attention_flops(n_new, n_ctx, n_heads=_H, d_nope=_DN, d_rope=_DR, d_v=_DV, d_latent=_DC, topk=None,
                    distinct="most"):
    """FLOPs of both paths for n_new new tokens attending causally over n_ctx tokens.

    expand = n_ctx * (expand one cached token) + pairs * (expand pair)
    absorb = n_new * (absorb one query)        + pairs * (absorb pair)

    topk (DeepSeek Sparse Attention): each new token attends only to its top-k visible
    tokens, so pairs = sparse_causal_pairs. The expand path must still up-project every
    distinct token some query chose, and how many that is depends on how much the queries'
    choices overlap (distinct_selected_bounds): distinct="most" (the default) counts the
    largest union, min(n_ctx, n_new * topk) -- no two queries choosing the same token, the
    count LEAST favourable to expand; distinct="fewest" counts min(n_ctx, topk) -- every query
    choosing inside one set, the count most favourable to expand; an integer counts that many
    (it must lie between the two). Without topk, distinct is not used (every token is expanded)."""
    if topk is None:
        pairs, expanded = causal_pairs(n_new, n_ctx), n_ctx
    else:
        pairs = sparse_causal_pairs(n_new, n_ctx, topk)
        fewest, most = distinct_selected_bounds(n_new, n_ctx, topk)
        if distinct == "most":
            expanded = most
        elif distinct == "fewest":
            expanded = fewest
        elif isinstance(distinct, (int,)) and not isinstance(distinct, bool) and fewest <= distinct <= most:
            expanded = distinct
        else:
            raise ValueError(f"distinct must be 'most', 'fewest' or a whole number in {fewest}..{most} "
                             f"(distinct_selected_bounds({n_new}, {n_ctx}, {topk})), got {distinct!r}")
    return {
        "expand": expanded * expand_flops_per_cached_token(n_heads, d_nope, d_v, d_latent)
        + pairs * expand_flops_per_pair(n_heads, d_nope, d_rope, d_v),
        "absorb": n_new * absorb_flops_per_new_token(n_heads, d_nope, d_v, d_latent)
        + pairs * absorb_flops_per_pair(n_heads, d_rope, d_latent),
    }


def choose_path(n_new, n_ctx, n_heads=_H, d_nope=_DN, d_rope=_DR, d_v=_DV, d_latent=_DC, topk=None,
                distinct="most") -> str:
    """The path with fewer FLOPs; a tie goes to 'absorb' (it also reads less memory)."""
    f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent, topk=topk, distinct=distinct)
    return "expand" if f["expand"] < f["absorb"] else "absorb"


def crossover_new_tokens(n_heads=_H, d_nope=_DN, d_rope=_DR, d_v=_DV, d_latent=_DC) -> float:
    """For n_ctx >> n_new, expand wins once n_new exceeds
    (expand one cached token) / (absorb pair - expand pair)
    = d_latent*(d_nope+d_v) / (2*d_latent - d_nope - d_v)   (n_heads and d_rope cancel)
    = 512*256/768 = 512/3 for V3 shapes."""
    extra_per_pair = absorb_flops_per_pair(n_heads, d_rope, d_latent) - \
        expand_flops_per_pair(n_heads, d_nope, d_rope, d_v)
    if extra_per_pair <= 0:
        return float("inf") if extra_per_pair == 0 else 0.0
    return expand_flops_per_cached_token(n_heads, d_nope, d_v, d_latent) / extra_per_pair


def sparse_expand_fraction(topk, n_heads=_H, d_nope=_DN, d_rope=_DR, d_v=_DV, d_latent=_DC) -> float:
    """With top-k attention, once every new token sees at least topk tokens and the chunk's
    queries choose between them every cached token (n_new * topk >= n_ctx), expand has
    fewer FLOPs only when n_new / n_ctx exceeds
        (expand one cached token) / (absorb one query + topk * (absorb pair - expand pair)),
    which is 1/13 for V3.2's shapes at topk 2048. In dense attention the up-projection of
    the n_ctx cached tokens is paid against n_new * n_ctx pairs and the break-even
    (crossover_new_tokens) does not depend on n_ctx; with top-k it is paid against
    n_new * topk pairs, so the longer the context, the longer a chunk must be to amortise it.
    That is the count with no choice shared (attention_flops' distinct="most"). Were every query's
    choice inside one set of topk tokens (distinct="fewest"), only topk tokens would be expanded and
    expand would win once the chunk exceeds topk times this fraction -- 158 tokens at topk 2,048,
    whatever the context (mlacourse.prefill.expand_wins_from finds both)."""
    extra_per_pair = absorb_flops_per_pair(n_heads, d_rope, d_latent) - \
        expand_flops_per_pair(n_heads, d_nope, d_rope, d_v)
    return expand_flops_per_cached_token(n_heads, d_nope, d_v, d_latent) / (
        absorb_flops_per_new_token(n_heads, d_nope, d_v, d_latent) + topk * extra_per_pair)


# ---- decode: FLOPs, bytes and arithmetic intensity (FlashMLA's accounting) ----

def decode_flops(h_q: int, s_q: int, s_k: int, d_k: int, d_v: int) -> int:
    """QK^T and PV for s_q query rows of h_q heads against s_k keys: 2*h_q*s_q*s_k*(d_k+d_v).
    (Causal masking among the s_q rows is ignored, as in FlashMLA's benchmark.)"""
    return 2 * h_q * s_q * s_k * (d_k + d_v)


def decode_bytes(h_q: int, s_q: int, s_k: int, d_k: int, d_v: int, kv_row_bytes=None,
                 dtype: str = "bf16", n_kv_heads: int = 1, kv_has_separate_v: bool = False) -> int:
    """Bytes read/written once: q [h_q*s_q*d_k] + the cache + out [h_q*s_q*d_v].

    For MLA the cache row is one [d_k] row whose first d_v dims double as V
    (kv_row_bytes defaults to d_k elements). For MHA/GQA pass n_kv_heads and
    kv_has_separate_v=True: each KV head stores K [d_k] and V [d_v]."""
    e = BYTES_PER_ELEMENT[dtype]
    if kv_row_bytes is None:
        per_head = d_k + (d_v if kv_has_separate_v else 0)
        kv_row_bytes = n_kv_heads * per_head * e
    return e * h_q * s_q * d_k + s_k * kv_row_bytes + e * h_q * s_q * d_v


def kv_only_intensity(h_q: int, s_q: int, d_k: int, d_v: int, kv_row_bytes: float) -> float:
    """s_k >> h_q*s_q limit: FLOPs per cached token / bytes per cached token."""
    return 2 * h_q * s_q * (d_k + d_v) / kv_row_bytes


def decode_intensity_mla(h_q=_H, s_q=1, s_k=None, d_latent=_DC, d_rope=_DR, kv_row_bytes=None):
    """MLA decode FLOP/byte. s_k None: the cache-dominated limit. kv_row_bytes defaults
    to bf16 (1152); pass 576 for FP8 without scales or 656 for FlashMLA's FP8 row."""
    d_k, d_v = d_latent + d_rope, d_latent
    row = kv_row_bytes if kv_row_bytes is not None else d_k * 2
    if s_k is None:
        return kv_only_intensity(h_q, s_q, d_k, d_v, row)
    return decode_flops(h_q, s_q, s_k, d_k, d_v) / decode_bytes(h_q, s_q, s_k, d_k, d_v, row)


def decode_intensity_gqa(n_q_heads, n_kv_heads, head_dim, s_q=1, dtype="bf16"):
    """GQA/MHA decode in the cache-dominated limit: each KV head serves n_q/n_kv query heads
    (the chapters' GQA example is Llama-2-70B's shape: 64 query heads, 8 KV heads, 128 dims).
    2 * n_q * s_q * head_dim * 2 FLOPs per cached token over n_kv * 2 * head_dim elements."""
    flops = 2 * n_q_heads * s_q * (head_dim + head_dim)
    return flops / (n_kv_heads * 2 * head_dim * BYTES_PER_ELEMENT[dtype])


def intensity_approx_2hs(h_q: int, s_q: int) -> int:
    """FlashMLA blog's shorthand: h_q*s_q*(d_k+d_v)/d_k ~ 2*h_q*s_q."""
    return 2 * h_q * s_q


# ---- what each path materializes (chapter 3's picture) --------------------------------

def materialized_shapes(path: str, n_new: int, n_ctx: int, n_heads=_H, d_nope=_DN, d_rope=_DR,
                        d_v=_DV, d_latent=_DC) -> dict[str, tuple[int, ...]]:
    """The arrays a path builds for one layer and one sequence besides the cached rows
    [n_ctx, d_latent + d_rope] that both read, with the shapes mlacourse.layer gives them."""
    if path == "expand":
        return {"k per head": (n_heads, n_ctx, d_nope + d_rope), "v per head": (n_heads, n_ctx, d_v),
                "q": (n_heads, n_new, d_nope + d_rope), "scores": (n_heads, n_new, n_ctx),
                "out": (n_new, n_heads, d_v)}
    if path == "absorb":
        return {"q_lat + q_rope": (n_heads, n_new, d_latent + d_rope), "scores": (n_heads, n_new, n_ctx),
                "o_lat": (n_heads, n_new, d_latent), "out": (n_new, n_heads, d_v)}
    raise ValueError(f"unknown path {path!r}; known: 'expand', 'absorb'")
