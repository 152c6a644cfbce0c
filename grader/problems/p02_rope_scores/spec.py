"""Problem 2: attention scores with decoupled RoPE (chapter 2)."""
from __future__ import annotations

import numpy as np

from grader.spec import (Case, Edge, Problem, another, compare_arrays, load_mistakes, memo_twins, new_values,
                         shape_text)
from mlacourse.rope import apply_rope

FN = "rope_scores"

STATEMENT = r"""
Write `rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0)`: the
pre-softmax attention scores of **one new query token** against `T` cached keys in MLA
with decoupled RoPE.

| argument | shape | meaning |
|---|---|---|
| `q_nope` | `[n_heads, d_nope]` | position-free part of the query, per head |
| `q_rope` | `[n_heads, d_rope]` | RoPE part of the query, per head, **not yet rotated** |
| `k_nope` | `[T, n_heads, d_nope]` | position-free part of each key, per head |
| `k_rope` | `[T, d_rope]` | RoPE part of each key, **shared by all heads**, not yet rotated |
| `q_pos` | int | the query token's position |
| `k_pos` | `[T]` int | each key's position (in any order; the query may come after the newest key) |
| `theta` | float | RoPE base |

Return `scores [n_heads, T]` (float64):

    scores[h, t] = ( q_nope[h] . k_nope[t, h]  +  rot(q_rope[h], q_pos) . rot(k_rope[t], k_pos[t]) ) / sqrt(d_nope + d_rope)

`rot(x, p)` rotates **interleaved pairs** `(x[2i], x[2i+1])`, i = 0 .. d_rope/2 - 1, by the
angle `p * theta ** (-2i / d_rope)`:

    rot(x, p)[2i]   = x[2i] * cos(a_i) - x[2i+1] * sin(a_i)
    rot(x, p)[2i+1] = x[2i] * sin(a_i) + x[2i+1] * cos(a_i)

Checked against `mlacourse.rope.apply_rope` with |got - expected| <= 1e-9 + 1e-6 * |expected|
on every element. Visible examples have 2-3 heads; hidden cases draw n_heads 1-8,
d_nope and d_rope from {4, 8, 16}, T 1-39 (T = 1 and a single head included: keep the
`[n_heads, T]` shape), positions up to 5000 and theta 10000, 50000 or 500000.
"""

HINTS = [
    "Split the work: the nope part is an ordinary per-head dot product, the rope part is "
    "a dot product of rotated vectors, and the two scores simply add.",
    "The rope key is shared by every head, so rotate k_rope once ([T, d_rope]) and use one "
    "matmul for all heads: rot_q [n_heads, d_rope] @ rot_k.T -> [n_heads, T].",
    "Interleaved pairs: even = x[..., 0::2], odd = x[..., 1::2]; angles = "
    "pos[..., None] * theta ** (-np.arange(0, d_rope, 2) / d_rope). Write the rotated even "
    "and odd slots back to [..., 0::2] and [..., 1::2].",
    "For the nope part: np.einsum('hd,thd->ht', q_nope, k_nope). Scale the sum by "
    "1 / sqrt(d_nope + d_rope), not 1 / sqrt(d_nope).",
]


RTOL, ATOL = 1e-6, 1e-9


def reference(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    """Scores [H, T] from the math core: rotate q_rope and k_rope, add the nope part."""
    q_r = apply_rope(q_rope, np.asarray(q_pos), theta)  # [H, d_rope], every head at q_pos
    k_r = apply_rope(k_rope, np.asarray(k_pos), theta)  # [T, d_rope]
    scale = 1.0 / np.sqrt(q_nope.shape[-1] + q_rope.shape[-1])
    return (np.einsum("hd,thd->ht", q_nope, k_nope) + q_r @ k_r.T) * scale


def _case(name, rng, n_heads, d_nope, d_rope, n_keys, q_pos, k_pos, theta, hidden, seed):
    args = {
        "q_nope": rng.standard_normal((n_heads, d_nope)),
        "q_rope": rng.standard_normal((n_heads, d_rope)),
        "k_nope": rng.standard_normal((n_keys, n_heads, d_nope)),
        "k_rope": rng.standard_normal((n_keys, d_rope)),
        "q_pos": int(q_pos),
        "k_pos": np.asarray(k_pos, dtype=np.int64),
        "theta": float(theta),
    }
    describe = shape_text(**{k: args[k] for k in ("q_nope", "q_rope", "k_nope", "k_rope")})
    describe += f", q_pos={q_pos}, theta={theta:g}"
    return Case(name, FN, args, hidden=hidden, seed=seed, describe=describe)


def make_cases(seed):
    fixed = np.random.default_rng(2)
    cases = [
        _case("decode step: the query at position 5, keys at 0..5", fixed, 2, 4, 4, 6, 5, np.arange(6),
              10000.0, False, None),
        _case("keys at scattered positions", fixed, 3, 8, 8, 4, 100, [3, 40, 99, 100],
              10000.0, False, None),
    ]
    rng = np.random.default_rng(seed)
    thetas = rng.permutation([10000.0, 50000.0, 500000.0, 10000.0])
    dims = rng.permutation([4, 8, 16, 8])
    for i in range(4):
        n_heads = int(rng.integers(1, 9))
        d_nope, d_rope = int(dims[i]), int(dims[(i + 1) % 4])
        n_keys = int(rng.integers(3 if i == 1 else 1, 40))
        k_pos = np.sort(rng.choice(5000, size=n_keys, replace=False))
        q_pos = int(k_pos[-1]) + int(rng.integers(1 if i == 2 else 0, 3))  # random 2: past its newest key
        while i == 1 and (np.diff(k_pos) > 0).all():  # random 1: keys listed in no order of position
            k_pos = rng.permutation(k_pos)
        cases.append(_case(f"random {i}", rng, n_heads, d_nope, d_rope, n_keys, q_pos, k_pos,
                           float(thetas[i]), True, seed))
    q_pos = int(rng.integers(0, 5000))
    cases.append(_case("one cached key (T = 1)", rng, int(rng.integers(2, 9)), 8, 4, 1, q_pos, [q_pos],
                       float(thetas[0]), True, seed))
    n_keys = int(rng.integers(2, 40))
    k_pos = np.sort(rng.choice(5000, size=n_keys, replace=False))
    cases.append(_case("a single head", rng, 1, 4, 8, n_keys, int(k_pos[-1]), k_pos, float(thetas[1]),
                       True, seed))
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check,
                      other_shapes=_other_keys)


def _new_positions(args, rng):
    """Other sorted key positions, none after the query (same T)."""
    n, q_pos = len(args["k_pos"]), args["q_pos"]
    if q_pos + 1 < n + 1:
        return None
    return np.sort(rng.choice(q_pos + 1, size=n, replace=False)).astype(np.int64)


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = {
    **{k: (lambda a, rng, k=k: new_values(a[k], rng)) for k in ("q_nope", "q_rope", "k_nope", "k_rope")},
    "q_pos": lambda a, rng: a["q_pos"] + int(rng.integers(1, 4)),
    "k_pos": _new_positions,
    "theta": lambda a, rng: another([10000.0, 50000.0, 500000.0])(a["theta"], rng),
}


def _other_keys(args, rng):
    """The same query, positions bound and theta, another number of cached keys."""
    n = len(args["k_pos"])
    n_new = n + int(rng.integers(1, 4))
    if n_new > args["q_pos"] + 1:
        return None
    heads, d_nope = args["k_nope"].shape[1:]
    return {**args, "k_nope": rng.standard_normal((n_new, heads, d_nope)),
            "k_rope": rng.standard_normal((n_new, args["k_rope"].shape[1])),
            "k_pos": np.sort(rng.choice(args["q_pos"] + 1, size=n_new, replace=False)).astype(np.int64)}


def check(case, result):
    return compare_arrays(FN, reference(**case.args), result, rtol=RTOL, atol=ATOL,
                          dims="[n_heads, T]")


MISTAKES = load_mistakes(__file__)

EDGES = [
    Edge("one cached key (T = 1)", lambda a: len(a["k_pos"]) == 1, kind="one"),
    Edge("a single head", lambda a: a["q_nope"].shape[0] == 1, kind="one"),
    Edge("key positions listed out of order", lambda a: bool((np.diff(a["k_pos"]) < 0).any()), kind="order"),
    Edge("the query past its newest key", lambda a: a["q_pos"] > int(np.max(a["k_pos"])), kind="limit"),
    Edge("positions above 4000", lambda a: max(a["q_pos"], int(np.max(a["k_pos"]))) > 4000, kind="largest"),
]

PROBLEM = Problem(
    number=2, slug="rope_scores", title="Scores with decoupled RoPE",
    summary="attention scores with decoupled RoPE",
    chapter="notebooks/02_mla_and_decoupled_rope.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: reference}, edges=EDGES,
    no_structure={
        "none": "every case has a key and a head (T >= 1, n_heads >= 1): no empty array is allowed",
        "none first": "one score per (head, key), nothing walked in pieces with a running state",
        "spread": "no softmax: the scores are returned, never exponentiated",
        "ties": "float outputs compared with a tolerance: no ranking or choice to tie",
    },
)
