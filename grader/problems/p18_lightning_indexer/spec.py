"""Problem 18: DeepSeek-V3.2's lightning indexer -- index scores and the top-k with a stated
tie rule, causal among the new tokens (chapter 8)."""
from __future__ import annotations

import numpy as np

from grader.lang import said
from grader.spec import (Case, Edge, PASS, Problem, Reason, Verdict, another_int, as_array, compare_arrays, fail,
                         load_mistakes, memo_twins)
from mlacourse.attention import causal_mask
from mlacourse.sparse import index_scores, index_topk

FN = "lightning_indexer"

STATEMENT = r"""
Write `lightning_indexer(q_idx, weights, k_idx, topk)`: choose, for each new token of one
sequence, the `topk` cached tokens that DeepSeek-V3.2's lightning indexer ranks highest.

| argument | shape | meaning |
|---|---|---|
| `q_idx` | `[s_q, H, D]` float | the index queries of the `s_q` new tokens, `H` index heads of width `D` (64 x 128 in V3.2) |
| `weights` | `[s_q, H]` float | each head's weight for each new token (may be negative) |
| `k_idx` | `[s_k, D]` float | one index key per token of the sequence, shared by all heads; the new tokens are the **last** `s_q` of the `s_k` |
| `topk` | int | how many tokens to keep (2048 in V3.2) |

The index score of new token `t` for token `s`:

    I[t, s] = sum_j weights[t, j] * ReLU(q_idx[t, j] . k_idx[s])

New token `t` (0-based) may choose only positions `0 .. s_k - s_q + t`: itself and what came
before it, not the new tokens after it. Return an integer array `[s_q, topk]`, row `t` = its
chosen positions **in this order: highest score first; equal scores by smaller position
first**. When fewer than `topk` positions are visible, fill the rest of the row with `-1`.

The hidden cases use small whole numbers (weights in quarters), so every score is exact and
ties are real: several tokens often score exactly 0 (every head's dot product negative), and
some keys repeat. Some scores in the thousands differ by a quarter (float16 cannot tell them
apart: compute in float64), some new tokens see fewer than `topk` positions while the
sequence has more, and some see only scores of 0 or below. They vary s_q, H, D, s_k and topk, and
repeat shapes with other values.
Checked exactly against the course's `index_scores` and `index_topk` (`mlacourse.sparse`)
with that causal rule.
"""

HINTS = [
    "Scores for all tokens at once: logits = np.einsum('thd,sd->ths', q_idx, k_idx) ([s_q, H, s_k]); "
    "scores = np.einsum('th,ths->ts', weights, np.maximum(logits, 0)).",
    "New token t sees n_t = s_k - s_q + 1 + t positions: rank only scores[t, :n_t].",
    "np.lexsort((positions, -scores_row)) sorts by score (descending), then by position (ascending). "
    "np.argsort(-row, kind='stable') does the same; np.argsort(row)[::-1] does not (ties reversed).",
    "out = np.full((s_q, topk), -1); out[t, :len(pick)] = pick, with pick = order[:topk].",
]


def reference(q_idx, weights, k_idx, topk):
    """The course's index scores and top-k, new token t seeing positions 0 .. s_k - s_q + t
    (chapter 3's bottom-right causal mask): int64 [s_q, topk]."""
    visible = causal_mask(len(q_idx), len(k_idx)).sum(axis=1)  # [s_q]
    return index_topk(index_scores(q_idx, weights, k_idx), topk, n_visible=visible)


# ---- cases -----------------------------------------------------------------------------------

def _args(rng, s_q, H, D, s_k, topk, dup_keys=0, neg_weights=True):
    """Small whole numbers: q and k in -3..3, weights in quarters; `dup_keys` keys copied
    from others (exact ties); one token whose dot products are all negative scores 0."""
    q = rng.integers(-3, 4, size=(s_q, H, D)).astype(np.float64)
    k = rng.integers(-3, 4, size=(s_k, D)).astype(np.float64)
    lo = -4 if neg_weights else 1
    w = rng.integers(lo, 9, size=(s_q, H)).astype(np.float64) / 4.0
    for _ in range(dup_keys):
        a, b = rng.integers(s_k, size=2)
        k[b] = k[a]
    return {"q_idx": q, "weights": w, "k_idx": k, "topk": int(topk)}


def _short_past_args(rng):
    """Several new tokens over a short cache, top-k between what token 0 sees and s_k: the
    first new tokens see fewer than top-k positions although the sequence has more. Token
    0's weights are all negative, so every position it sees scores 0 or less and some score
    below 0 -- a future position given score 0 instead of being left out would outrank them."""
    s_q = int(rng.integers(4, 9))
    s_k = s_q + int(rng.integers(2, 20))
    seen = s_k - s_q + 1                                   # what token 0 sees
    a = _args(rng, s_q, int(rng.integers(2, 6)), int(rng.choice([4, 8])), s_k,
              int(rng.integers(seen + 1, s_k + 1)), dup_keys=1)
    a["weights"][0] = -rng.integers(1, 9, size=a["weights"].shape[1]) / 4.0
    a["q_idx"][0, 0] = a["k_idx"][0]                        # position 0 scores below 0 for token 0
    return a


def _near_tie_args(rng):
    """A near-tie that float16 cannot separate: two keys of the last new token's past,
    positions pa < pb, scoring 2 * d and 2 * d + 0.25 with 2 * d in the thousands (float16's
    spacing there is 1 or 2, so both round -- and, summed head by head in float16, both
    accumulate -- to the same number; the tie then goes to pa). Key pb is key pa with
    coordinate c one larger (0 -> 1); that token's only heads are j1 (weight 2, aligned with
    key pa, 0 at c) and j0 (weight 0.25, 1 at c, 0 elsewhere). Whole numbers throughout:
    float64 (and float32) scores are exact."""
    while True:
        s_q, H = int(rng.integers(1, 3)), int(rng.integers(3, 9))
        s_k = int(rng.integers(20, 60))
        a = _args(rng, s_q, H, 128, s_k, int(rng.integers(4, 13)))
        q, w, k = a["q_idx"], a["weights"], a["k_idx"]
        t = s_q - 1
        pa, pb = sorted(int(x) for x in rng.choice(s_k, size=2, replace=False))
        j1, j0 = (int(x) for x in rng.choice(H, size=2, replace=False))
        c = int(rng.integers(128))
        k[pa] = rng.choice([-3.0, -2.0, 2.0, 3.0], size=128)
        k[pa, c] = 0.0
        k[pb] = k[pa]
        k[pb, c] = 1.0
        q[t] = 0.0                                         # the other heads score every key 0
        q[t, j1] = 3.0 * np.sign(k[pa])
        q[t, j1, c] = 0.0
        q[t, j0, c] = 1.0
        w[t, j1], w[t, j0] = 2.0, 0.25
        if _float16_near_tie(a):
            return a


def _float16_near_tie(a):
    """Two positions in one row's top-k whose scores differ, the higher at the larger
    position, and round to the same float16."""
    scores = index_scores(a["q_idx"], a["weights"], a["k_idx"])
    for t, row in enumerate(reference(**a)):
        chosen = [int(x) for x in row if x >= 0]
        for i, x in enumerate(chosen):
            for y in chosen[i + 1:]:
                hi, lo = (x, y) if scores[t, x] > scores[t, y] else (y, x)
                if hi > lo and scores[t, hi] != scores[t, lo] and (
                        np.float16(scores[t, hi]) == np.float16(scores[t, lo])):
                    return True
    return False


def _redraw(rng, a, q=True, k=True):
    """Same shapes and topk; new values for q/weights and/or the keys."""
    s_q, H, D = a["q_idx"].shape
    new = _args(rng, s_q, H, D, a["k_idx"].shape[0], a["topk"], dup_keys=2)
    if not q:
        new["q_idx"], new["weights"] = a["q_idx"].copy(), a["weights"].copy()
    if not k:
        new["k_idx"] = a["k_idx"].copy()
    return new


def _describe(a, seed=None):
    s_q, H, D = a["q_idx"].shape
    return f"q_idx [{s_q}, {H}, {D}], weights [{s_q}, {H}], k_idx [{a['k_idx'].shape[0]}, {D}], topk {a['topk']}"


def make_cases(seed):
    fixed = np.random.default_rng(18)
    tie = {"q_idx": np.array([[[1.0, 0.0]], [[0.0, 1.0]]]), "weights": np.array([[1.0], [2.0]]),
           "k_idx": np.array([[2.0, 1.0], [1.0, 3.0], [2.0, 0.0], [-1.0, -1.0], [2.0, 5.0]]), "topk": 4}
    cases = [
        Case("two new tokens over 5 tokens: ties and a zero score", FN, tie, describe=_describe(tie)),
        Case("one new token, fewer tokens than top-k (padded with -1)", FN, _args(fixed, 1, 2, 4, 3, 5),
             describe="q_idx [1, 2, 4], k_idx [3, 4], topk 5"),
        Case("three new tokens, 8 heads", FN, _args(fixed, 3, 8, 6, 30, 7, dup_keys=3),
             describe="q_idx [3, 8, 6], k_idx [30, 6], topk 7"),
    ]
    rng = np.random.default_rng(seed)
    hidden = []
    base = _args(rng, int(rng.integers(2, 4)), int(rng.integers(3, 9)), int(rng.choice([8, 16])),
                 int(rng.integers(40, 120)), int(rng.integers(8, 24)), dup_keys=4)
    hidden.append(("a decode step with MTP tokens", base))
    hidden.append(("the same shapes again, other values", _redraw(rng, base)))
    hidden.append(("the same keys, other queries", _redraw(rng, base, k=False)))
    hidden.append(("the same queries, other keys", _redraw(rng, base, q=False)))
    hidden.append(("top-k larger than the sequence (rows padded with -1)",
                   _args(rng, int(rng.integers(1, 4)), int(rng.integers(2, 6)), 4, int(rng.integers(3, 9)),
                         int(rng.integers(10, 16)))))
    hidden.append(("many tokens scoring exactly 0, more than top-k leaves room for",
                   _args(rng, 2, 2, int(rng.choice([3, 5])), int(rng.integers(40, 80)), int(rng.integers(30, 40)),
                         neg_weights=False)))
    hidden.append(("top-k 1, one new token", _args(rng, 1, int(rng.integers(1, 5)), int(rng.choice([4, 32])),
                                                   int(rng.integers(5, 50)), 1, dup_keys=2)))
    hidden.append(("V3.2's widths: 64 heads of 128", _args(rng, 2, 64, 128, int(rng.integers(60, 200)),
                                                           int(rng.integers(16, 48)), dup_keys=3)))
    hidden.append(("new tokens that see fewer positions than top-k, though s_k is larger; scores below 0",
                   _short_past_args(rng)))
    hidden.append(("scores in the thousands a quarter apart (float16 ties them)", _near_tie_args(rng)))
    order = [int(i) for i in rng.permutation(len(hidden))]  # twins apart, in a random order
    if order[-1] == 0:
        order[0], order[-1] = order[-1], order[0]
    cases += [Case(hidden[i][0], FN, hidden[i][1], hidden=True, seed=seed, describe=_describe(hidden[i][1], seed))
              for i in order]
    again = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in base.items()}
    cases.append(Case("the first decode step once more, after the others", FN, again, hidden=True, seed=seed,
                      describe=_describe(again, seed)))
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check)


# memo_twins: each argument changed alone, in small whole numbers like the rest (exact
# scores: a tie stays a tie however a right answer sums)
CHANGES = {
    "q_idx": lambda a, rng: rng.integers(-3, 4, size=a["q_idx"].shape).astype(np.float64),
    "weights": lambda a, rng: rng.integers(-4, 9, size=a["weights"].shape).astype(np.float64) / 4.0,
    "k_idx": lambda a, rng: rng.integers(-3, 4, size=a["k_idx"].shape).astype(np.float64),
    "topk": lambda a, rng: another_int(1, a["k_idx"].shape[0] + 4)(a["topk"], rng),
}


def check(case, result):
    expected = reference(**case.args)
    arr = as_array(result, FN)
    if isinstance(arr, Verdict):
        return arr
    if np.asarray(result).dtype.kind not in "iu" and arr.shape == expected.shape:
        return fail(said("{fn} returned {dtype} values; positions are integers.", fn=FN,
                         dtype=str(np.asarray(result).dtype)), Reason.WRONG_TYPE)
    if arr.shape == expected.shape and not np.array_equal(arr, expected):
        t = int(np.argwhere(arr != expected)[0][0])
        same_set = set(arr[t].tolist()) == set(expected[t].tolist())
        if same_set:
            return fail(said("{fn}: row {t} holds the right positions in the wrong order: expected {want}, "
                             "got {got}. Order by score, highest first; equal scores by smaller position.",
                             fn=FN, t=t, want=str(expected[t].tolist()), got=str(arr[t].tolist())))
    v = compare_arrays(FN, expected, arr, rtol=0.0, atol=0.0, dims="[s_q, topk]")
    return v if not v.passed else PASS


MISTAKES = load_mistakes(__file__)


def _has_ties(a):
    scores = index_scores(a["q_idx"], a["weights"], a["k_idx"])
    return any(len(np.unique(r)) < len(r) for r in scores)


def _negative_chosen_with_a_future(a):
    """A new token with positions after it (not yet visible) chooses a position whose score
    is below 0: a future position scored 0 instead of left out would outrank it."""
    scores = index_scores(a["q_idx"], a["weights"], a["k_idx"])
    s_q = a["q_idx"].shape[0]
    return any(any(scores[t, x] < 0 for x in row if x >= 0) for t, row in enumerate(reference(**a)) if t < s_q - 1)


EDGES = [
    Edge("equal scores", _has_ties, kind="ties"),
    Edge("scores a quarter apart that float16 ties", _float16_near_tie, kind="ties"),
    Edge("fewer visible positions than top-k (empty slots, -1)",
         lambda a: a["k_idx"].shape[0] - a["q_idx"].shape[0] + 1 < a["topk"], kind="none"),
    Edge("a new token that sees fewer positions than top-k while s_k >= top-k",
         lambda a: a["k_idx"].shape[0] - a["q_idx"].shape[0] + 1 < a["topk"] <= a["k_idx"].shape[0], kind="limit"),
    Edge("a chosen position scoring below 0 for a new token that has future positions",
         _negative_chosen_with_a_future, kind="limit"),
    Edge("s_q > 1", lambda a: a["q_idx"].shape[0] > 1),
    Edge("negative weights", lambda a: bool((a["weights"] < 0).any())),
    Edge("top-k 1", lambda a: a["topk"] == 1, kind="one"),
    Edge("64 heads of 128", lambda a: a["q_idx"].shape[1:] == (64, 128), kind="largest"),
]

PROBLEM = Problem(
    number=18, slug="lightning_indexer", title="The lightning indexer's scores and top-k",
    summary="DeepSeek-V3.2's index scores and top-k, with a stated tie rule",
    chapter="notebooks/08_flashmla_next.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: reference}, edges=EDGES,
    no_structure={
        "none first": "the scores are computed whole and ranked: no running state starts on a first piece",
        "order": "positions are the keys' own order (0 .. s_k - 1), given by the array; the answer's "
                 "order is the ranking, which the ties and near-ties cover",
        "spread": "no softmax: the scores are ranked, never exponentiated, so their distance cannot overflow",
    },
)
