"""Problem 10: flash-decoding in numpy -- split the cache, attend, combine (chapter 6).
The method is graded, not only the answer: the per-split partials (what a split-KV
kernel writes to o_part / lse_part) are returned and checked one by one, so a single
attention over all rows cannot pass by itself."""

from __future__ import annotations

import math
import numpy as np

from grader.lang import said
from grader.spec import (Case, Edge, PASS, Problem, Reason, another_int, compare_arrays, fail, load_mistakes,
                         memo_twins, new_values, row_offsets, shape_text, uneven_rows_edge, wide_row_edge)
from mlacourse.attention import attention

FN = "split_kv_decode"
RTOL, ATOL = 1e-6, 1e-9

STATEMENT = r"""
## Problem 10 — split-KV decode (flash-decoding) in numpy

Write `split_kv_decode(q, kv, d_v, scale, n_splits)`: decode attention the way
flash-decoding runs it on a GPU -- cut the cached rows into `n_splits` ranges, attend to
each range on its own (on a GPU each would be its own thread block), then combine the
partial results by log-sum-exp.

| argument | shape | meaning |
|---|---|---|
| `q` | `[h_q, d_k]` | one query token's heads (absorbed MLA: d_k = d_latent + d_rope) |
| `kv` | `[T, d_k]` | the cached rows, shared by every head (an MQA) |
| `d_v` | int | the value is the **first** `d_v` dims of each row: `V = kv[:, :d_v]` |
| `scale` | float | softmax scale |
| `n_splits` | int | number of key ranges |

Split `j` covers rows `j*c .. (j+1)*c - 1` (clipped to T) with `c = ceil(T / n_splits)`,
so trailing splits can be **empty** (T=5, n_splits=4: sizes 2, 2, 1, 0).

Return four arrays, `(out, lse, o_parts, lse_parts)`:

| value | shape | what |
|---|---|---|
| `o_parts` | `[n_splits, h_q, d_v]` | split j's own softmax-weighted values (its softmax over its rows only) |
| `lse_parts` | `[n_splits, h_q]` | split j's log-sum-exp, `log(sum_{t in j} exp(scale * q . kv[t]))` |
| `out` | `[h_q, d_v]` | the combined result: one softmax attention over all T rows |
| `lse` | `[h_q]` | `log(sum_t exp(scale * q . kv[t]))` over all T rows |

An **empty split** has `o_parts[j] = 0` and `lse_parts[j] = -inf` (exactly: no finite
stand-in), and it must contribute nothing to the combination. Keep every softmax
stable, head by head: one case has scores above 709, where `exp` overflows float64, in
another one head's scores sit near +750 while another's sit near -750 (subtract each
head's own maximum), and in a third a head's scores run from near -800 to +800 in its last
split (combine around the largest lse, not the first split's); and use the `scale` given
(one case passes another than 1/sqrt(d_k)).

Checked against `mlacourse.attention.attention` on each split's rows and on all rows:
out, lse, o_parts, lse_parts in that order, each with |got - expected| <= 1e-9 + 1e-6 *
|expected|. Hidden cases: h_q 1-16 (one head included: keep the h_q axis), T 1-59,
n_splits 1-32 (some splits empty), d_v below d_k, scores in the hundreds.
"""

HINTS = [
    "Write the per-split part first: scores s = scale * q @ rows.T ([h_q, n]); with m = the "
    "row max, o_j = softmax(s) @ rows[:, :d_v] and lse_j = m + log(sum exp(s - m)).",
    "An empty split has no max: return o_j = zeros([h_q, d_v]) and lse_j = full(-inf) "
    "without touching np.max.",
    "Combine like problem 5: lse = np.logaddexp.reduce(lse_parts, axis=0); out = sum_j "
    "exp(lse_j - lse)[:, None] * o_j. exp(-inf - lse) is 0, so empty splits drop out.",
]


# ---- the reference ---------------------------------------------------------------

def split_rows(n_rows: int, n_splits: int) -> list[slice]:
    """The row range of each split: c = ceil(T / n_splits) rows each, the tail clipped."""
    per = math.ceil(n_rows / n_splits)
    return [slice(min(j * per, n_rows), min((j + 1) * per, n_rows)) for j in range(n_splits)]


def reference(q, kv, d_v, scale, n_splits):
    """Each split attended on its own (mlacourse.attention), and all rows at once."""
    parts = [attention(q, kv[r], kv[r][:, :d_v], scale) for r in split_rows(kv.shape[0], n_splits)]
    o_parts = np.stack([o for o, _ in parts])     # [n_splits, h_q, d_v]
    lse_parts = np.stack([l for _, l in parts])   # [n_splits, h_q]
    out, lse = attention(q, kv, kv[:, :d_v], scale)  # [h_q, d_v], [h_q]
    return out, lse, o_parts, lse_parts


# ---- cases ---------------------------------------------------------------------------

def _case(name, rng, h_q, n_tok, d_k, d_v, n_splits, q_std=1.0, hidden=False, seed=None, scale_factor=1.0):
    args = {"q": rng.standard_normal((h_q, d_k)) * q_std, "kv": rng.standard_normal((n_tok, d_k)),
            "d_v": int(d_v), "scale": float(scale_factor / np.sqrt(d_k)), "n_splits": int(n_splits)}
    sizes = [r.stop - r.start for r in split_rows(n_tok, n_splits)]
    describe = (shape_text(q=args["q"], kv=args["kv"]) + f", d_v={d_v}, n_splits={n_splits} "
                f"(split sizes {sizes})" + (f", |q| x{q_std:g}" if q_std != 1.0 else "")
               )
    return Case(name, FN, args, hidden=hidden, seed=seed, describe=describe)


def make_cases(seed):
    fixed = np.random.default_rng(10)
    cases = [
        _case("10 keys in 3 splits (4 + 4 + 2)", fixed, 4, 10, 12, 8, 3, q_std=2.0),
        _case("5 keys in 4 splits: the last split is empty", fixed, 2, 5, 12, 8, 4, q_std=2.0),
        _case("3 keys in 8 splits: five empty splits", fixed, 3, 3, 6, 4, 8),
        _case("one split (plain attention)", fixed, 2, 7, 6, 4, 1),
    ]
    rng = np.random.default_rng(seed)
    for i in range(5):
        d_v = int(rng.integers(2, 9))
        cases.append(_case(f"random {i}", rng, int(rng.integers(1, 17)), 1 if i == 0 else int(rng.integers(1, 60)),
                           d_v + int(rng.integers(1, 5)), d_v, int(rng.integers(2, 13)),
                           q_std=float(rng.choice([1.0, 4.0])), hidden=True, seed=seed))
    n_tok = int(rng.integers(2, 30))
    cases.append(_case("an empty split among random sizes", rng, int(rng.integers(2, 9)), n_tok, 10, 6,
                       n_tok + int(rng.integers(1, 4)), hidden=True, seed=seed))
    cases.append(_case("large scores (above 709, where exp overflows): is every softmax stable?", rng,
                       int(rng.integers(2, 9)), int(rng.integers(8, 40)), 16, 8,
                       int(rng.integers(2, 6)), q_std=1200.0, hidden=True, seed=seed))
    cases.append(_case("a scale other than 1/sqrt(d_k)", rng, 3, int(rng.integers(5, 30)), 12, 6,
                       int(rng.integers(2, 5)), hidden=True, seed=seed,
                       scale_factor=float(rng.choice([0.25, 0.5, 2.0, 3.0]))))
    cases.append(_case("one split, one head", rng, 1, int(rng.integers(1, 30)), 8, 5, 1, q_std=2.0,
                       hidden=True, seed=seed))
    uneven = _case("heads whose scores differ by hundreds (near +750 and near -750)", rng, 4,
                   int(rng.integers(6, 30)), 10, 6, int(rng.integers(2, 5)), hidden=True, seed=seed)
    a = uneven.args
    a["kv"][:, -1] = 1.0  # not part of V (d_v < d_k): q[h, -1] shifts all of head h's scores
    a["q"][:, -1] = row_offsets(rng, 4) / a["scale"]
    cases.append(uneven)
    n_tok = int(rng.integers(8, 31))
    wide = _case("heads whose scores are hundreds apart, the largest in the last split", rng, 3, n_tok, 10, 6,
                 int(rng.integers(2, 6)), hidden=True, seed=seed)
    a = wide.args
    a["kv"][:, -1] = -1.0  # not part of V: q[h, -1] puts head h's scores near -800 ...
    a["kv"][-1, -1] = 1.0  # ... and near +800 on the last row, in the last split
    a["q"][:, -1] = np.array([800.0, 800.0, -800.0]) / a["scale"]
    cases.append(wide)
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check,
                      other_shapes=_other_length)


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = {
    "q": lambda a, rng: new_values(a["q"], rng),
    "kv": lambda a, rng: new_values(a["kv"], rng),
    "d_v": lambda a, rng: another_int(1, a["kv"].shape[1] - 1)(a["d_v"], rng),
    "scale": lambda a, rng: a["scale"] * float(rng.choice([0.5, 2.0])),
    "n_splits": lambda a, rng: another_int(1, 12)(a["n_splits"], rng),
}


def _other_length(args, rng):
    """The same query, d_v, scale and n_splits, another number of cached rows (so other
    split boundaries)."""
    T = args["kv"].shape[0] + int(rng.integers(1, 2 * args["n_splits"] + 2))
    return {**args, "kv": rng.standard_normal((T, args["kv"].shape[1]))}


def check(case, result):
    if not isinstance(result, (tuple, list)) or len(result) != 4:
        size = said(" of length {n}", n=len(result)) if isinstance(result, (tuple, list)) else ""
        return fail(said("{fn} should return four arrays (out, lse, o_parts, lse_parts); got a {type}{size}.",
                         fn=FN, type=type(result).__name__, size=size), Reason.WRONG_TYPE)
    names = ("out", "lse", "o_parts", "lse_parts")
    dims = ("[h_q, d_v]", "[h_q]", "[n_splits, h_q, d_v]", "[n_splits, h_q]")
    for name, dim, exp, got in zip(names, dims, reference(**case.args), result):
        v = compare_arrays(f"{FN} {name}", exp, got, rtol=RTOL, atol=ATOL, dims=dim)
        if not v.passed:
            return v
    return PASS


MISTAKES = load_mistakes(__file__)

EDGES = [
    Edge("one head", lambda a: a["q"].shape[0] == 1, kind="one"),
    uneven_rows_edge(lambda a: (a["scale"] * a["q"] @ a["kv"].T).max(axis=-1)),
    wide_row_edge(lambda a: a["scale"] * a["q"] @ a["kv"].T),
    Edge("an empty split", lambda a: any(r.stop == r.start for r in split_rows(a["kv"].shape[0], a["n_splits"])),
         kind="none"),
    Edge("one split", lambda a: a["n_splits"] == 1, kind="one"),
    Edge("one row", lambda a: a["kv"].shape[0] == 1 and a["n_splits"] > 1, kind="one"),
    Edge("more splits than rows", lambda a: a["n_splits"] > a["kv"].shape[0], kind="limit"),
    Edge("scores in the hundreds, above 709", lambda a: float(np.max(np.abs(a["scale"] * a["q"] @ a["kv"].T))) > 750,
         kind="largest"),
    Edge("a scale other than 1/sqrt(d_k)", lambda a: abs(a["scale"] * np.sqrt(a["q"].shape[-1]) - 1) > 0.1),
]

PROBLEM = Problem(
    number=10, slug="split_kv_decode", title="Split-KV decode (flash-decoding) in numpy",
    summary="flash-decoding in numpy: splits plus an LSE combine",
    chapter="notebooks/06_decode_kernel.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: reference}, edges=EDGES, normalises_rows=True,
    no_structure={
        "none first": "the split rule puts every empty split after the full ones (c = ceil(T / n_splits))",
        "order": "the rows are the cache in order and the splits follow them; the statement has no ids",
        "ties": "float outputs compared with a tolerance: no ranking or choice to tie",
    },
)
