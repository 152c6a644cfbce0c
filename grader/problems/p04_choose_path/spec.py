"""Problem 4: count the FLOPs of the expand and absorb paths and pick the cheaper one."""
from __future__ import annotations

import numpy as np

from mlacourse import flops
from grader.spec import (Case, Edge, Problem, another_int, compare_choice, compare_dict, compare_scalar,
                         load_mistakes, memo_twins)

STATEMENT = r"""
## Problem 4 — expand or absorb? Count the FLOPs and choose

`n_new` new tokens are the **last** `n_new` of the `n_ctx` tokens being attended
(`1 <= n_new <= n_ctx`; decode is `n_new = 1`, prefill is `n_new = n_ctx`). Each new
token attends to itself and to every token before it, so the number of
(query, key) pairs is the sum over the new tokens of how many tokens each one sees.

Write two functions (defaults are DeepSeek-V3's shapes):

```python
attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512)
    -> {"expand": E, "absorb": A}
choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512)
    -> "expand" or "absorb"
```

Count **2 FLOPs per multiply-add**, and count only the work that differs between the
paths (chapter 4 derives each term):

* **expand** up-projects *every one of the `n_ctx` cached latents* into each head's
  key part (`d_nope`) and value (`d_v`) — a `d_latent`-long dot product per output
  number. Then each pair costs a query·key dot product over `d_nope + d_rope` and a
  weighted sum of a `d_v`-wide value, in every head.
* **absorb** folds the key up-projection into *each new token's* query (`d_nope` →
  `d_latent` per head) and applies the value up-projection to *each new token's*
  latent output (`d_latent` → `d_v` per head). Then each pair costs a dot product
  over `d_latent + d_rope` and a weighted sum of a `d_latent`-wide row, in every head.

`choose_path` returns the path with fewer FLOPs; on an exact tie it returns
`"absorb"` (it also reads less memory).

Checked: both counts (ints or floats, relative tolerance 1e-9) and the choice, on
decode, prefill, extend-after-prefix, random shapes on both sides of the crossover
(about 171 new tokens for V3 shapes) and exact ties. Example: decode with an 8192-token
context costs about 275.5 GFLOPs expanded and 2.3 GFLOPs absorbed.
"""

HINTS = [
    "Write the number of (query, key) pairs first. Prefill of n tokens has n(n+1)/2 pairs; "
    "decode has n_ctx. Your formula must give both.",
    "pairs = n_new * n_ctx - n_new * (n_new - 1) / 2: the first new token sees "
    "n_ctx - n_new + 1 tokens, the last sees n_ctx.",
    "Each path = (a fixed cost per token) + pairs * (a cost per pair). For expand the "
    "per-token cost is paid for all n_ctx cached tokens; for absorb only for the n_new "
    "new queries.",
    "Per pair and head: expand does 2*(d_nope + d_rope) FLOPs for the score and 2*d_v for "
    "the value sum; absorb does 2*(d_latent + d_rope) and 2*d_latent.",
]


def _describe(args, seed=None):
    shapes = {k: v for k, v in args.items() if k not in ("n_new", "n_ctx")}
    s = f"n_new={args['n_new']}, n_ctx={args['n_ctx']}"
    s += ", " + ", ".join(f"{k}={v}" for k, v in shapes.items()) if shapes else ", V3 shapes (defaults)"
    return s


def make_cases(seed: int) -> list[Case]:
    cases = []

    def add(name, args, hidden=False, seed_=None):
        for fn in ("attention_flops", "choose_path"):
            cases.append(Case(f"{name} [{fn}]", fn, dict(args), hidden=hidden, seed=seed_,
                              describe=_describe(args, seed_)))

    add("decode, 8K context", dict(n_new=1, n_ctx=8192))
    add("prefill 8K tokens", dict(n_new=8192, n_ctx=8192))
    add("extend: 64 new after a 32K prefix", dict(n_new=64, n_ctx=32768 + 64))
    add("extend: 512 new after a 32K prefix", dict(n_new=512, n_ctx=32768 + 512))

    rng = np.random.default_rng(seed)
    ri = lambda lo, hi: int(rng.integers(lo, hi + 1))  # noqa: E731
    for k in range(3):  # V3 shapes, long prefix, both sides of the ~171 crossover
        prefix = ri(16_000, 200_000)
        below, above = ri(2, 150), ri(200, 2000)
        add(f"V3 extend below crossover #{k}", dict(n_new=below, n_ctx=prefix + below), True, seed)
        add(f"V3 extend above crossover #{k}", dict(n_new=above, n_ctx=prefix + above), True, seed)
    def away(lo, hi, default):  # a value in [lo, hi] other than the default
        v = ri(lo, hi - 1)
        return v + 1 if v >= default else v

    for k in range(3):  # every shape moved off its default: hard-coding V3 fails here
        shapes = dict(n_heads=away(1, 64, 128), d_nope=away(8, 256, 128), d_rope=2 * away(0, 64, 32),
                      d_v=away(8, 256, 128), d_latent=away(16, 1024, 512))
        n_ctx = ri(1, 50_000)
        add(f"random shapes #{k}", dict(n_new=ri(1, n_ctx), n_ctx=n_ctx, **shapes), True, seed)
    n = ri(1, 20_000)
    add("prefill, random length", dict(n_new=n, n_ctx=n), True, seed)
    add("decode, random context", dict(n_new=1, n_ctx=ri(100_000, 1_000_000)), True, seed)
    add("decode, context of 1", dict(n_new=1, n_ctx=1), True, seed)
    n = ri(1, 5000)
    add("exact tie (d_latent = d_nope = d_v)",
        dict(n_new=n, n_ctx=n, n_heads=ri(1, 128), d_nope=128, d_rope=64, d_v=128, d_latent=128),
        True, seed)
    add("exact tie, d_rope 0",
        dict(n_new=7, n_ctx=7, n_heads=2, d_nope=64, d_rope=0, d_v=64, d_latent=64), True, seed)
    return memo_twins(cases, rng, CHANGES, reference=REFERENCE, check=check)


def _other_context(args, rng):
    """Another n_ctx >= n_new: the prefill, or a shorter or longer prefix."""
    n_new, n_ctx = args["n_new"], args["n_ctx"]
    options = [v for v in {n_new, 2 * n_new, n_ctx * 2, max(n_new, n_ctx // 2)} if v != n_ctx]
    return int(rng.choice(options))


def _changed(name, pick):
    return lambda a, rng: pick(a[name], rng)


def _halved_or_doubled(lo, hi):
    """Half or twice the value (within [lo, hi]), else any other: big moves, so that the
    cheaper path flips for some case (from an exact tie, halving d_v or d_nope does)."""
    def pick(v, rng):
        options = [x for x in {max(lo, v // 2), min(hi, 2 * v)} if x != v]
        return int(rng.choice(options)) if options and rng.random() < 0.8 else another_int(lo, hi)(v, rng)
    return pick


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = {
    "n_new": lambda a, rng: another_int(1, a["n_ctx"])(a["n_new"], rng),
    "n_ctx": _other_context,
    "n_heads": _changed("n_heads", another_int(1, 128)),
    "d_nope": _changed("d_nope", _halved_or_doubled(8, 256)),
    "d_rope": lambda a, rng: 2 * another_int(0, 64)(a["d_rope"] // 2, rng),
    "d_v": _changed("d_v", _halved_or_doubled(8, 256)),
    "d_latent": _changed("d_latent", _halved_or_doubled(16, 1024)),
}


def check(case: Case, result):
    expected = flops.attention_flops(**case.args)
    if case.function == "attention_flops":
        return compare_dict("attention_flops(...)", expected, result,
                            lambda label, e, g: compare_scalar(label, e, g, rtol=1e-9, unit=" FLOPs"))
    return compare_choice("choose_path(...)", flops.choose_path(**case.args), result,
                          ("expand", "absorb"))


MISTAKES = load_mistakes(__file__)

def _dense_attention_flops(n_new, n_ctx, n_heads=flops._H, d_nope=flops._DN, d_rope=flops._DR, d_v=flops._DV,
                           d_latent=flops._DC):
    """The problem's contract: dense attention (mlacourse's function also takes topk)."""
    return flops.attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)


def _dense_choose_path(n_new, n_ctx, n_heads=flops._H, d_nope=flops._DN, d_rope=flops._DR, d_v=flops._DV,
                       d_latent=flops._DC):
    return flops.choose_path(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)


REFERENCE = {"attention_flops": _dense_attention_flops, "choose_path": _dense_choose_path}


def _cheaper(args):
    f = flops.attention_flops(**args)
    return "tie" if f["expand"] == f["absorb"] else min(f, key=f.get)


EDGES = [
    Edge("decode (n_new = 1)", lambda a: a["n_new"] == 1, kind="one"),
    Edge("a context of one token", lambda a: a["n_ctx"] == 1, kind="one"),
    Edge("prefill (n_new = n_ctx)", lambda a: a["n_new"] == a["n_ctx"] > 1, kind="limit"),
    Edge("an extend after a prefix (1 < n_new < n_ctx)", lambda a: 1 < a["n_new"] < a["n_ctx"]),
    Edge("expand is cheaper", lambda a: _cheaper(a) == "expand"),
    Edge("absorb is cheaper", lambda a: _cheaper(a) == "absorb"),
    Edge("an exact tie", lambda a: _cheaper(a) == "tie", kind="ties"),
    Edge("d_rope 0 (no rotary part)", lambda a: a.get("d_rope", 64) == 0, kind="none"),
    Edge("a context of 100,000 tokens or more", lambda a: a["n_ctx"] >= 100_000, kind="largest"),
]

PROBLEM = Problem(
    number=4,
    slug="choose_path",
    title="Expand or absorb? Count the FLOPs and choose",
    summary="count both paths' FLOPs and pick the cheaper",
    chapter="notebooks/04_flops_and_path_choice.ipynb",
    functions=["attention_flops", "choose_path"],
    statement=STATEMENT,
    hints=HINTS,
    make_cases=make_cases,
    check=check,
    mistakes=MISTAKES,
    timeout_s=5.0,
    memory_mb=512,
    reference=REFERENCE, edges=EDGES,
    no_structure={
        "none first": "closed-form counts: nothing is walked in pieces",
        "order": "no ids, positions or lists: the arguments are sizes",
        "spread": "no scores or softmax: integer FLOP counts",
    },
    no_twin={"choose_path.n_heads": "both counts are proportional to n_heads, so the cheaper path "
                                    "never depends on it",
             "choose_path.d_rope": "d_rope adds the same FLOPs per pair to both paths, so the cheaper "
                                   "path never depends on it"},
)
