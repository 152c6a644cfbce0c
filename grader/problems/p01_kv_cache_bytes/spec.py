"""Problem 1: the size of the KV cache for MHA, GQA, MQA and MLA (chapter 1).
Hidden cases draw every shape argument away from its default for each kind of cache, so
an attempt that ignores an argument (and so uses V3's value) fails on every seed."""

from __future__ import annotations

import numpy as np

from grader.spec import (Case, Edge, Problem, another, another_int, changes_of, compare_scalar, load_mistakes,
                         memo_twins)
from mlacourse import cache

FN = "kv_cache_bytes"
DTYPE_OF_BYTES = {1: "fp8", 2: "bf16", 4: "fp32"}
USED_BY = {"mha": ("n_heads", "head_dim"), "gqa": ("n_kv_heads", "head_dim"), "mqa": ("head_dim",),
           "mla": ("d_latent", "d_rope")}

STATEMENT = r"""
## Problem 1 — how many bytes does the KV cache take?

Write

```python
kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
               n_kv_heads=8, d_latent=512, d_rope=64) -> int
```

the bytes one sequence of `n_tokens` tokens keeps in the cache, over **all** `n_layers`
layers, for `kind` one of

* `"mha"` — every one of the `n_heads` heads stores its own key and its own value,
  each `head_dim` numbers;
* `"gqa"` — only `n_kv_heads` key/value heads are stored (groups of query heads share one);
* `"mqa"` — a single key/value head serves every query head;
* `"mla"` — each token stores one compressed latent of `d_latent` numbers plus the
  `d_rope` rotary key numbers shared by all heads (576 for DeepSeek-V3), no matter how
  many heads there are.

Each kind ignores the arguments it does not use, and uses every one it does (the hidden
cases change all of them). `bytes_per_element` is 2 for bf16/fp16, 1 for fp8, 4 for
fp32. Return an exact integer count (a float equal to it passes too). Example:
DeepSeek-V3 (61 layers) caches 576 numbers per token per layer in MLA, so 32768 tokens
in bf16 take 61 · 32768 · 576 · 2 = 2,302,672,896 bytes (2.14 GiB).
"""

HINTS = [
    "Work out the numbers stored per token per layer for each kind first; then multiply "
    "by n_tokens, n_layers and bytes_per_element.",
    "MHA stores K and V for every head: 2 * n_heads * head_dim numbers per token per layer. "
    "GQA replaces n_heads by n_kv_heads; MQA by 1.",
    "MLA stores d_latent + d_rope numbers per token per layer, independent of n_heads.",
]


# ---- the reference ---------------------------------------------------------------

def _elements(kind, n_heads, head_dim, n_kv_heads, d_latent, d_rope):
    table = {
        "mha": lambda: cache.mha_elements(n_heads, head_dim),
        "gqa": lambda: cache.gqa_elements(n_kv_heads, head_dim),
        "mqa": lambda: cache.mqa_elements(head_dim),
        "mla": lambda: cache.mla_elements(d_latent, d_rope),
    }
    return table[kind]()


def reference(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
              n_kv_heads=8, d_latent=512, d_rope=64):
    el = _elements(kind, n_heads, head_dim, n_kv_heads, d_latent, d_rope)
    return cache.cache_bytes(el, n_layers=n_layers, n_tokens=n_tokens,
                             dtype=DTYPE_OF_BYTES[bytes_per_element])


# ---- cases ---------------------------------------------------------------------------

def _case(name, args, hidden=False, seed=None):
    desc = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return Case(name, FN, args, hidden=hidden, seed=seed, describe=desc)


def _away_from_defaults(rng, kind):
    """Every argument drawn so that none equals its default."""
    n_heads = int(rng.choice([16, 32, 40, 64, 96]))
    return dict(kind=kind, n_tokens=int(rng.integers(1, 200_001)), n_layers=int(rng.integers(2, 97)),
                bytes_per_element=int(rng.choice([1, 4])), n_heads=n_heads,
                head_dim=int(rng.choice([64, 80, 96, 192, 256])),
                n_kv_heads=int(rng.choice([1, 2, 4, 16])), d_latent=int(rng.choice([256, 384, 768, 1024])),
                d_rope=int(rng.choice([0, 16, 32, 128])))


def make_cases(seed: int) -> list[Case]:
    v3 = dict(n_tokens=32768, n_layers=61)
    cases = [
        _case("DeepSeek-V3 MLA, 32K tokens, bf16", dict(kind="mla", **v3)),
        _case("MHA with V3's 128 heads of 128, 32K tokens, bf16",
              dict(kind="mha", **v3, n_heads=128, head_dim=128)),
        _case("GQA with 8 KV heads, 32K tokens, bf16", dict(kind="gqa", **v3, n_kv_heads=8)),
        _case("MQA, 32K tokens, bf16", dict(kind="mqa", **v3)),
        _case("MLA in fp8, V2's 60 layers, 4096 tokens",
              dict(kind="mla", n_tokens=4096, n_layers=60, bytes_per_element=1)),
    ]
    rng = np.random.default_rng(seed)
    for kind in ("mha", "gqa", "mqa", "mla"):
        for k in range(2):
            args = _away_from_defaults(rng, kind)
            if kind == "mla" and k == 1:
                args["d_rope"] = 0  # a latent without a rotary part: d_rope 0 is a size like any other
            cases.append(_case(f"random {kind} #{k}", args, True, seed))
    cases.append(_case("one token, one layer (mla)", dict(kind="mla", n_tokens=1, n_layers=1), True, seed))
    cases.append(_case("a total that float32 cannot hold", _beyond_float32(rng), True, seed))
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check)


def _beyond_float32(rng):
    """Arguments whose total is above 2**31 (int32 overflows) and odd enough that the
    nearest float32 is more than half a byte away (float32 keeps 24 bits)."""
    while True:
        args = _away_from_defaults(rng, str(rng.choice(list(USED_BY))))
        args["n_tokens"] = 2 * int(rng.integers(50_000, 100_000)) + 1   # odd
        args["n_layers"] = 2 * int(rng.integers(24, 48)) + 1            # odd
        if _beyond(reference(**args)):
            return args


def _beyond(total):
    return total > 2**31 and abs(float(np.float32(total)) - total) > 0.5


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = changes_of(
    kind=another(USED_BY), n_tokens=another_int(1, 200_000), n_layers=another_int(2, 96),
    bytes_per_element=another([1, 2, 4]), n_heads=another([16, 32, 40, 64, 96]),
    head_dim=another([64, 80, 96, 192, 256]), n_kv_heads=another([1, 2, 4, 16]),
    d_latent=another([256, 384, 768, 1024]), d_rope=another([0, 16, 32, 128]))


def check(case: Case, result):
    expected = reference(**case.args)
    return compare_scalar(f"{FN}(...)", expected, result, rtol=0.0, atol=0.5, unit=" bytes")


MISTAKES = load_mistakes(__file__)

EDGES = [Edge(f"kind {k}", lambda a, k=k: a["kind"] == k) for k in USED_BY] + [
    Edge("fp8 (1 byte) and fp32 (4 bytes)", lambda a: a.get("bytes_per_element", 2) in (1, 4)),
    Edge("one token, one layer", lambda a: a["n_tokens"] == 1 and a["n_layers"] == 1, kind="one"),
    Edge("MLA with d_rope 0 (no rotary part)", lambda a: a["kind"] == "mla" and a.get("d_rope", 64) == 0, kind="none"),
    Edge("a total above 2**31 that float32 cannot hold exactly", lambda a: _beyond(reference(**a)), kind="largest"),
]

PROBLEM = Problem(
    number=1, slug="kv_cache_bytes", title="How big is the KV cache? MHA, GQA, MQA, MLA",
    summary="cache bytes for MHA/GQA/MQA/MLA",
    chapter="notebooks/01_kv_cache.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    timeout_s=5.0, memory_mb=512,
    reference={FN: reference}, edges=EDGES,
    no_structure={
        "none first": "one formula per kind: nothing is walked in pieces",
        "order": "no ids, positions or lists: the arguments are counts",
        "spread": "no scores or softmax: an integer product",
        "limit": "no budget, page or top-k; the int32/float32 limits of the total are the largest edge",
        "ties": "no ranking or choice: one exact integer",
    },
)
