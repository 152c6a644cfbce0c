"""Problem 6: extend after a long cached prefix, expanding it chunk by chunk (chapter 4)."""
from __future__ import annotations

import numpy as np

from grader.spec import (Case, Edge, Problem, compare_out_lse, load_mistakes, memo_twins, new_values,
                         row_offsets, shape_text, uneven_rows_edge, wide_row_edge)
from grader.lang import said
from mlacourse.attention import causal_mask
from mlacourse.layer import absorbed_scores, attend_chunked_prefix, attend_expand

FN = "chunked_extend"
# The long-prefix case is sized so that the method shows in memory: one head's keys for the whole prefix
# (T * d_nope * 8 bytes = 164 MB) are far over the cap, `chunk` rows of every head's keys
# and values (2.2 MB) well under it, and 2048 rows (17 MB, a chunk size typed in) over it.
# d_v is small so that keeping every chunk's partial output (n_parts * H * S * d_v) is cheap.
LONG = dict(n_heads=2, d_latent=8, d_nope=512, d_rope=4, d_v=16, n_tok=40_000, n_new=3,
            chunk=256)
LONG_CAP_MB = 10

def _mb(numbers_per_token):
    """MB (1e6 bytes) of float64 for that many numbers per prefix token."""
    return round(LONG["n_tok"] * numbers_per_token * 8 / 1e6)


STATEMENT = r"""
Write `chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk)`:
attention for `n_new` new tokens appended after a long cached prefix, through the expand
path, **without expanding the whole prefix at once**.

| argument | shape | meaning |
|---|---|---|
| `q_nope`, `q_rope` | `[n_new, n_heads, d_nope]`, `[n_new, n_heads, d_rope]` | the new tokens' queries (rope part rotated) |
| `c_kv`, `k_rope` | `[T, d_latent]`, `[T, d_rope]` | all T cached rows; the **last n_new rows are the new tokens** |
| `w_uk`, `w_uv` | `[n_heads, d_latent, d_nope]`, `[n_heads, d_latent, d_v]` | up-projections, as in problem 3 |
| `scale` | float | softmax scale |
| `chunk` | int | expand at most this many prefix rows at a time |

Return `(out [n_new, n_heads, d_v], lse [n_heads, n_new])`, equal to one causal
attention over all T rows: new token i sees rows `0 .. T - n_new + i`.

Plan: the prefix (rows `0 .. T - n_new - 1`) is visible to every new token, so expand it
`chunk` rows at a time (the last chunk may be shorter) and attend without a mask; the new
rows attend causally among themselves; merge all parts by log-sum-exp (problem 5).
The prefix may be empty.

Checked against `mlacourse.layer` (one-shot `attend_expand` with `causal_mask(n_new, T)`;
for the long case the core's `attend_chunked_prefix`): out first, then lse, each with
|got - expected| <= 1e-9 + 1e-6 * |expected|. One visible case has a 40,000-row prefix
and runs under a 10 MB memory cap: expanding all of it at once needs about 338 MB, one
head at a time still 164 MB, and even 2048-row chunks 17 MB -- so expand `chunk` rows at
a time, as asked. Keep every softmax stable, row by row: one hidden case has scores above
709 (exp overflows float64 there), in another one (head, new token) row's scores sit
near +750 and another's near -750, and in a third one row's scores run from near -800 over
the prefix to +800 on its last row -- subtract each row's own maximum, raised as later
parts bring larger scores. Use the `scale` given
(one case passes another). Hidden cases: prefix 0-30 rows, chunk 1-7, n_new 1-5, one head
or several, the shapes vary.
"""

HINTS = [
    "Every part is an ordinary expand-path attention (problem 3's code) that also returns "
    "its lse; the prefix parts need no mask because every new token sees the whole prefix.",
    "for lo in range(0, n_prefix, chunk): rows lo .. min(lo + chunk, n_prefix) - 1. "
    "Python slicing clips for you: c_kv[lo:min(lo + chunk, n_prefix)].",
    "The new block is c_kv[n_prefix:], k_rope[n_prefix:] with np.tril(np.ones((n_new, n_new), "
    "bool)) as its mask: a square prefill of its own.",
    "Keep each part's out as [n_heads, n_new, d_v] and lse as [n_heads, n_new], merge with "
    "weights exp(lse_part - lse_total), and transpose out to [n_new, n_heads, d_v] at the end.",
]


RTOL, ATOL = 1e-6, 1e-9


def reference(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    s, t = q_nope.shape[0], c_kv.shape[0]
    if t > 10_000:  # the long case: the core's own chunked version keeps the judge's memory low
        out, lse = attend_chunked_prefix(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, 4096)
    else:  # everything else: one-shot attention with the bottom-right causal mask
        out, lse = attend_expand(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale,
                                 causal_mask(s, t))
    return out, lse  # [S, H, d_v], [H, S]


def _args(rng, n_tok, n_new, n_heads, d_latent, d_nope, d_rope, d_v, chunk, q_std=1.5, scale_factor=1.0):
    def normal(*shape, std=1.0):
        return rng.standard_normal(shape) * std

    return {
        "q_nope": normal(n_new, n_heads, d_nope, std=q_std),
        "q_rope": normal(n_new, n_heads, d_rope, std=q_std),
        "c_kv": normal(n_tok, d_latent),
        "k_rope": normal(n_tok, d_rope),
        "w_uk": normal(n_heads, d_latent, d_nope, std=1 / np.sqrt(d_latent)),
        "w_uv": normal(n_heads, d_latent, d_v, std=1 / np.sqrt(d_latent)),
        "scale": float(scale_factor / np.sqrt(d_nope + d_rope)),
        "chunk": int(chunk),
    }


def _case(name, args, hidden=False, seed=None, **extra):
    describe = shape_text(**{k: args[k] for k in ("q_nope", "c_kv", "w_uk", "w_uv")})
    describe += f", chunk={args['chunk']}"
    return Case(name, FN, args, hidden=hidden, seed=seed, describe=describe, **extra)


def make_cases(seed):
    fixed = np.random.default_rng(6)
    cases = [
        # T=12 rows: a 9-row prefix in chunks of 4 (4 + 4 + 1) and 3 new tokens
        _case("9-row prefix in chunks of 4, 3 new tokens", _args(fixed, 12, 3, 2, 8, 4, 4, 4, 4)),
        _case("no prefix at all (a plain prefill)", _args(fixed, 4, 4, 2, 8, 4, 2, 4, 3)),
        _case("one new token (decode)", _args(fixed, 7, 1, 3, 8, 4, 2, 6, 2)),
        _case(f"a {LONG['n_tok']:,}-row prefix under a {LONG_CAP_MB} MB memory cap",
              _args(fixed, LONG["n_tok"], LONG["n_new"], LONG["n_heads"], LONG["d_latent"],
                    LONG["d_nope"], LONG["d_rope"], LONG["d_v"], LONG["chunk"]),
              memory_mb=LONG_CAP_MB, timeout_s=20.0,
              memory_error_message=said(
                  "{fn} ran out of memory on a {n_tok}-token prefix (cap {cap} MB): expanding the "
                  "whole prefix at once takes n_heads * T * (d_nope + d_v) * 8 bytes, about {whole} MB "
                  "here, one head's keys alone {one_head} MB. Expand `chunk` rows at a time (all "
                  "heads, or one head at a time) and merge the parts by their log-sum-exp.",
                  fn=FN, n_tok=f"{LONG['n_tok']:,}", cap=LONG_CAP_MB,
                  whole=_mb(LONG['n_heads'] * (LONG['d_nope'] + LONG['d_v'])), one_head=_mb(LONG['d_nope']))),
    ]
    rng = np.random.default_rng(seed)
    # each shape takes several values within one seed: hard-coding one cannot pass
    latents, nopes = rng.permutation([8, 12, 16, 8, 24]), rng.permutation([4, 6, 8, 4, 2])
    ropes, values = rng.permutation([2, 4, 6, 2, 4]), rng.permutation([4, 6, 3, 8, 4])
    for i in range(5):
        n_new = int(rng.integers(1, 6))
        chunk = int(rng.integers(1, 8))
        n_prefix = int(rng.integers(0, 30))
        if i < 3 and n_prefix % chunk == 0:
            n_prefix += 1  # a partial last chunk
        if i == 3:  # chunks of one row
            chunk, n_prefix = 1, max(n_prefix, 2)
        if i == 4:  # one chunk longer than the whole prefix (chunk still 1-7)
            n_prefix = int(rng.integers(1, 6))
            chunk = n_prefix + int(rng.integers(1, 3))
        cases.append(_case(f"random {i}", _args(rng, n_prefix + n_new, n_new, int(rng.integers(1, 5)),
                                                int(latents[i]), int(nopes[i]), int(ropes[i]),
                                                int(values[i]), chunk), hidden=True, seed=seed))
    n_new = int(rng.integers(2, 5))
    cases.append(_case("large scores (above 709, where exp overflows): is every softmax stable?",
                       _args(rng, n_new + int(rng.integers(5, 20)), n_new, 2, 8, 4, 4, 4,
                             int(rng.integers(2, 5)), q_std=1500.0), hidden=True, seed=seed))
    n_new = int(rng.integers(1, 4))
    cases.append(_case("a scale other than 1/sqrt(d_nope + d_rope)",
                       _args(rng, n_new + int(rng.integers(4, 15)), n_new, 2, 8, 4, 2, 4, int(rng.integers(2, 5)),
                             scale_factor=float(rng.choice([0.25, 0.5, 2.0, 3.0]))), hidden=True, seed=seed))
    n_new = int(rng.integers(2, 6))
    cases.append(_case("no prefix (a plain prefill), one head",
                       _args(rng, n_new, n_new, 1, 8, 4, 2, 6, int(rng.integers(1, 5))), hidden=True, seed=seed))
    chunk = int(rng.integers(2, 6))
    cases.append(_case("one new token (decode) after a prefix with a partial last chunk",
                       _args(rng, 1 + chunk * int(rng.integers(1, 4)) + int(rng.integers(1, chunk)), 1,
                             int(rng.integers(2, 5)), 12, 6, 4, 4, chunk), hidden=True, seed=seed))
    n_new = int(rng.integers(2, 4))
    uneven = _args(rng, n_new + int(rng.integers(3, 12)), n_new, 3, 8, 4, 4, 4, int(rng.integers(2, 5)))
    uneven["k_rope"][:, 0] = 1.0  # q_rope[s, h, 0] then shifts all of row (h, s)'s scores
    uneven["q_rope"][:, :, 0] = row_offsets(rng, (n_new, 3)) / uneven["scale"]
    cases.append(_case("rows whose scores differ by hundreds (near +750 and near -750)", uneven,
                       hidden=True, seed=seed))
    cases.append(_case("a row whose scores are hundreds apart, the largest in the last part", _wide(rng),
                       hidden=True, seed=seed))
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check,
                      other_shapes=_other_lengths)


def _wide(rng):
    """The last new token's row hundreds apart inside itself, its largest score last: the
    rope key's first dim is -1 on every row but the last (+1), and that token's
    q_rope[.., 0] is +-800 / scale per head, so its scores read near -800 over the whole
    prefix (several chunks) and the earlier new rows, then +800 on its own row. A maximum
    taken from the first chunk and never raised, or the row's mean, overflows."""
    n_new, chunk = int(rng.integers(1, 4)), int(rng.integers(1, 5))
    n_prefix = chunk * int(rng.integers(2, 5)) + int(rng.integers(0, chunk))
    a = _args(rng, n_prefix + n_new, n_new, int(rng.integers(1, 4)), 8, 4, 4, 4, chunk)
    a["k_rope"][:, 0] = -1.0
    a["k_rope"][-1, 0] = 1.0
    heads = a["q_rope"].shape[1]
    a["q_rope"][-1, :, 0] = np.where(np.arange(heads) % 2 == 0, 800.0, -800.0) / a["scale"]
    return a


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = {
    **{k: (lambda a, rng, k=k: new_values(a[k], rng)) for k in ("q_nope", "q_rope", "c_kv", "k_rope", "w_uk", "w_uv")},
    "scale": lambda a, rng: a["scale"] * float(rng.choice([0.5, 2.0])),
}


def _other_lengths(args, rng):
    """The same weights, scale and chunk, another prefix length (chunk bounds change)."""
    n_tok = args["c_kv"].shape[0] + int(rng.integers(1, 2 * args["chunk"] + 2))
    return {**args, "c_kv": rng.standard_normal((n_tok, args["c_kv"].shape[1])),
            "k_rope": rng.standard_normal((n_tok, args["k_rope"].shape[1]))}


def check(case, result):
    return compare_out_lse(FN, reference(**case.args), result, rtol=RTOL, atol=ATOL,
                           out_dims="[n_new, n_heads, d_v]", lse_dims="[n_heads, n_new]")


MISTAKES = load_mistakes(__file__)


def _scores(a):
    """Every (head, query, key) score of a case, before the mask: [H, S, T]."""
    return absorbed_scores(a["q_nope"], a["q_rope"], a["c_kv"], a["k_rope"], a["w_uk"], a["scale"])


def _row_max(a):
    """Each (head, new token) row's largest visible score: [H, S] (small cases only)."""
    s, t = a["q_nope"].shape[0], a["c_kv"].shape[0]
    if t > 1000:
        return np.zeros(1)
    return np.where(causal_mask(s, t), _scores(a), -np.inf).max(axis=-1)


def _rows_in_key_order(a):
    """Each (head, new token) row's visible scores, rows in order (prefix chunks first)."""
    s, t = a["q_nope"].shape[0], a["c_kv"].shape[0]
    if t > 1000:
        return
    scores = _scores(a)
    for h, i in np.ndindex(*scores.shape[:2]):
        yield scores[h, i, :t - s + i + 1]


EDGES = [
    Edge("no prefix (a plain prefill)", lambda a: a["c_kv"].shape[0] == a["q_nope"].shape[0], kind="none first"),
    Edge("one new token", lambda a: a["q_nope"].shape[0] == 1, kind="one"),
    Edge("one head", lambda a: a["w_uk"].shape[0] == 1, kind="one"),
    Edge("chunk 1", lambda a: a["chunk"] == 1 and a["c_kv"].shape[0] > a["q_nope"].shape[0] + 1, kind="one"),
    Edge("a chunk longer than the whole prefix",
         lambda a: a["chunk"] > a["c_kv"].shape[0] - a["q_nope"].shape[0] > 0, kind="limit"),
    uneven_rows_edge(_row_max),
    wide_row_edge(_rows_in_key_order),
    Edge("a partial last chunk", lambda a: (a["c_kv"].shape[0] - a["q_nope"].shape[0]) % a["chunk"] != 0,
         kind="limit"),
    Edge("scores in the hundreds, above 709", lambda a: a["c_kv"].shape[0] < 1000 and float(np.max(np.abs(_scores(a)))) > 750,
         kind="largest"),
    Edge("a scale other than 1/sqrt(d_nope + d_rope)", lambda a: abs(a["scale"] * np.sqrt(
        a["q_nope"].shape[-1] + a["q_rope"].shape[-1]) - 1) > 0.1),
]

PROBLEM = Problem(
    number=6, slug="chunked_extend", title="Extend after a long prefix, chunk by chunk",
    summary="extend after a long prefix, expanding it chunk by chunk",
    chapter="notebooks/04_flops_and_path_choice.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: reference}, edges=EDGES, normalises_rows=True,
    no_structure={
        "none": "no empty chunk is possible (the prefix is cut into non-empty pieces) and there is a "
                "new token; the empty prefix is the none-first edge",
        "order": "rows are the positions 0 .. T-1 in order; the statement has no ids",
        "ties": "float outputs compared with a tolerance: no ranking or choice to tie",
    },
    no_twin={"chunk": "the answer does not depend on chunk (only the method does); other_shapes "
                      "twins keep chunk and change the prefix length instead"},
)
