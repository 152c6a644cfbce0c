"""Problem 10: flash-decoding in numpy -- split the cache, attend, combine (chapter 6)."""
from __future__ import annotations

import math

import numpy as np

from grader.spec import Case, Mistake, Problem, shape_text, compare_out_lse
from mlacourse.attention import attention, merge_attention

FN = "split_kv_decode"
RTOL, ATOL = 1e-6, 1e-9


def _reference(q, kv, d_v, scale, n_splits):
    """The unsplit attention: splitting the keys must not change the answer."""
    return attention(q, kv, kv[:, :d_v], scale)  # out [h_q, d_v], lse [h_q]


def _case(name, rng, h_q, n_tok, d_k, d_v, n_splits, q_std=1.0, hidden=False, seed=None):
    args = {"q": rng.standard_normal((h_q, d_k)) * q_std, "kv": rng.standard_normal((n_tok, d_k)),
            "d_v": int(d_v), "scale": float(1 / np.sqrt(d_k)), "n_splits": int(n_splits)}
    per = math.ceil(n_tok / n_splits)
    sizes = [max(0, min(per, n_tok - j * per)) for j in range(n_splits)]
    describe = (shape_text(q=args["q"], kv=args["kv"]) + f", d_v={d_v}, n_splits={n_splits} "
                f"(split sizes {sizes})" + (f", seed {seed}" if seed is not None else ""))
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
        cases.append(_case(f"random {i}", rng, int(rng.integers(1, 17)), int(rng.integers(1, 60)),
                           d_v + int(rng.integers(1, 5)), d_v, int(rng.integers(1, 13)),
                           q_std=float(rng.choice([1.0, 4.0])), hidden=True, seed=seed))
    return cases


def check(case, result):
    return compare_out_lse(FN, _reference(**case.args), result, rtol=RTOL, atol=ATOL,
                           out_dims="[h_q, d_v]", lse_dims="[h_q]")


# ---- plausible wrong attempts --------------------------------------------------------

def _splits(q, kv, d_v, scale, n_splits, v_cols=None, empty_gives_nan=False):
    """Per-split (out, lse, size) lists, with the knobs the mistakes turn."""
    per = math.ceil(kv.shape[0] / n_splits)
    v_cols = v_cols or slice(0, d_v)
    outs, lses, sizes = [], [], []
    for j in range(n_splits):
        rows = kv[j * per:(j + 1) * per]
        o, l = attention(q, rows, rows[:, v_cols], scale)
        if empty_gives_nan and rows.shape[0] == 0:
            o = np.full_like(o, np.nan)  # 0 / 0 from an unguarded softmax over no keys
        outs.append(o)
        lses.append(l)
        sizes.append(rows.shape[0])
    return outs, lses, sizes


def _averaged(**a):
    outs, lses, _ = _splits(**a)
    return np.mean(outs, axis=0), np.logaddexp.reduce(lses, axis=0)


def _weighted_by_size(**a):
    outs, lses, sizes = _splits(**a)
    w = np.asarray(sizes, dtype=np.float64) / sum(sizes)
    return np.tensordot(w, np.stack(outs), axes=1), np.logaddexp.reduce(lses, axis=0)


def _empty_split_nan(**a):
    outs, lses, sizes = _splits(**a, empty_gives_nan=True)
    if min(sizes) > 0:
        return None
    with np.errstate(invalid="ignore"):
        lse = np.logaddexp.reduce(lses, axis=0)
        out = sum(np.exp(l - lse)[:, None] * o for o, l in zip(outs, lses))
    return out, lse


def _lse_is_max(**a):
    outs, lses, _ = _splits(**a)
    return merge_attention(outs, lses)[0], np.max(lses, axis=0)


def _v_last_dims(**a):
    outs, lses, _ = _splits(**a, v_cols=slice(a["kv"].shape[1] - a["d_v"], None))
    return merge_attention(outs, lses)


def _v_whole_row(**a):
    outs, lses, _ = _splits(**a, v_cols=slice(None))
    return merge_attention(outs, lses)


def _no_scale(**a):
    return _reference(**dict(a, scale=1.0))


MISTAKES = [
    Mistake("splits averaged",
            "You averaged the splits' outputs; weight split i by exp(lse_i - lse) so each "
            "split counts by its share of the softmax mass.", _averaged),
    Mistake("splits weighted by their length",
            "You weighted splits by how many keys they hold; the weight is the split's "
            "softmax mass, exp(lse_i - lse), not its size.", _weighted_by_size),
    Mistake("empty split gives NaN",
            "An empty split produced NaN (0 / 0); a split with no keys must contribute "
            "out 0 with lse -inf, i.e. weight 0.", _empty_split_nan),
    Mistake("merged lse = max lse",
            "Your lse is the largest split's lse; return log(sum_i exp(lse_i)).", _lse_is_max),
    Mistake("V from the last d_v dims",
            "V is the FIRST d_v dims of each cached row (the latent c; the rope part sits at "
            "the end), not the last d_v.", _v_last_dims),
    Mistake("V is the whole row",
            "You used the whole row as V; in MLA the value is kv[:, :d_v], so out has d_v "
            "columns, not d_k.", _v_whole_row),
    Mistake("scale left out",
            "Multiply the scores q . k by `scale` before the softmax.", _no_scale),
]

STATEMENT = r"""
Write `split_kv_decode(q, kv, d_v, scale, n_splits)`: decode attention the way
flash-decoding runs it on a GPU -- cut the cached keys into `n_splits` ranges, attend to
each range separately (each would be its own thread block), then combine the partial
results by log-sum-exp.

| argument | shape | meaning |
|---|---|---|
| `q` | `[h_q, d_k]` | one query token's heads (absorbed MLA: d_k = d_latent + d_rope) |
| `kv` | `[T, d_k]` | the cached rows, shared by every head (an MQA) |
| `d_v` | int | the value is the **first** `d_v` dims of each row: `V = kv[:, :d_v]` |
| `scale` | float | softmax scale |
| `n_splits` | int | number of key ranges |

Split `j` covers rows `j*c .. (j+1)*c - 1` (clipped to T) with `c = ceil(T / n_splits)`,
so trailing splits can be **empty** (T=5, n_splits=4: sizes 2, 2, 1, 0). An empty split
contributes nothing.

Return `(out [h_q, d_v], lse [h_q])`: exactly one softmax attention over all T keys,
`lse = log(sum_t exp(scale * q . kv[t]))`. Checked against `mlacourse.attention.attention`
on the unsplit cache: out first, then lse, each with |got - expected| <= 1e-9 + 1e-6 *
|expected|. Hidden cases: h_q 1-16, T 1-59, n_splits 1-12.
"""

HINTS = [
    "Write the per-split part first: scores s = scale * q @ rows.T ([h_q, n]); with m = max "
    "over the split, out_j = softmax(s) @ rows[:, :d_v] and lse_j = m + log(sum exp(s - m)).",
    "An empty split has no max: return out_j = zeros([h_q, d_v]) and lse_j = full(-inf) "
    "without touching np.max.",
    "Combine like problem 5: lse = np.logaddexp.reduce(lses, axis=0); out = sum_j "
    "exp(lse_j - lse)[:, None] * out_j. exp(-inf - lse) is 0, so empty splits drop out.",
]

PROBLEM = Problem(
    number=10, slug="split_kv_decode", title="Split-KV decode (flash-decoding) in numpy",
    chapter="notebooks/06_decode_kernel.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: _reference},
)
