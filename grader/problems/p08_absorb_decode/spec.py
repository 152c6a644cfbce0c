"""Problem 8: one decode step of MLA by the absorbed path, without expanding the cache.

Anti-expansion check, deterministic first and by work second: the last hidden case has
tiny latents (d_latent 8), huge heads (d_nope = d_v = 65536) and T = 65536 cached
tokens, under a memory headroom of TRAP_MB and a deadline of TRAP_S seconds. The
absorbed path needs a few MB and milliseconds there. One head's expanded keys
c_kv @ w_uk[h] are [65536, 65536] (32 GiB in float64), so building them at once raises
MemoryError; building them in chunks of up to ~500 tokens fits in memory but is 275
GFLOP of work (K and V, two heads), several seconds even for a fast core -- a timeout
that the verdict names too.
"""

from __future__ import annotations

import math
import numpy as np

from grader.lang import said
from mlacourse.layer import attend_absorb
from grader.spec import (Case, Edge, Problem, compare_arrays, load_mistakes, memo_twins, new_values,
                         row_offsets, shape_text, uneven_rows_edge, wide_row_edge)


TRAP = dict(n_heads=2, d_latent=8, d_rope=4, d_nope=65536, d_v=65536, T=65536)
TRAP_MB = 256
TRAP_S = 3.0  # the absorbed path takes ~20 ms here; any expansion, seconds
MATERIALIZE_MSG = said(
    "absorb_decode ran out of memory on the case built to catch expansion (n_heads={n_heads}, "
    "d_latent={d_latent}, d_nope=d_v={d_nope}, T={T}, under a {cap} MB cap): your code materializes "
    "per-head keys or values of the cached tokens. One head's c_kv @ w_uk[h] is [{T}, {d_nope}] -- "
    "32 GiB in float64 -- while the absorbed path needs only w_uk[h] @ q_nope[h] ([{d_latent}] numbers "
    "per head). Fold W_UK into the query, weight the latents with the softmax, and apply W_UV last.",
    n_heads=TRAP["n_heads"], d_latent=TRAP["d_latent"], d_nope=TRAP["d_nope"], T=TRAP["T"], cap=TRAP_MB)
TOO_SLOW_MSG = said(
    "on the case built to catch expansion (d_nope = d_v = {d_nope}, T = {T}): the absorbed path takes "
    "milliseconds here, while expanding keys or values -- even a few tokens at a time -- is hundreds "
    "of GFLOP. Fold W_UK into the query, weight the latents with the softmax, and apply W_UV last.",
    d_nope=TRAP["d_nope"], T=TRAP["T"])

STATEMENT = r"""
## Problem 8 — decode by the absorbed path

One new token, `n_heads` query heads, and a latent cache of `T` rows (the new token's
row included). Write

```python
absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale) -> out  # [n_heads, d_v]
```

| argument | shape | meaning |
|---|---|---|
| `q_nope` | `[n_heads, d_nope]` | position-free query part, per head |
| `q_rope` | `[n_heads, d_rope]` | rotary query part (already rotated) |
| `c_kv`   | `[T, d_latent]` | the cached latents |
| `k_rope` | `[T, d_rope]` | the cached rotary keys (already rotated), shared by all heads |
| `w_uk`   | `[n_heads, d_latent, d_nope]` | key up-projection |
| `w_uv`   | `[n_heads, d_latent, d_v]` | value up-projection |
| `scale`  | float | softmax scale (use the one given) |

For each head `h`, with `k_t = c_kv[t] @ w_uk[h]` and `v_t = c_kv[t] @ w_uv[h]`:

    out[h] = sum_t softmax_t( scale * (q_nope[h] . k_t + q_rope[h] . k_rope[t]) ) * v_t

**The catch:** compute this *without* building any head's keys `k_t` or values `v_t`
for the cached tokens. Regroup the products instead: fold `w_uk[h]` into the query,
score the query against the latents directly, take the softmax-weighted sum of the
latents, and apply `w_uv[h]` once at the end. One hidden case makes the expanded keys of
a single head 32 GiB and hundreds of GFLOP to compute, while the absorbed path needs a few
MB and milliseconds; it runs under a memory cap and a 3-second deadline, so expanding —
all heads at once, one head at a time, or a few tokens at a time — fails there.

Also: keep the softmax stable, head by head (some scores are ~1e3, in one case one
head's scores sit near +750 while another's sit near -750, and in another a head's scores
run from near -800 to +800 on the last cached token: subtract each head's own maximum);
return a numpy array (a torch tensor is fine too) of shape `[n_heads, d_v]`, also for one
head or one cached token. Inputs are float64; float32 work passes (error at
most 1e-5 of the largest output magnitude).
"""

HINTS = [
    "q_nope[h] . (c_kv[t] @ w_uk[h]) = (w_uk[h] @ q_nope[h]) . c_kv[t]: the product "
    "w_uk[h] @ q_nope[h] has d_latent numbers and does not depend on t.",
    "q_lat = np.einsum('hd,hcd->hc', q_nope, w_uk) is [n_heads, d_latent]; the scores of all "
    "heads are q_lat @ c_kv.T + q_rope @ k_rope.T, shape [n_heads, T].",
    "Stable softmax over the last axis (tokens): subtract each row's max before exp.",
    "sum_t p[h, t] * (c_kv[t] @ w_uv[h]) = (p[h] @ c_kv) @ w_uv[h]: weight the latents "
    "first ([n_heads, d_latent]), then one einsum 'hc,hcd->hd' with w_uv.",
]


def _scores(q_nope, q_rope, c_kv, k_rope, w_uk, scale, rope=True):
    q_lat = np.einsum("hd,hcd->hc", q_nope, w_uk)  # [H, d_latent]
    s = q_lat @ c_kv.T  # [H, T]
    if rope:
        s = s + q_rope @ k_rope.T
    return s * scale


def reference(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    """The math core's absorbed path for one new token: out [n_heads, d_v]."""
    out, _ = attend_absorb(q_nope[None], q_rope[None], c_kv, k_rope, w_uk, w_uv, scale)
    return out[0]


def _inputs(rng, n_heads, d_latent, d_nope, d_rope, d_v, T, scale=None):
    args = dict(
        q_nope=rng.standard_normal((n_heads, d_nope)),
        q_rope=rng.standard_normal((n_heads, d_rope)),
        c_kv=rng.standard_normal((T, d_latent)),
        k_rope=rng.standard_normal((T, d_rope)),
        w_uk=rng.standard_normal((n_heads, d_latent, d_nope)) / math.sqrt(d_latent),
        w_uv=rng.standard_normal((n_heads, d_latent, d_v)) / math.sqrt(d_latent),
    )
    args["scale"] = float(scale if scale is not None else 1.0 / math.sqrt(d_nope + d_rope))
    return args


def _case(name, args, hidden=False, seed=None, no_twin=False, **kw):
    desc = shape_text(**{k: v for k, v in args.items() if k != "scale"})
    desc += f", scale={args['scale']:.4g}"
    return Case(name, "absorb_decode", args, hidden=hidden, seed=seed, describe=desc,
                data={"dims": "[n_heads, d_v]", "no_twin": no_twin}, **kw)


def make_cases(seed: int) -> list[Case]:
    pub = np.random.default_rng(8)
    cases = [
        _case("small: 4 heads, 10 cached tokens, d_v != d_nope",
              _inputs(pub, n_heads=4, d_latent=16, d_nope=8, d_rope=4, d_v=6, T=10)),
        _case("one cached token (T = 1)", _inputs(pub, n_heads=3, d_latent=16, d_nope=8, d_rope=4, d_v=8, T=1)),
        _case("one head", _inputs(pub, n_heads=1, d_latent=12, d_nope=8, d_rope=4, d_v=10, T=7)),
    ]
    rng = np.random.default_rng(seed)
    ri = lambda lo, hi: int(rng.integers(lo, hi + 1))  # noqa: E731
    for k in range(3):
        d_nope = ri(2, 48)
        args = _inputs(rng, n_heads=ri(1, 16), d_latent=ri(4, 96), d_nope=d_nope, d_rope=2 * ri(1, 16),
                       d_v=ri(2, 48), T=ri(1, 300))
        cases.append(_case(f"random shapes #{k}", args, True, seed))
    args = _inputs(rng, n_heads=5, d_latent=24, d_nope=12, d_rope=8, d_v=10, T=40,
                   scale=float(rng.uniform(0.05, 2.0)))
    cases.append(_case("an unusual scale", args, True, seed))
    # scores ~1e3: the rotary part carries a large, well-separated term, so the softmax is
    # nearly one-hot (float32 answers still pass) and a naive exp overflows
    args = _inputs(rng, n_heads=6, d_latent=16, d_nope=8, d_rope=4, d_v=8, T=32)
    big = 1500.0 / args["scale"]
    args["k_rope"][:, 0] = rng.permutation(np.linspace(-1.0, 1.0, 32))
    args["q_rope"][:, 0] = big * rng.choice([-1.0, 1.0], size=6)
    cases.append(_case("large scores (~1e3): is the softmax stable?", args, True, seed, no_twin=True))
    cases.append(_case("long context, T in the thousands",
                       _inputs(rng, n_heads=16, d_latent=64, d_nope=32, d_rope=16, d_v=24, T=ri(2000, 5000)),
                       True, seed, timeout_s=10.0))
    cases.append(_case("one cached token (T = 1)",
                       _inputs(rng, n_heads=ri(2, 6), d_latent=ri(4, 24), d_nope=8, d_rope=4, d_v=ri(2, 12), T=1),
                       True, seed))
    cases.append(_case("one head", _inputs(rng, n_heads=1, d_latent=ri(4, 24), d_nope=6, d_rope=4, d_v=ri(2, 12),
                                           T=ri(2, 40)), True, seed))
    cases.append(_case("heads whose scores differ by hundreds (near +750 and near -750)", _uneven(rng, ri(4, 8)),
                       True, seed, no_twin=True))  # new values would lose the float32-safe one-hot
    cases.append(_case("a head whose scores are hundreds apart, the largest on the last token", _wide(rng, ri(100, 300)),
                       True, seed, no_twin=True))
    t = TRAP
    trap = _inputs(rng, n_heads=t["n_heads"], d_latent=t["d_latent"], d_nope=t["d_nope"],
                   d_rope=t["d_rope"], d_v=t["d_v"], T=t["T"])
    cases.append(_case("expansion trap: huge heads, tiny latents, T = 65536", trap, True, seed,
                       memory_mb=TRAP_MB, memory_error_message=MATERIALIZE_MSG, timeout_s=TRAP_S,
                       timeout_message=TOO_SLOW_MSG))
    return memo_twins(cases, rng, CHANGES, reference={"absorb_decode": reference}, check=check,
                      other_shapes=_other_length)  # the trap stays the last case


def _uneven(rng, T, n_heads=4, gap=30.0):
    """Heads whose scores sit near +850 or -850 (one of each at least), each head's softmax
    nearly one-hot so float32 answers still pass: k_rope[:, 0] = 1 carries the head's
    offset (q_rope[h, 0]), k_rope[:, 1] spreads the tokens `gap` apart (q_rope[h, 1])."""
    args = _inputs(rng, n_heads=n_heads, d_latent=12, d_nope=8, d_rope=4, d_v=6, T=T)
    args["k_rope"][:, 0] = 1.0
    args["k_rope"][:, 1] = rng.permutation(np.arange(T)) - (T - 1) / 2
    args["q_rope"][:, 0] = row_offsets(rng, n_heads, big=850.0) / args["scale"]
    args["q_rope"][:, 1] = gap * rng.choice([-1.0, 1.0], size=n_heads) / args["scale"]
    return args


def _wide(rng, T, n_heads=3):
    """Each head's scores hundreds apart inside its own row, the largest on the LAST cached
    token: k_rope[:, 0] is -1 on every token but the last (+1), q_rope[h, 0] = 800 or 400
    over scale, so a head reads near -A, ..., -A, +A. Every softmax is one-hot on the last
    token (float32 answers pass); a maximum from the first tile of tokens, or each head's
    mean score, overflows exp."""
    args = _inputs(rng, n_heads=n_heads, d_latent=12, d_nope=8, d_rope=4, d_v=6, T=T)
    args["k_rope"][:, 0] = -1.0
    args["k_rope"][-1, 0] = 1.0
    args["q_rope"][:, 0] = np.where(np.arange(n_heads) % 2 == 0, 800.0, 400.0) / args["scale"]
    return args


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = {
    **{k: (lambda a, rng, k=k: new_values(a[k], rng)) for k in ("q_nope", "q_rope", "c_kv", "k_rope", "w_uk", "w_uv")},
    "scale": lambda a, rng: a["scale"] * float(rng.choice([0.5, 2.0])),
}


def _other_length(args, rng):
    """The same query, weights and scale, another number of cached tokens."""
    T = args["c_kv"].shape[0] + int(rng.integers(1, 8))
    return {**args, "c_kv": rng.standard_normal((T, args["c_kv"].shape[1])),
            "k_rope": rng.standard_normal((T, args["k_rope"].shape[1]))}


def check(case: Case, result):
    expected = case.expected if case.expected is not None else reference(**case.args)
    top = float(np.max(np.abs(expected))) if expected.size else 0.0
    return compare_arrays("absorb_decode", expected, result, rtol=1e-5, atol=1e-5 * top,
                          dims=case.data.get("dims"))


MISTAKES = load_mistakes(__file__)


def _row_max(a):
    """Each head's largest score: [n_heads] (not for the trap: too large to score here)."""
    if a["c_kv"].shape[0] >= 10_000:
        return np.zeros(1)
    return _scores(a["q_nope"], a["q_rope"], a["c_kv"], a["k_rope"], a["w_uk"], a["scale"]).max(axis=-1)


def _rows_in_token_order(a):
    """Each head's scores, tokens in order (not for the trap)."""
    if a["c_kv"].shape[0] >= 10_000:
        return []
    return _scores(a["q_nope"], a["q_rope"], a["c_kv"], a["k_rope"], a["w_uk"], a["scale"])


EDGES = [
    Edge("one cached token (T = 1)", lambda a: a["c_kv"].shape[0] == 1, kind="one"),
    Edge("one head", lambda a: a["q_nope"].shape[0] == 1, kind="one"),
    uneven_rows_edge(_row_max),
    wide_row_edge(_rows_in_token_order),
    Edge("scores in the hundreds, above 709", lambda a: a["c_kv"].shape[0] < 10_000 and float(np.max(np.abs(
        _scores(a["q_nope"], a["q_rope"], a["c_kv"], a["k_rope"], a["w_uk"], a["scale"])))) > 750),
    Edge("the memory trap", lambda a: a["c_kv"].shape[0] == TRAP["T"], kind="largest"),
]

PROBLEM = Problem(
    number=8,
    slug="absorb_decode",
    title="Decode by the absorbed path (no expanded K/V)",
    summary="decode from the latent cache only (expanding K/V is rejected)",
    chapter="notebooks/03_two_paths.ipynb",
    functions=["absorb_decode"],
    statement=STATEMENT,
    hints=HINTS,
    make_cases=make_cases,
    check=check,
    mistakes=MISTAKES,
    timeout_s=5.0,
    memory_mb=1536,
    reference={"absorb_decode": reference},
    edges=EDGES,
    normalises_rows=True,
    no_structure={
        "none": "every case has a cached token and a head: the statement allows no empty cache",
        "none first": "one softmax per head over all tokens; no piece comes before another in the contract",
        "order": "tokens are the cache's rows in order; the statement has no ids",
        "limit": "no budget, page or chunk: the memory cap and deadline are the largest edge",
        "ties": "float outputs compared with a tolerance: no ranking or choice to tie",
    },
)
