"""Problem 3: prefill through the expand path (chapter 3)."""
from __future__ import annotations

import numpy as np

from grader.spec import (Case, Edge, Problem, compare_arrays, load_mistakes, memo_twins, new_values,
                         row_offsets, shape_text, uneven_rows_edge, wide_row_edge)
from mlacourse.attention import causal_mask
from mlacourse.layer import absorbed_scores, attend_expand

FN = "expand_prefill"

STATEMENT = r"""
Write `expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale)`: MLA attention
for a **prefill** of `T` tokens through the **expand path** -- up-project every cached
latent into per-head keys and values, then run ordinary causal multi-head attention.

| argument | shape | meaning |
|---|---|---|
| `q_nope` | `[T, n_heads, d_nope]` | position-free query part |
| `q_rope` | `[T, n_heads, d_rope]` | query rope part, **already rotated** |
| `c_kv` | `[T, d_latent]` | the cached latents, one per token |
| `k_rope` | `[T, d_rope]` | the cached rope keys, already rotated, shared by all heads |
| `w_uk` | `[n_heads, d_latent, d_nope]` | key up-projection: `k_nope[t, h] = c_kv[t] @ w_uk[h]` |
| `w_uv` | `[n_heads, d_latent, d_v]` | value up-projection: `v[t, h] = c_kv[t] @ w_uv[h]` |
| `scale` | float | softmax scale (1/sqrt(d_nope + d_rope)) |

Return `out [T, n_heads, d_v]`:

    score[h, s, t] = scale * (q_nope[s, h] . k_nope[t, h] + q_rope[s, h] . k_rope[t])
    out[s, h]      = sum over t <= s of softmax_t(score[h, s, :s+1]) * v[t, h]

Token `s` sees itself and every earlier token (causal). Checked against
`mlacourse.layer.attend_expand` with `causal_mask(T, T)`: |got - expected| <= 1e-9 +
1e-6 * |expected| on every element. Keep the softmax stable, row by row: one hidden case
has scores above 709 (exp overflows float64 there), in another one query row's scores
sit near +750 while another's sit near -750, and in a third one row's own scores run from
near -800 to +800 (the largest on its last key), so subtract each row's own maximum, not
one maximum for the whole array, nor a row's mean. Use the `scale` given (one case passes
another). Hidden cases: T 1-23, n_heads 1-6, d_latent 8-32; d_v may differ from d_nope.
"""

HINTS = [
    "Three steps: expand (k_nope and v for every token and head), score (nope part plus "
    "rope part, times scale), then a causal softmax and a weighted sum of v.",
    "np.einsum('tc,hcd->htd', c_kv, w_uk) gives k_nope [H, T, d_nope]; the same with w_uv "
    "gives v [H, T, d_v]. The rope key has no head axis: einsum('shr,tr->hst', q_rope, k_rope).",
    "Mask with np.tril(np.ones((T, T), bool)): scores where it is False become -inf. Subtract "
    "each row's max before exp; every row has a finite max because the diagonal is visible.",
    "Normalise over the last axis (keys), then np.einsum('hst,htd->shd', p, v) returns "
    "[T, H, d_v].",
]


RTOL, ATOL = 1e-6, 1e-9


def reference(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    n_tok = c_kv.shape[0]
    out, _ = attend_expand(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale,
                           causal_mask(n_tok, n_tok))
    return out  # [T, H, d_v]


def _case(name, rng, n_tok, n_heads, d_latent, d_nope, d_rope, d_v, hidden, seed, q_std=1.5,
          scale_factor=1.0):
    def normal(*shape, std=1.0):
        return rng.standard_normal(shape) * std

    args = {
        "q_nope": normal(n_tok, n_heads, d_nope, std=q_std),
        "q_rope": normal(n_tok, n_heads, d_rope, std=q_std),
        "c_kv": normal(n_tok, d_latent),
        "k_rope": normal(n_tok, d_rope),
        "w_uk": normal(n_heads, d_latent, d_nope, std=1 / np.sqrt(d_latent)),
        "w_uv": normal(n_heads, d_latent, d_v, std=1 / np.sqrt(d_latent)),
        "scale": float(scale_factor / np.sqrt(d_nope + d_rope)),
    }
    describe = shape_text(**{k: v for k, v in args.items() if k != "scale"})
    describe += f", scale={args['scale']:.4g}"
    return Case(name, FN, args, hidden=hidden, seed=seed, describe=describe)


def make_cases(seed):
    fixed = np.random.default_rng(3)
    cases = [
        # the tiny config of the chapters: d_latent 16, d_nope 8, d_rope 4, d_v 8
        _case("tiny config, 5 tokens", fixed, 5, 4, 16, 8, 4, 8, False, None),
        _case("a single token", fixed, 1, 2, 8, 4, 4, 4, False, None),
    ]
    rng = np.random.default_rng(seed)
    # each shape takes several values within one seed: hard-coding one cannot pass
    heads, latents = rng.permutation([1, 2, 3, 6]), rng.permutation([8, 16, 24, 32])
    nopes, ropes = rng.permutation([4, 8, 4, 6]), rng.permutation([2, 4, 8, 6])
    for i in range(4):
        d_nope = int(nopes[i])
        d_v = d_nope if i % 2 == 0 else int(rng.choice([4, 6, 10]))
        cases.append(_case(f"random {i}", rng, int(rng.integers(2, 24)), int(heads[i]), int(latents[i]),
                           d_nope, int(ropes[i]), d_v, True, seed))
    cases.append(_case("large scores (above 709, where exp overflows): is the softmax stable?", rng,
                       int(rng.integers(4, 16)), 2, 16, 8, 4, 8, True, seed, q_std=1500.0))
    cases.append(_case("a scale other than 1/sqrt(d_nope + d_rope)", rng, int(rng.integers(3, 12)), 3, 16,
                       8, 4, 6, True, seed, scale_factor=float(rng.choice([0.25, 0.5, 2.0, 3.0]))))
    cases.append(_case("a single token", rng, 1, int(rng.integers(2, 5)), 8, 4, 4, 6, True, seed))
    cases.append(_uneven(rng, int(rng.integers(3, 10)), seed))
    cases.append(_wide(rng, int(rng.integers(3, 12)), seed))
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check,
                      other_shapes=_other_length)


def _uneven(rng, n_tok, seed):
    """Query rows whose scores sit near +750, near -750 or near 0: the rope key's first
    dim is 1 for every token, so q_rope[s, h, 0] adds the same offset to all of row
    (h, s)'s scores (the softmax is unchanged by it; one maximum for all rows is not)."""
    case = _case("query rows whose scores differ by hundreds (near +750 and near -750)", rng,
                 n_tok, 3, 16, 8, 4, 8, True, seed)
    a = case.args
    a["k_rope"][:, 0] = 1.0
    a["q_rope"][:, :, 0] = row_offsets(rng, (n_tok, 3)) / a["scale"]
    return case


def _wide(rng, n_tok, seed):
    """The last query row's scores hundreds apart inside the row, its largest last: the rope
    key's first dim is -1 for every token but the last (+1), and the last query's q_rope[.., 0]
    is +-800 / scale per head, so its row reads near -800, ..., -800, +800 (or the reverse).
    A softmax that subtracts the row's mean, or a max over its first keys, overflows."""
    case = _case("a query row whose scores are hundreds apart, the largest last", rng, n_tok,
                 int(rng.integers(1, 4)), 16, 8, 4, 8, True, seed)
    a = case.args
    a["k_rope"][:, 0] = -1.0
    a["k_rope"][-1, 0] = 1.0
    heads = a["q_rope"].shape[1]
    a["q_rope"][-1, :, 0] = np.where(np.arange(heads) % 2 == 0, 800.0, -800.0) / a["scale"]
    return case


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = {
    **{k: (lambda a, rng, k=k: new_values(a[k], rng)) for k in ("q_nope", "q_rope", "c_kv", "k_rope", "w_uk", "w_uv")},
    "scale": lambda a, rng: a["scale"] * float(rng.choice([0.5, 2.0])),
}


def _other_length(args, rng):
    """The same weights and scale, another number of tokens."""
    n = args["c_kv"].shape[0] + int(rng.integers(1, 4))
    heads, d_latent, d_nope = args["w_uk"].shape
    d_rope = args["k_rope"].shape[1]
    return {**args, "q_nope": rng.standard_normal((n, heads, d_nope)) * 1.5,
            "q_rope": rng.standard_normal((n, heads, d_rope)) * 1.5,
            "c_kv": rng.standard_normal((n, d_latent)), "k_rope": rng.standard_normal((n, d_rope))}


def check(case, result):
    return compare_arrays(FN, reference(**case.args), result, rtol=RTOL, atol=ATOL,
                          dims="[T, n_heads, d_v]")


MISTAKES = load_mistakes(__file__)


def _scores(a):
    """Every (head, query, key) score of a case, before the mask: [H, T, T]."""
    return absorbed_scores(a["q_nope"], a["q_rope"], a["c_kv"], a["k_rope"], a["w_uk"], a["scale"])


def _row_max(a):
    """Each (head, query) row's largest visible score: [H, T]."""
    n = a["c_kv"].shape[0]
    return np.where(np.tril(np.ones((n, n), dtype=bool)), _scores(a), -np.inf).max(axis=-1)


def _rows_in_key_order(a):
    """Each (head, query) row's visible scores, keys in order."""
    s = _scores(a)
    for h, i in np.ndindex(*s.shape[:2]):
        yield s[h, i, :i + 1]


EDGES = [
    Edge("a single token", lambda a: a["c_kv"].shape[0] == 1, kind="one"),
    Edge("one head", lambda a: a["w_uk"].shape[0] == 1, kind="one"),
    uneven_rows_edge(_row_max),
    wide_row_edge(_rows_in_key_order),
    Edge("scores in the hundreds, above 709", lambda a: float(np.max(np.abs(_scores(a)))) > 750, kind="largest"),
    Edge("a scale other than 1/sqrt(d_nope + d_rope)", lambda a: abs(a["scale"] * np.sqrt(
        a["q_nope"].shape[-1] + a["q_rope"].shape[-1]) - 1) > 0.1),
]

PROBLEM = Problem(
    number=3, slug="expand_prefill", title="Prefill through the expand path",
    summary="causal prefill through the expand path",
    chapter="notebooks/03_two_paths.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: reference}, edges=EDGES, normalises_rows=True,
    no_structure={
        "none": "every query row sees at least itself (causal), and every array has a token and a head",
        "none first": "a causal row's first key is token 0, which every row sees: no empty piece comes first",
        "order": "the tokens are the positions 0 .. T-1 in order; the statement has no ids",
        "limit": "no budget, page or chunk: one causal attention over all T tokens",
        "ties": "float outputs compared with a tolerance: no ranking or choice to tie",
    },
)
