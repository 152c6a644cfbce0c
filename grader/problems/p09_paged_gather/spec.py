"""Problem 9: read one sequence back out of a paged KV cache (chapter 6)."""
from __future__ import annotations

import numpy as np

from grader.lang import said
from grader.spec import (Case, Edge, Problem, Reason, Verdict, as_array, compare_arrays, fail, load_mistakes,
                         memo_twins, new_values)
from mlacourse.paged import gather_paged, make_paged_cache

FN = "paged_gather"
BAD = 2**31 - 1  # an unused block-table entry: far outside kv_cache

STATEMENT = r"""
Write `paged_gather(kv_cache, block_table, cache_seqlens, seq)`: the cached rows of one
sequence, read back out of a **paged** cache in FlashMLA's layout.

| argument | shape | meaning |
|---|---|---|
| `kv_cache` | `[num_blocks, page_block_size, h_kv, d]` | the pages, shared by all sequences |
| `block_table` | `[b, max_blocks]` int32 | `block_table[s, j]`: the page holding tokens `j*P .. j*P+P-1` of sequence `s` |
| `cache_seqlens` | `[b]` int32 | number of valid tokens of each sequence |
| `seq` | int | which sequence to read |

Token `t` of sequence `s` lives at `kv_cache[block_table[s, t // P], t % P]` with
`P = page_block_size`. Return its rows in order: `[cache_seqlens[seq], h_kv, d]`
(`[0, h_kv, d]` for an empty sequence).

The cases are built like FlashMLA's tests: pages are shuffled, every slot nobody owns is
**NaN**, and block-table entries past a sequence's last page are unused -- they hold
2147483647 (indexing with it raises IndexError) or the id of an all-NaN page. Read only
the `ceil(n / P)` entries and the `n` slots you need. Hidden cases include an empty
sequence, one ending exactly at a page boundary, and `h_kv = 1` (keep that axis). Checked
against `mlacourse.paged.gather_paged`, exactly (it is a copy).
"""

HINTS = [
    "How many pages does a sequence of n tokens use? Careful with a partly filled last page "
    "and with n == 0.",
    "n_pages = -(-n // P) (ceiling division). Loop j over range(n_pages) and collect "
    "kv_cache[block_table[seq, j]] -- a [P, h_kv, d] page each.",
    "np.concatenate the pages along axis 0 and cut to the first n rows. For n == 0 return "
    "kv_cache[:0, 0] (shape [0, h_kv, d]).",
    "Vectorised alternative: t = np.arange(n); kv_cache[block_table[seq, t // P], t % P].",
]


def reference(kv_cache, block_table, cache_seqlens, seq):
    return gather_paged(kv_cache, block_table, cache_seqlens, seq)


def _build(rng, lengths, page, h_kv, d, extra_cols, pad_with_nan_page=False):
    """A NaN-poisoned paged cache holding len(lengths) sequences; the block table gets
    extra_cols unused columns. Unused entries are out of range, or (pad_with_nan_page)
    the id of a spare page that is all NaN."""
    seqs = [rng.standard_normal((n, h_kv, d)) for n in lengths]
    kv_cache, table, seqlens = make_paged_cache(seqs, page, rng, extra_blocks=2,
                                                bad_table_entry=BAD)
    table = np.concatenate([table, np.full((len(lengths), extra_cols), BAD)], axis=1)
    if pad_with_nan_page:
        used = set(table[table != BAD].tolist())
        spare = next(b for b in range(kv_cache.shape[0]) if b not in used)  # all NaN
        table = np.where(table == BAD, spare, table)
    return kv_cache, table.astype(np.int32), seqlens.astype(np.int32)


def _case(name, rng, lengths, seq, page, h_kv=1, d=4, extra_cols=1, nan_page=False,
          hidden=False, seed=None):
    kv_cache, table, seqlens = _build(rng, lengths, page, h_kv, d, extra_cols, nan_page)
    args = {"kv_cache": kv_cache, "block_table": table, "cache_seqlens": seqlens, "seq": int(seq)}
    unused = "a spare all-NaN page" if nan_page else f"{BAD} (out of range)"
    describe = (f"kv_cache [{', '.join(map(str, kv_cache.shape))}] (page_block_size {page}), "
                f"cache_seqlens {seqlens.tolist()}, seq {seq}, unused table entries = {unused}")
    return Case(name, FN, args, hidden=hidden, seed=seed,
                describe=describe)


def make_cases(seed):
    fixed = np.random.default_rng(9)
    cases = [
        _case("10 tokens on pages of 4 (the last page half full)", fixed, [10, 5], 0, 4),
        _case("exactly two full pages", fixed, [3, 8], 1, 4),
        _case("unused entries point at an all-NaN page", fixed, [6, 13, 2], 2, 4, d=3,
              nan_page=True),
        _case("an empty sequence", fixed, [7, 0], 1, 4),
    ]
    rng = np.random.default_rng(seed)
    for i in range(5):
        page = int(rng.choice([2, 4, 8, 16]))
        b = int(rng.integers(2 if i == 3 else 1, 5))
        lengths = [int(rng.integers(0, 6 * page)) for _ in range(b)]
        seq = b - 1 if i == 3 else int(rng.integers(0, b))  # random 3: the last of several sequences
        if i == 0:
            lengths[seq] = page * int(rng.integers(2, 4))  # ends exactly at a page boundary
        if i == 1:
            lengths[seq] = 0                               # an empty sequence
        h_kv = {2: 1, 3: 2}.get(i, int(rng.integers(1, 3)))
        cases.append(_case(f"random {i}", rng, lengths, seq, page, h_kv=h_kv,
                           d=int(rng.integers(1, 7)), extra_cols=int(rng.integers(i % 2, 3)),
                           nan_page=bool(i % 2), hidden=True, seed=seed))
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check,
                      other_shapes=_other_cache)


def _swap_full_pages(args, rng):
    """The sequence's block-table row with two of its full pages swapped (still valid:
    a full page holds only this sequence's tokens, wherever it is listed)."""
    seq, page = args["seq"], args["kv_cache"].shape[1]
    full = int(args["cache_seqlens"][seq]) // page
    if full < 2:
        return None
    i, j = rng.choice(full, size=2, replace=False)
    table = args["block_table"].copy()
    table[seq, [i, j]] = table[seq, [j, i]]
    return table


def _shorter(args, rng):
    """cache_seqlens with the sequence one or more tokens shorter."""
    n = int(args["cache_seqlens"][args["seq"]])
    if n < 2:
        return None
    lens = args["cache_seqlens"].copy()
    lens[args["seq"]] = int(rng.integers(1, n))
    return lens


def _other_seq(args, rng):
    b = args["block_table"].shape[0]
    return None if b < 2 else int((args["seq"] + rng.integers(1, b)) % b)


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = {"kv_cache": lambda a, rng: new_values(a["kv_cache"], rng), "block_table": _swap_full_pages,
           "cache_seqlens": _shorter, "seq": _other_seq}


def _other_cache(args, rng):
    """Another cache (other lengths) with the same seq, page size, h_kv and d."""
    num_blocks, page, h_kv, d = args["kv_cache"].shape
    lengths = [int(rng.integers(1, 6 * page)) for _ in range(args["block_table"].shape[0])]
    kv_cache, table, seqlens = _build(rng, lengths, page, h_kv, d, 1)
    return {**args, "kv_cache": kv_cache, "block_table": table, "cache_seqlens": seqlens}


def check(case, result):
    a = case.args
    expected = reference(**a)
    n, page = expected.shape[0], a["kv_cache"].shape[1]
    arr = as_array(result, FN)
    if isinstance(arr, Verdict):
        return arr
    if arr.shape != expected.shape:
        why = ""
        if arr.ndim == 3 and arr.shape[1:] == expected.shape[1:]:
            if arr.shape[0] > n:
                why = said(" That is {extra} rows past cache_seqlens[seq] = {n}: the slots after the "
                           "sequence's last token are unused; keep the first {n} rows only.",
                           extra=arr.shape[0] - n, n=n)
            else:
                why = said(" {missing} of its rows are missing: {n} tokens on pages of {page} span "
                           "ceil({n} / {page}) = {pages} pages, the last one possibly partly filled.",
                           missing=n - arr.shape[0], n=n, page=page, pages=-(-n // page))
        return fail(said("{fn} returned shape {shape}, expected [cache_seqlens[seq], h_kv, d] = {want}.{why}",
                         fn=FN, shape=str(tuple(arr.shape)), want=str(tuple(expected.shape)), why=why),
                    Reason.WRONG_SHAPE)
    nan_rows = np.flatnonzero(np.isnan(arr).reshape(n, -1).any(axis=1)) if n else []
    if len(nan_rows):
        return fail(said("{fn}: row {row} of your result is NaN ({n} NaN rows). The cache holds NaN "
                         "exactly where a reader must not look: slots past cache_seqlens, pages outside "
                         "this sequence's block table, and the pages that unused table entries point to. "
                         "Token t lives at kv_cache[block_table[seq, t // page_block_size], t % "
                         "page_block_size].", fn=FN, row=int(nan_rows[0]), n=len(nan_rows)),
                    Reason.NOT_FINITE)
    return compare_arrays(FN, expected, arr, rtol=0.0, atol=0.0, dims="[cache_seqlens[seq], h_kv, d]")


MISTAKES = load_mistakes(__file__)


def _n(a):
    return int(a["cache_seqlens"][a["seq"]])


def _pages_out_of_order(a):
    """The sequence's pages are not listed in increasing id order."""
    row = a["block_table"][a["seq"]][: -(-_n(a) // a["kv_cache"].shape[1])]
    return bool((np.diff(row) < 0).any())


EDGES = [
    Edge("an empty sequence", lambda a: _n(a) == 0, kind="none"),
    Edge("a sequence ending exactly at a page boundary", lambda a: _n(a) > 0 and _n(a) % a["kv_cache"].shape[1] == 0,
         kind="limit"),
    Edge("one KV head (h_kv = 1)", lambda a: a["kv_cache"].shape[2] == 1, kind="one"),
    Edge("unused entries out of range", lambda a: bool((a["block_table"] == BAD).any()), kind="limit"),
    Edge("unused entries pointing at an all-NaN page", lambda a: not (a["block_table"] == BAD).any()
         and any(a["block_table"].shape[1] > -(-int(n) // a["kv_cache"].shape[1]) for n in a["cache_seqlens"]),
         kind="limit"),
    Edge("the sequence's pages listed out of id order", _pages_out_of_order, kind="order"),
    Edge("a sequence other than the first", lambda a: a["seq"] > 0, kind="order"),
]

PROBLEM = Problem(
    number=9, slug="paged_gather", title="Gather from a paged cache",
    summary="read a sequence through a block table",
    chapter="notebooks/06_decode_kernel.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: reference}, edges=EDGES,
    no_structure={
        "none first": "one sequence's pages are copied out in order; no running state starts on a first piece",
        "spread": "no scores: a copy, compared exactly",
        "ties": "no ranking or choice: a copy, compared exactly",
        "largest": "the statement names no largest size; the pages and lengths vary per case",
    },
)
