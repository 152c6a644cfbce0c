"""Problem 5: merge partial attention results by log-sum-exp (chapter 4)."""
from __future__ import annotations

import numpy as np

from grader.spec import (Case, Edge, Problem, compare_out_lse, load_mistakes, memo_twins, new_values,
                         row_offsets, shape_text, uneven_rows_edge, wide_row, wide_row_edge)
from mlacourse.attention import attention_from_scores, merge_attention

FN = "lse_merge"

STATEMENT = r"""
Write `lse_merge(outs, lses)`: combine attention results that were computed over
**disjoint sets of keys** into the result of one attention over all of them.

| argument | shape | meaning |
|---|---|---|
| `outs` | `[n_parts, n_heads, s_q, d_v]` | part i's softmax-weighted values |
| `lses` | `[n_parts, n_heads, s_q]` | part i's log-sum-exp of its scores (natural log) |

Return a pair `(out, lse)`, `out [n_heads, s_q, d_v]` and `lse [n_heads, s_q]`:

    lse = log(sum_i exp(lses[i]))
    out = sum_i exp(lses[i] - lse) * outs[i]

Rules the cases test:
* A part that saw no key for a row has `lse = -inf` and `out = 0`; it must get weight 0.
* A row that **no** part saw must come out as `out = 0`, `lse = -inf` (not NaN); the
  **first** part may be the empty one, for a row that later parts saw.
* lse values may be near +-800: `exp(800)` overflows float64, so keep the computation
  stable: subtract each row's largest lse first -- each row's own, since in one case one
  row's lses sit near +750 and another row's near -750, and in another one row's parts
  run from near -800 to +800 (the largest last: not the first part's lse, nor the mean).
* A single part (`n_parts = 1`) is merged like any other count: the result has no
  n_parts axis.

Checked against `mlacourse.attention.merge_attention`: out first, then lse, each with
|got - expected| <= 1e-9 + 1e-6 * |expected| (-inf must match -inf). Hidden cases: 1-5
parts, some empty, one head or one query row, scores shifted by 0 or +-750.
"""

HINTS = [
    "Each part's softmax was normalised by its own denominator exp(lse_i). The merged "
    "denominator is the sum of those, so the weight of part i is exp(lse_i) / sum_j exp(lse_j).",
    "Compute that ratio as exp(lse_i - m) / sum_j exp(lse_j - m) with m = the largest lse: "
    "the same number, but nothing overflows. Then lse = m + log(sum_j exp(lse_j - m)).",
    "Rows where every lse is -inf: m is -inf and lse_i - m is NaN. Replace such an m with 0 "
    "(np.where(np.isfinite(m), m, 0)); then all weights are 0, and you return out 0, lse -inf.",
    "Vectorised: w = np.exp(lses - m) has shape [n_parts, n_heads, s_q]; out = (w[..., None] "
    "* outs).sum(0) / total[..., None], guarding total == 0.",
]


RTOL, ATOL = 1e-6, 1e-9


def reference(outs, lses):
    return merge_attention(list(outs), list(lses))


def _parts(rng, n_heads, s_q, n_keys, d, d_v, bounds, score_std=1.0, shift=0.0, causal=False):
    """Real partial results: attention of the same queries over disjoint key ranges.

    bounds: key-range edges (consecutive equal edges give an empty part). With causal,
    query i sees keys 0 .. n_keys - s_q + i, so late parts are empty for early queries.
    shift adds a constant to every score (a number, or one per row: [n_heads, s_q, 1]),
    moving each row's lse by it."""
    q = rng.standard_normal((n_heads, s_q, d)) * score_std
    k = rng.standard_normal((n_heads, n_keys, d))
    v = rng.standard_normal((n_heads, n_keys, d_v))
    rows = np.arange(s_q)[:, None]
    cols = np.arange(n_keys)[None, :]
    visible = cols <= rows + (n_keys - s_q) if causal else np.ones((s_q, n_keys), bool)
    outs, lses = [], []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        scores = q @ np.swapaxes(k[:, lo:hi], -1, -2) / np.sqrt(d) + shift  # [H, s_q, hi-lo]
        o, l = attention_from_scores(scores, v[:, lo:hi], visible[:, lo:hi])
        outs.append(o)
        lses.append(l)
    return {"outs": np.stack(outs), "lses": np.stack(lses)}


def _case(name, args, hidden, seed, note=""):
    describe = shape_text(outs=args["outs"], lses=args["lses"])
    describe += (f", {note}" if note else "")
    return Case(name, FN, args, hidden=hidden, seed=seed, describe=describe)


def make_cases(seed):
    fixed = np.random.default_rng(5)
    cases = [
        _case("two halves of 8 keys", _parts(fixed, 2, 1, 8, 4, 3, [0, 4, 8]), False, None),
        _case("a part that saw no key (lse -inf, out 0)",
              _parts(fixed, 2, 3, 6, 4, 3, [0, 3, 3, 6]), False, None, "the middle part is empty"),
        _case("causal: late parts empty for early queries",
              _parts(fixed, 1, 4, 4, 4, 2, [0, 2, 4], causal=True), False, None,
              "query 0 sees only part 0"),
        _case("large scores (lse near 800)",
              _parts(fixed, 2, 2, 6, 4, 3, [0, 2, 6], shift=800.0), False, None,
              "exp(lse) overflows float64"),
    ]
    rng = np.random.default_rng(seed)
    for i in range(5):
        n_heads, s_q = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        n_keys = int(rng.integers(s_q, 30))
        n_parts = int(rng.integers(1, 6))
        bounds = np.sort(np.concatenate([[0, n_keys], rng.integers(0, n_keys + 1, n_parts - 1)]))
        shift = float(rng.choice([0.0, 750.0, -750.0]))
        args = _parts(rng, n_heads, s_q, n_keys, int(rng.choice([4, 8])), int(rng.integers(1, 6)),
                      bounds, score_std=float(rng.choice([1.0, 3.0])), shift=shift,
                      causal=bool(i % 2))
        if i == 4:  # one query row that no part saw: every lse -inf, every out 0
            args["lses"][:, 0, 0] = -np.inf
            args["outs"][:, 0, 0] = 0.0
        cases.append(_case(f"random {i}", args, True, seed,
                           f"{n_parts} part{'s' if n_parts > 1 else ''}, scores shifted by {shift:g}"
                           + (", one row seen by no part" if i == 4 else "")))
    n_keys = int(rng.integers(3, 20))
    cases.append(_case("a single part, one query row", _parts(rng, int(rng.integers(2, 5)), 1, n_keys, 4,
                                                              3, [0, n_keys], score_std=2.0), True, seed,
                       "n_parts = 1, s_q = 1"))
    s_q, n_keys = int(rng.integers(2, 5)), int(rng.integers(8, 30))
    cases.append(_case("one head, 3 parts", _parts(rng, 1, s_q, n_keys, 8, 4,
                                                  [0, n_keys // 3, 2 * n_keys // 3, n_keys], causal=True),
                       True, seed, "n_heads = 1"))
    cases.append(_case("a first part that saw no key, later ones that did",
                       _empty_first(rng, int(rng.integers(1, 4)), int(rng.integers(1, 4))), True, seed,
                       "part 0 is empty for every row; rows are seen by the later parts"))
    cases.append(_case("one row's parts hundreds apart, the largest last", _wide_parts(rng), True, seed,
                       "part lses near -800 ... then +800 in one row"))
    n_heads, s_q, n_keys = 3, int(rng.integers(2, 4)), int(rng.integers(6, 20))
    cases.append(_case("rows whose lses differ by hundreds (near +750 and near -750)",
                       _parts(rng, n_heads, s_q, n_keys, 4, 3, [0, n_keys // 2, n_keys],
                              shift=row_offsets(rng, (n_heads, s_q, 1))), True, seed,
                       "one row's lse near +750, another's near -750"))
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check)


def _empty_first(rng, n_heads, s_q):
    """Parts whose FIRST is empty for every row (its key range is empty), then 1-3 parts
    that saw keys: a merge whose running max starts at -inf meets -inf - -inf first."""
    n_keys = int(rng.integers(s_q + 2, 30))
    inner = np.sort(rng.integers(1, n_keys, int(rng.integers(0, 3))))
    bounds = np.concatenate([[0, 0], inner, [n_keys]])
    return _parts(rng, n_heads, s_q, n_keys, 4, int(rng.integers(1, 6)), bounds,
                  score_std=float(rng.choice([1.0, 3.0])))


def _wide_parts(rng):
    """One row whose parts' lses are hundreds apart, the largest last (near -800 ... +800:
    wide_row), so neither the first part's lse nor the mean of the lses can stand in for the
    maximum; the other rows as drawn."""
    n_parts = int(rng.integers(3, 6))
    n_keys = int(rng.integers(n_parts + 3, 30))
    bounds = np.concatenate([[0], np.sort(rng.choice(np.arange(1, n_keys), n_parts - 1, replace=False)), [n_keys]])
    args = _parts(rng, int(rng.integers(1, 4)), int(rng.integers(1, 4)), n_keys, 4, int(rng.integers(1, 6)), bounds)
    h, s = int(rng.integers(args["lses"].shape[1])), int(rng.integers(args["lses"].shape[2]))
    args["lses"][:, h, s] = wide_row(n_parts, rng)
    return args


def _new_outs(args, rng):
    """Other part outputs; still 0 where the part saw no key (lse -inf)."""
    outs = new_values(args["outs"], rng)
    outs[np.isneginf(args["lses"])] = 0.0
    return outs


# memo_twins: each argument changed alone (a cache keyed on the other fails)
CHANGES = {"outs": _new_outs, "lses": lambda a, rng: new_values(a["lses"], rng)}


def check(case, result):
    return compare_out_lse(FN, reference(**case.args), result, rtol=RTOL, atol=ATOL,
                           out_dims="[n_heads, s_q, d_v]", lse_dims="[n_heads, s_q]")


MISTAKES = load_mistakes(__file__)


def _row_max(a):
    """Each (head, query) row's largest lse: [n_heads, s_q]."""
    return np.max(a["lses"], axis=0)


def _rows_in_part_order(a):
    """Each (head, query) row's part lses, parts in order."""
    lses = a["lses"]
    for h, s in np.ndindex(*lses.shape[1:]):
        yield lses[:, h, s]


EDGES = [
    Edge("a single part", lambda a: a["lses"].shape[0] == 1, kind="one"),
    Edge("one head", lambda a: a["lses"].shape[1] == 1, kind="one"),
    Edge("one query row (s_q = 1)", lambda a: a["lses"].shape[2] == 1, kind="one"),
    uneven_rows_edge(_row_max),
    wide_row_edge(_rows_in_part_order),
    Edge("a part that saw no key", lambda a: bool(np.isneginf(a["lses"]).any()), kind="none"),
    Edge("a row no part saw", lambda a: bool(np.isneginf(a["lses"]).all(axis=0).any()), kind="none"),
    Edge("a row whose first part saw no key and a later part did",
         lambda a: bool((np.isneginf(a["lses"][0]) & np.isfinite(a["lses"][1:]).any(axis=0)).any()),
         kind="none first"),
    Edge("scores (and lse) in the hundreds, above 709", lambda a: float(np.max(np.abs(a["lses"][np.isfinite(a["lses"])]), initial=0.0)) > 709,
         kind="largest"),
]

PROBLEM = Problem(
    number=5, slug="lse_merge", title="Merge partial attention by log-sum-exp",
    summary="merge partial attention results by log-sum-exp",
    chapter="notebooks/04_flops_and_path_choice.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: reference}, edges=EDGES, normalises_rows=True,
    no_structure={
        "order": "the parts are disjoint sets of keys: their order changes nothing, and there are no ids",
        "limit": "no budget, page or chunk: any number of parts of any size",
        "ties": "float outputs compared with a tolerance: no ranking or choice to tie",
    },
)
