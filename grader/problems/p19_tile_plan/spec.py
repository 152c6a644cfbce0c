"""Problem 19: the tile plan of a causal prefill with a prefix offset -- which KV tiles each
query block loads whole, loads masked or never loads (chapter 9)."""
from __future__ import annotations

import numpy as np

from grader.lang import said
from grader.spec import (Case, Edge, PASS, Problem, Verdict, another, as_array, changes_of, compare_arrays, fail,
                         load_mistakes, memo_twins)
from mlacourse.prefill import tile_classes

FN = "tile_plan"
LONGEST = 131_072   # the most keys a case has: a 128K context

STATEMENT = r"""
Write `tile_plan(n_q, n_k, block_m, block_n, causal=True)`: the plan version 2 of chapter 9's
prefill kernel follows for one sequence and one head -- for each block of `block_m` queries,
which tiles of `block_n` keys it loads, and whether it must mask them.

| argument | meaning |
|---|---|
| `n_q` | int >= 0: the sequence's new tokens (its queries) |
| `n_k` | int >= 0: its keys, the cached prefix and the new tokens (up to 131,072) |
| `block_m`, `block_n` | ints >= 1: queries per block, keys per KV tile (not always equal, not always powers of two) |
| `causal` | bool: causal (the default) or not |

**The mask is bottom-right aligned** (an extend): query `j` sits at position `n_k - n_q + j`, so
it sees keys `0 .. n_k - n_q + j` -- that is `n_k - n_q + 1 + j` keys, clipped to `0 .. n_k`. A
fresh prompt has `n_k = n_q`; with `n_q > n_k` the first queries see no key at all. Not causal:
every query sees all `n_k` keys.

Query block `b` holds queries `b*block_m ..`, KV tile `t` holds key positions
`t*block_n .. t*block_n + block_n - 1`; the last block and the last tile may run past `n_q` and
`n_k` (rows or key positions that do not exist). Return an integer array
`[ceil(n_q / block_m), ceil(n_k / block_n)]` (0 rows when `n_q = 0`, 0 columns when `n_k = 0`)
whose entry `[b, t]` is

- `0` -- **skipped**: no query of the block sees any key of the tile (never loaded);
- `2` -- **whole**: every query of the block sees all `block_n` key positions of the tile (loaded
  without a mask; a tile that runs past the last key is never whole);
- `1` -- **masked**: anything else (loaded with a mask: the tile crosses the diagonal or the end
  of the keys).

Only the block's real queries count: rows past `n_q` are padding, which the kernel masks out.
The judge sends only valid arguments; your function need not check them. Checked exactly
against `mlacourse.prefill.tile_classes` (0, 1, 2 = `SKIPPED`, `MASKED`, `FULL`). The hidden
cases include `n_q = 0` and `n_q = 1`, more queries than keys, fresh prompts and long extends,
lengths one off a block or tile boundary, tiles larger than the sequence, `1 x 1` tiles,
`block_m` other than `block_n` both ways, and plans that are not causal.
"""

HINTS = [
    "Work one query block at a time. Its first query sees the fewest keys (call it lo) and its "
    "last real query the most (hi): every query of the block sees between lo and hi keys.",
    "lo = n_k - n_q + 1 + m0 for the block starting at query m0, and hi = n_k - n_q + "
    "min(m0 + block_m, n_q); clip both to 0 .. n_k. Not causal: lo = hi = n_k.",
    "Tile t is whole when it ends at or before lo ((t + 1) * block_n <= lo), skipped when it starts "
    "at or after hi (t * block_n >= hi), masked otherwise.",
    "With n_q > n_k, lo is negative before you clip it -- and a negative bound used as a slice "
    "(out[b, :lo // block_n]) counts from the END of the row.",
]


def reference(n_q, n_k, block_m, block_n, causal=True):
    return tile_classes(n_q, n_k, block_m, block_n, causal)   # int64 [query blocks, KV tiles]


# ---- cases -----------------------------------------------------------------------------------

def _args(n_q, n_k, block_m, block_n, causal=True):
    return {"n_q": int(n_q), "n_k": int(n_k), "block_m": int(block_m), "block_n": int(block_n),
            "causal": bool(causal)}


def _describe(a):
    mode = "causal" if a.get("causal", True) else "not causal"
    return (f"n_q {a['n_q']}, n_k {a['n_k']}, block_m {a['block_m']}, block_n {a['block_n']}, {mode}: "
            f"a plan of {-(-a['n_q'] // a['block_m'])} x {-(-a['n_k'] // a['block_n'])} tiles")


def _case(name, args, hidden=False, seed=None):
    return Case(name, FN, args, hidden=hidden, seed=seed, describe=_describe(args))


TILES = [(64, 128), (128, 64), (16, 64), (64, 64), (128, 128), (32, 16), (48, 80)]   # block_m x block_n


def make_cases(seed):
    cases = [
        _case("the chapter's extend: 192 new tokens after 320 cached, 64 x 32 tiles",
              {"n_q": 192, "n_k": 512, "block_m": 64, "block_n": 32}),
        _case("a fresh prompt of 300 tokens, 128 x 64 tiles", _args(300, 300, 128, 64)),
        _case("more queries than keys: 100 queries, 40 keys, 32 x 32 tiles", _args(100, 40, 32, 32)),
        _case("not causal: 70 queries, 200 keys, 64 x 64 tiles", _args(70, 200, 64, 64, causal=False)),
    ]
    rng = np.random.default_rng(seed)

    def draw(lo, hi):
        return int(rng.integers(lo, hi))

    def tiles():
        return TILES[draw(0, len(TILES))]

    hidden = []

    def add(name, args):
        hidden.append((name, args))

    bm = int(rng.choice([16, 32, 64]))
    n = bm * draw(3, 9) + int(rng.choice([-1, 1]))
    add("a fresh prompt (n_k = n_q), square tiles, one off a block boundary", _args(n, n, bm, bm))
    n = 64 * draw(3, 8) + draw(1, 64)
    add("a fresh prompt, 64 x 128 tiles, a last query block with whole tiles", _args(n, n, 64, 128))
    n_q = draw(130, 400)
    add("an extend after a long prefix, 128 x 64 tiles", _args(n_q, n_q + draw(2000, 9000), 128, 64))
    add("a 128K context, 16 x 64 tiles", _args(draw(17, 48), LONGEST - draw(0, 50), 16, 64))
    bm, bn = tiles()
    n_k = draw(bn + 1, 4 * bn)
    add("more queries than keys: the first query blocks see no key",
        _args(n_k + draw(bm + bn, bm + 2 * bn), n_k, bm, bn))   # block 0 ends a tile before the keys
    bm, bn = tiles()
    add("no keys at all (n_k = 0)", _args(draw(1, 4 * bm), 0, bm, bn))
    bm, bn = tiles()
    add("no queries (n_q = 0)", _args(0, draw(1, 5 * bn), bm, bn))
    bm, bn = tiles()
    add("one query (n_q = 1) after a prefix that ends inside a tile",
        _args(1, bn * draw(1, 6) + draw(1, bn), bm, bn))
    n_q = draw(3, 13)
    add("1 x 1 tiles", _args(n_q, n_q + draw(0, 10), 1, 1))
    n_q = draw(3, 13)
    add("one query per block (block_m 1), keys ending inside a tile", _args(n_q, n_q + 16 * draw(0, 3) + draw(1, 16), 1, 16))
    bm, bn = tiles()
    add("not causal, a partial last KV tile",
        _args(draw(2 * bm + 1, 4 * bm), bn * draw(1, 5) + draw(1, bn), bm, bn, causal=False))
    bm, bn = tiles()
    add("not causal, whole KV tiles only", _args(draw(1, 3 * bm), bn * draw(1, 5), bm, bn, causal=False))
    bm, bn = (16, 64) if rng.random() < 0.5 else (128, 64)
    n_q = draw(2 * bm, 5 * bm)
    add("a prefix one key short of a tile (n_k - n_q + 1 a multiple of block_n)",
        _args(n_q, n_q + bn * draw(1, 4) - 1, bm, bn))
    bm, bn = (64, 64) if rng.random() < 0.5 else (128, 64)
    n_q = draw(2 * bm, 4 * bm)
    add("a prefix one key past a tile (n_k - n_q - 1 a multiple of block_n)",
        _args(n_q, n_q + bn * draw(0, 4) + 1, bm, bn))
    n_q = draw(5, 60)
    add("tiles larger than the sequence", _args(n_q, n_q + draw(1, 60), 128, 128))
    k = draw(2, 6)
    add("lengths one past a block and a tile", _args(64 * k + 1, 128 * (k + 1) + 1, 64, 128))
    add("lengths one short of a block and a tile", _args(64 * k - 1, 128 * (k + 1) - 1, 64, 128))
    order = [int(i) for i in rng.permutation(len(hidden))]
    cases += [_case(name, args, hidden=True, seed=seed) for name, args in (hidden[i] for i in order)]
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check)


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = changes_of(
    n_q=lambda n, rng: n + int(rng.integers(1, 40)),
    n_k=lambda n, rng: n + int(rng.integers(1, 40)),
    block_m=lambda b, rng: b * 2,
    block_n=lambda b, rng: b * 2,
    causal=another([True, False]),
)


def check(case, result):
    expected = reference(**case.args)
    arr = as_array(result, FN)
    if isinstance(arr, Verdict):
        return arr
    raw = np.asarray(result)
    if raw.shape != expected.shape:
        return compare_arrays(FN, expected, arr, rtol=0.0, atol=0.0, dims="[query blocks, KV tiles]")
    if raw.dtype.kind not in "iu":
        return fail(said("{fn} returned {dtype} values; the plan holds integers 0, 1 and 2 (np.int64 or "
                         "another integer dtype).", fn=FN, dtype=str(raw.dtype)), "wrong_type")
    wrong = np.argwhere(raw != expected)
    if not len(wrong):
        return PASS
    b, t = (int(x) for x in wrong[0])
    a = case.args
    rows = f"{b * a['block_m']} .. {min((b + 1) * a['block_m'], a['n_q']) - 1}"
    keys = f"{t * a['block_n']} .. {(t + 1) * a['block_n'] - 1}"
    return fail(said("{fn}: {n} of {size} entries differ. The first: query block {b} (queries {rows}) and "
                     "KV tile {t} (key positions {keys}) must be {want}; you returned {got}.",
                     fn=FN, n=len(wrong), size=expected.size, b=b, rows=rows, t=t, keys=keys,
                     want=_class_name(int(expected[b, t])), got=_class_name(int(raw[b, t]))))


def _class_name(value):
    """An entry of the plan in words (a value outside 0, 1, 2 as it is)."""
    names = {0: said("0 (skipped)"), 1: said("1 (masked)"), 2: said("2 (whole)")}
    return names.get(value, str(value))


MISTAKES = load_mistakes(__file__)


def _visible(a):
    """Keys each query sees [n_q] (the statement's rule, for the edges)."""
    n_q, n_k = a["n_q"], a["n_k"]
    if not a.get("causal", True):
        return np.full(n_q, n_k)
    return np.clip(n_k - n_q + 1 + np.arange(n_q), 0, n_k)


def _first_block_sees_nothing(a):
    return a["n_q"] > 0 and a["n_k"] > 0 and a.get("causal", True) and int(_visible(a)[:a["block_m"]].max()) == 0


def _block_a_tile_before_the_keys(a):
    """The first query block ends one tile before the first key, in a plan of two tiles or more:
    both unclipped bounds are negative, and a slice by them (plan[0, :-1]) reaches real tiles."""
    n_q, n_k, bm, bn = a["n_q"], a["n_k"], a["block_m"], a["block_n"]
    hi = n_k - n_q + min(bm, n_q)   # the keys its last query would see, unclipped
    return a.get("causal", True) and n_q > 0 and n_k > bn and -2 * bn < hi <= -bn


def _last_block_partial_with_whole_tiles(a):
    n_q, bm, bn = a["n_q"], a["block_m"], a["block_n"]
    if n_q == 0 or n_q % bm == 0:
        return False
    return int(_visible(a)[(n_q - 1) // bm * bm]) >= bn


def _offset_mod(a, r):
    return a.get("causal", True) and a["n_q"] > 0 and a["n_k"] > a["n_q"] and (a["n_k"] - a["n_q"]) % a["block_n"] == r


def _partial_tile_seen_whole_by_a_block(a):
    """A query block whose first query sees every key, with a partial last tile."""
    n_q, n_k, bm, bn = a["n_q"], a["n_k"], a["block_m"], a["block_n"]
    return n_q > 0 and n_k % bn != 0 and bool((_visible(a)[::bm] == n_k).any())


EDGES = [
    Edge("n_q = 0 (no query blocks)", lambda a: a["n_q"] == 0, kind="none"),
    Edge("n_k = 0 (no KV tiles)", lambda a: a["n_k"] == 0 and a["n_q"] > 0, kind="none"),
    Edge("n_q = 1", lambda a: a["n_q"] == 1 and a["n_k"] > 0, kind="one"),
    Edge("1 x 1 tiles", lambda a: a["block_m"] == 1 and a["block_n"] == 1 and a["n_q"] > 1, kind="one"),
    Edge("a first query block that sees no key (n_q > n_k)", _first_block_sees_nothing, kind="none first"),
    Edge("a first query block that ends a tile before the first key (negative bounds)", _block_a_tile_before_the_keys),
    Edge("a fresh prompt (n_k = n_q)", lambda a: a["n_q"] == a["n_k"] > 0 and a.get("causal", True)),
    Edge("a long extend (n_k >= 10 n_q)", lambda a: a["n_q"] > 0 and a["n_k"] >= 10 * a["n_q"]
         and a.get("causal", True)),
    Edge("block_m > block_n", lambda a: a["block_m"] > a["block_n"] and a["n_q"] > a["block_m"]),
    Edge("block_m < block_n", lambda a: a["block_m"] < a["block_n"] and a["n_q"] > a["block_m"]),
    Edge("tiles larger than the sequence", lambda a: 1 < a["n_q"] < a["block_m"] and 0 < a["n_k"] < a["block_n"],
         kind="limit"),
    Edge("n_q one past a block", lambda a: a["n_q"] > a["block_m"] and a["n_q"] % a["block_m"] == 1, kind="limit"),
    Edge("n_q one short of a block", lambda a: a["n_q"] > a["block_m"] and a["n_q"] % a["block_m"] == a["block_m"] - 1,
         kind="limit"),
    Edge("n_k one past a tile", lambda a: a["n_k"] > a["block_n"] > 1 and a["n_k"] % a["block_n"] == 1, kind="limit"),
    Edge("n_k one short of a tile", lambda a: a["n_k"] > a["block_n"] > 1 and a["n_k"] % a["block_n"] == a["block_n"] - 1,
         kind="limit"),
    Edge("a prefix one key short of a tile", lambda a: _offset_mod(a, a["block_n"] - 1)),
    Edge("a prefix one key past a tile, block_m a multiple of block_n",
         lambda a: _offset_mod(a, 1) and a["block_m"] % a["block_n"] == 0 and a["n_q"] >= a["block_m"]),
    Edge("a partial last query block with whole tiles", _last_block_partial_with_whole_tiles),
    Edge("a partial last KV tile that a block's first query sees whole", _partial_tile_seen_whole_by_a_block),
    Edge("not causal, a partial last KV tile", lambda a: not a.get("causal", True) and a["n_q"] > a["block_m"]
         and a["n_k"] % a["block_n"] != 0),
    Edge("not causal, whole tiles only", lambda a: not a.get("causal", True) and a["n_q"] > 0
         and a["n_k"] > 0 and a["n_k"] % a["block_n"] == 0),
    Edge("a 128K context", lambda a: a["n_k"] > LONGEST - 100, kind="largest"),
]

PROBLEM = Problem(
    number=19, slug="tile_plan", title="The tile plan of a causal prefill with a prefix offset",
    summary="which KV tiles each query block of a causal prefill loads whole, loads masked or skips",
    chapter="notebooks/09_prefill_kernel.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: reference}, edges=EDGES,
    no_structure={
        "order": "the arguments are four sizes and a flag: nothing arrives in an order",
        "spread": "no scores: the plan is made of integer bounds, compared exactly",
        "ties": "no ranking: every entry is decided by integer comparisons, compared exactly",
    },
)
