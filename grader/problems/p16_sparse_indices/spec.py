"""Problem 16: FlashMLA's sparse addressing -- logical top-k positions and a block table
turned into physical row indices, -1 kept (chapter 8)."""
from __future__ import annotations

import numpy as np

from grader.lang import said
from grader.spec import (Case, Edge, PASS, Problem, Reason, Verdict, as_array, compare_arrays, fail, load_mistakes,
                         memo_twins)
from mlacourse.sparse import physical_indices

FN = "sparse_indices"
BAD = 2**31 - 1  # an unused block-table entry: no page has this id

STATEMENT = r"""
Write `sparse_indices(topk_pos, block_table, page_block_size)`: the `indices` argument of
FlashMLA's sparse decode kernel, which has no block table of its own.

| argument | shape | meaning |
|---|---|---|
| `topk_pos` | `[b, s_q, topk]` integers | for query token `j` of sequence `i`, the **logical** positions (0 = the sequence's first token) its lightning indexer chose; `-1` = an empty slot |
| `block_table` | `[b, max_blocks]` integers | `block_table[i, n]`: the page holding tokens `n*P .. n*P+P-1` of sequence `i` |
| `page_block_size` | int `P` | tokens per page (any size >= 1, not only powers of two) |

Return an integer array `[b, s_q, topk]` with

    indices[i, j, k] = block_table[i, t // P] * P + t % P        where t = topk_pos[i, j, k]

-- the row's number in the cache viewed as one long array of `num_blocks * P` rows -- and
`-1` wherever `topk_pos` holds `-1`. The kernel skips exactly the entries equal to `-1`
and checks nothing else, so every other entry must be a real row.

The cases are built as a server builds them: each sequence owns shuffled pages (some with
ids in the millions), block-table entries past a sequence's last page are unused and hold
2147483647, positions come in the indexer's order (not sorted), `-1` pads short lists, opens
some and also sits between valid entries, and one query token may have only `-1`. Checked exactly
against `mlacourse.sparse.physical_indices`.
"""

HINTS = [
    "One entry first: t = 37, P = 16 lies in the sequence's page number 37 // 16 = 2, at slot "
    "37 % 16 = 5; that page is block_table[i, 2], so the row is block_table[i, 2] * 16 + 5.",
    "-1 // P is -1 in Python and numpy, and block_table[i, -1] is the LAST column: mask the "
    "-1 entries before you index, and put -1 back afterwards.",
    "Vectorised: valid = topk_pos >= 0; t = np.where(valid, topk_pos, 0); "
    "page = block_table[np.arange(b)[:, None, None], t // P]; "
    "np.where(valid, page * P + t % P, -1).",
]


def reference(topk_pos, block_table, page_block_size):
    return physical_indices(topk_pos, block_table, page_block_size)  # int64 [b, s_q, topk]


# ---- cases -----------------------------------------------------------------------------------

def _served(rng, lens, s_q, topk, page, holes=0.0, first_id=0, empty_token=False, dtype=np.int32,
            extra_cols=1, open_with_hole=False):
    """Arguments as a server makes them: shuffled pages per sequence (ids from first_id),
    unused table entries BAD, per query token up to topk distinct positions among the ones it
    sees (bottom-right causal), in random order, -1 padding; `holes` of the valid entries
    turned into -1 in place; empty_token: one query token gets only -1; open_with_hole: one
    query token with two or more entries gets -1 in its first slot."""
    need = [-(-n // page) for n in lens]
    ids = first_id + rng.permutation(sum(need) + 2)
    table = np.full((len(lens), max(need) + extra_cols), BAD, dtype=np.int64)
    used = 0
    for i, n in enumerate(need):
        table[i, :n] = ids[used:used + n]
        used += n
    pos = np.full((len(lens), s_q, topk), -1, dtype=np.int64)
    for i, n in enumerate(lens):
        for j in range(s_q):
            visible = max(0, n - s_q + 1 + j)
            pick = rng.permutation(visible)[:topk]
            pos[i, j, :len(pick)] = pick
    if holes:
        pos[(rng.random(pos.shape) < holes) & (pos >= 0)] = -1
    if open_with_hole:
        rows = np.argwhere((pos >= 0).sum(axis=-1) >= 2)
        if len(rows):
            i, j = rows[rng.integers(len(rows))]
            pos[i, j, 0] = -1
    if empty_token:
        pos[rng.integers(len(lens)), rng.integers(s_q)] = -1
    return {"topk_pos": pos.astype(dtype), "block_table": table.astype(dtype), "page_block_size": int(page)}


def _describe(a, seed=None):
    pos, table = a["topk_pos"], a["block_table"]
    n_minus = int((pos == -1).sum())
    return (f"topk_pos [{', '.join(map(str, pos.shape))}] {pos.dtype} ({n_minus} entries are -1), block_table "
            f"[{', '.join(map(str, table.shape))}], page_block_size {a['page_block_size']}, largest page id "
            f"{int(table[table != BAD].max())}")


def _case(name, args, hidden=False, seed=None):
    return Case(name, FN, args, hidden=hidden, seed=seed, describe=_describe(args, seed))


def _redraw(rng, args, positions=True, pages=True):
    """The same shapes, page size and -1 pattern as `args`, with new positions and/or new page
    ids: a cache keyed on shapes, on the page size or on one argument returns a stale answer."""
    pos, table, page = args["topk_pos"], args["block_table"], args["page_block_size"]
    new_pos, new_table = pos.copy(), table.copy()
    if pages:
        used = table != BAD
        new_table[used] = int(rng.integers(0, 10**6)) + rng.permutation(int(used.sum()) + 3)[:int(used.sum())]
    if positions:
        n_pages = (table != BAD).sum(axis=1)
        for i, j in np.ndindex(*pos.shape[:2]):
            slots = np.flatnonzero(pos[i, j] >= 0)  # keep where the -1 entries are
            new_pos[i, j, slots] = rng.permutation(int(n_pages[i]) * page)[:len(slots)]
    return {"topk_pos": new_pos, "block_table": new_table, "page_block_size": page}


def make_cases(seed):
    fixed = np.random.default_rng(16)
    example = {"topk_pos": np.array([[[9, 0, 5, -1, 3]]], np.int32),
               "block_table": np.array([[7, 2, 5, BAD]], np.int32), "page_block_size": 4}
    cases = [
        _case("one sequence, pages of 4: positions 9, 0, 5, 3 and one empty slot", example),
        _case("two sequences, two query tokens each (MTP), short lists padded with -1",
              _served(fixed, [6, 11], 2, 8, 4)),
        _case("-1 between valid entries, pages of 16", _served(fixed, [40, 70, 33], 1, 12, 16, holes=0.3)),
    ]
    rng = np.random.default_rng(seed)
    hidden = []

    def add(name, args):
        hidden.append((name, args))

    base = _served(rng, [int(x) for x in rng.integers(20, 200, size=int(rng.integers(2, 5)))],
                   int(rng.integers(1, 3)), int(rng.integers(8, 33)), int(rng.choice([16, 64])), holes=0.15,
                   open_with_hole=True)
    add("a served batch", base)
    add("the same shapes and page size again, other values", _redraw(rng, base))
    add("the same block tables, other positions", _redraw(rng, base, pages=False))
    add("the same positions, other pages", _redraw(rng, base, positions=False))
    add("page_block_size 1 (every token its own page)",
        _served(rng, [int(x) for x in rng.integers(3, 30, size=2)], 2, int(rng.integers(4, 12)), 1, holes=0.1))
    add("an odd page size, as in FlashMLA's tests",
        _served(rng, [int(x) for x in rng.integers(50, 300, size=3)], 1, int(rng.integers(10, 40)),
                int(rng.choice([61, 69, 3])), holes=0.2, dtype=np.int64))
    add("a query token with only -1 entries, another opening with -1",
        _served(rng, [int(x) for x in rng.integers(20, 90, size=3)], int(rng.integers(2, 4)),
                int(rng.integers(5, 20)), int(rng.choice([2, 8, 32])), empty_token=True, open_with_hole=True))
    add("page ids in the millions",
        _served(rng, [int(x) for x in rng.integers(100, 600, size=2)], 1, int(rng.integers(16, 48)),
                int(rng.choice([64, 128])), holes=0.1, first_id=int(rng.integers(2_000_000, 8_000_000))))
    add("top-k of 1, a single sequence", _served(rng, [int(rng.integers(2, 500))], int(rng.integers(1, 4)), 1,
                                                  int(rng.choice([4, 64]))))
    add("sequences shorter than top-k (lists padded with -1)",
        _served(rng, [int(x) for x in rng.integers(1, 9, size=4)], 1, int(rng.integers(10, 20)),
                int(rng.choice([2, 4])), dtype=np.int64))
    order = [int(k) for k in rng.permutation(len(hidden))]  # twins apart, in a random order
    if order[-1] == 0:
        order[0], order[-1] = order[-1], order[0]
    cases += [_case(hidden[k][0], hidden[k][1], hidden=True, seed=seed) for k in order]
    cases.append(_case("the first served batch once more, after the others",  # a stale state shows here
                       {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in hidden[0][1].items()},
                       hidden=True, seed=seed))
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check)


def _larger_page(a, rng):
    """A larger page size: every position still lies in a listed page (t // P' <= t // P)."""
    return int(a["page_block_size"]) + int(rng.integers(1, 9))


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = {
    "topk_pos": lambda a, rng: _redraw(rng, a, pages=False)["topk_pos"].astype(a["topk_pos"].dtype),
    "block_table": lambda a, rng: _redraw(rng, a, positions=False)["block_table"].astype(a["block_table"].dtype),
    "page_block_size": _larger_page,
}


def check(case, result):
    expected = reference(**case.args)
    arr = as_array(result, FN)
    if isinstance(arr, Verdict):
        return arr
    raw = np.asarray(result)
    if raw.dtype.kind not in "iu" and arr.shape == expected.shape:
        return fail(said("{fn} returned {dtype} values; indices are integers (FlashMLA takes int32): keep "
                         "the arithmetic in integers.", fn=FN, dtype=str(raw.dtype)), Reason.WRONG_TYPE)
    minus = case.args["topk_pos"] == -1
    if arr.shape == expected.shape and not np.array_equal(arr == -1, minus):
        first = tuple(int(x) for x in np.argwhere((arr == -1) != minus)[0])
        want = said("-1 (an empty slot stays -1)") if minus[first] else f"{int(expected[first])}"
        return fail(said("{fn}: at index {index} topk_pos is {pos}, so the answer must be {want}; you "
                         "returned {got}. The kernel skips exactly the entries equal to -1 and reads every "
                         "other one.", fn=FN, index=str(first), pos=int(case.args["topk_pos"][first]),
                         want=want, got=int(arr[first])))
    v = compare_arrays(FN, expected, arr, rtol=0.0, atol=0.0, dims="[b, s_q, topk]")
    return v if not v.passed else PASS


MISTAKES = load_mistakes(__file__)

def _leading_minus_1(a):
    """A query token whose list opens with -1 and has a valid entry later."""
    rows = a["topk_pos"].reshape(-1, a["topk_pos"].shape[-1])
    return bool(((rows[:, 0] == -1) & (rows >= 0).any(axis=1)).any())


def _pages_out_of_order(a):
    """A sequence whose pages are not listed in increasing id order."""
    return any(np.any(np.diff(row[row != BAD]) < 0) for row in a["block_table"])


def _positions_out_of_order(a):
    rows = a["topk_pos"].reshape(-1, a["topk_pos"].shape[-1])
    return any(np.any(np.diff(r[r >= 0]) < 0) for r in rows)


def _last_slot_of_a_page(a):
    """A chosen position in the last slot of a page of more than one slot."""
    P = a["page_block_size"]
    return P > 1 and bool(((a["topk_pos"] >= 0) & (a["topk_pos"] % P == P - 1)).any())


EDGES = [
    Edge("a query token whose entries are all -1", lambda a: bool((a["topk_pos"] == -1).all(axis=-1).any()),
         kind="none"),
    Edge("-1 between valid entries", lambda a: bool(((a["topk_pos"][..., :-1] == -1)
                                                       & (a["topk_pos"][..., 1:] >= 0)).any())),
    Edge("a query token whose list opens with -1, a valid entry later", _leading_minus_1, kind="none first"),
    Edge("page_block_size 1", lambda a: a["page_block_size"] == 1, kind="one"),
    Edge("a page size that is not a power of two",
         lambda a: a["page_block_size"] & (a["page_block_size"] - 1) != 0),
    Edge("s_q > 1", lambda a: a["topk_pos"].shape[1] > 1),
    Edge("position 0 chosen", lambda a: bool((a["topk_pos"] == 0).any())),
    Edge("two sequences whose tables differ", lambda a: a["block_table"].shape[0] > 1),
    Edge("topk = 1", lambda a: a["topk_pos"].shape[2] == 1, kind="one"),
    Edge("page ids in the millions", lambda a: int(a["block_table"][a["block_table"] != BAD].max()) > 10**6,
         kind="largest"),
    Edge("pages listed out of id order", _pages_out_of_order, kind="order"),
    Edge("positions in the indexer's order, not sorted", _positions_out_of_order, kind="order"),
    Edge("a position in the last slot of a page", _last_slot_of_a_page, kind="limit"),
    Edge("sequences shorter than top-k", lambda a: bool(
        ((a["block_table"] != BAD).sum(axis=1) * a["page_block_size"] < a["topk_pos"].shape[2]).any()),
         kind="limit"),
]

PROBLEM = Problem(
    number=16, slug="sparse_indices", title="FlashMLA's sparse indices from a block table",
    summary="top-k token positions + a block table to FlashMLA's sparse indices, -1 kept",
    chapter="notebooks/08_flashmla_next.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: reference}, edges=EDGES,
    no_structure={
        "spread": "no scores: integer positions and page ids, compared exactly",
        "ties": "no ranking: each entry is mapped on its own, in the order given",
    },
)
