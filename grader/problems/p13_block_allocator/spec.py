"""Problem 13: the block-table allocator -- growth, prefix sharing, copy-on-write,
release (chapter 7). The engine's allocator changes its lists in place; the judge runs
an attempt in another process and sees only what it returns, so the contract returns the
whole state after every call, and "out of pages" is a returned value (None for the
copies, state unchanged), not an exception -- an exception is a failed case to the judge."""

from __future__ import annotations

import copy

import numpy as np

from grader.lang import said
from grader.spec import Case, Edge, PASS, Problem, Reason, fail, load_mistakes, memo_twins
from mlacourse.engine import pages

APPEND, RELEASE = "append_slots", "release"

STATEMENT = r"""
## Problem 13 — the block-table allocator

The engine of chapter 7 keeps its paged cache with three lists:

| name | what |
|---|---|
| `table` | one request's block table: its page ids in token order; token `t` lives in page `table[t // page_size]`, slot `t % page_size`. A request holding `seqlen` tokens has exactly `ceil(seqlen / page_size)` pages |
| `refcount` | `refcount[p]` = how many block tables hold page `p` (0: free); one entry per page of the pool |
| `free` | the free page ids. Pages are **taken from the end** (`free.pop()`) and **given back at the end** |

Requests that share a prompt prefix hold the same pages (the engine's `share_prefix`
gave each one a reference), so a page may be in several tables at once. Write two
functions.

**`append_slots(table, seqlen, n_new, page_size, refcount, free)`** makes room for
`n_new` more tokens after the `seqlen` the request holds:

1. **Copy-on-write.** If `n_new > 0`, the last page is partly filled
   (`seqlen % page_size != 0`) and shared (`refcount[table[-1]] > 1`), the request is about
   to write into a page someone else reads: take `dst = free.pop()`, drop one reference to
   the old page `src`, set `refcount[dst] = 1`, put `dst` in its place (`table[-1] = dst`),
   and record the copy `(src, dst, seqlen % page_size)` — the valid slots to copy. Full
   pages are never written again, so they are never copied.
2. **Growth.** Then take pages with `free.pop()` (each gets `refcount 1`), appending each
   to `table`, until the table has `ceil((seqlen + n_new) / page_size)` pages.

Return `(copies, table, refcount, free)`: the list of copies (`[]` or one
`(src, dst, n_slots)`) and the three lists after the call.

**Out of pages.** If `free` holds fewer pages than the call needs (the copy's page
included), change nothing and return `(None, table, refcount, free)` with the lists
exactly as they were given. (The engine raises `OutOfPages` here; the judge only sees
what you return, and an exception counts as a failed case.)

**`release(table, refcount, free)`** is called when a request finishes: drop one
reference to each page of `table`, in table order; a page whose count reaches 0 goes to
the end of `free`. Return `(freed, table, refcount, free)`: the freed pages in table
order, and the lists afterwards, with `table` emptied.

You may change the lists in place (as the engine does) and return them, or build new
ones. The judge sends only valid states (ones the allocator itself reaches), so you need
not validate the input. Hidden cases replay random operation sequences (new requests,
shared prefixes, appends, releases; page sizes 1–256, pools of 1–64 pages, out of pages,
exactly enough pages): each operation is one call, given the state the reference reached,
and everything returned is compared exactly. The reference is `mlacourse.engine.pages`.
"""

HINTS = [
    "Work out the counts first: partial = seqlen % page_size; cow = n_new > 0 and partial > 0 "
    "and refcount[table[-1]] > 1; grow = ceil((seqlen + n_new) / page_size) - len(table). "
    "The call needs grow + cow free pages; check that before changing anything.",
    "Order matters: the copy-on-write page is popped first, then the growth pages, so the ids "
    "come out as the judge expects. The copy moves seqlen % page_size slots -- not a whole page.",
    "release: for p in table: refcount[p] -= 1, and if it reached 0 the page is freed "
    "(append it to free and to the returned list). A page another table still holds stays.",
]


# ---- the reference: the engine's allocator, with its state returned ------------------

def reference_append(table, seqlen, n_new, page_size, refcount, free):
    """mlacourse.engine.pages.append_slots on copies of the lists, the state returned."""
    table, refcount, free = list(table), list(refcount), list(free)
    try:
        copies = pages.append_slots(table, seqlen, n_new, page_size, refcount, free)
    except pages.OutOfPages:  # raised before anything changed
        return None, table, refcount, free
    return copies, table, refcount, free


def reference_release(table, refcount, free):
    table, refcount, free = list(table), list(refcount), list(free)
    freed = pages.release(table, refcount, free)
    return freed, table, refcount, free


# ---- cases -------------------------------------------------------------------------------

class _Pool:
    """The allocator's state while cases are drawn: requests (table, seqlen) and the lists."""

    def __init__(self, num_pages, page_size, rng=None):
        self.P, self.n = page_size, num_pages
        order = list(range(num_pages - 1, -1, -1))
        self.free = [int(p) for p in rng.permutation(order)] if rng is not None else order
        self.refcount = [0] * num_pages
        self.reqs = {}  # name -> [table, seqlen]

    def state(self):
        return copy.deepcopy((self.refcount, self.free))

    def append_case(self, name, req, n_new, **kw):
        """The case 'request req appends n_new tokens', applied to the pool by the reference."""
        table, seqlen = self.reqs.setdefault(req, [[], 0])
        args = {"table": list(table), "seqlen": int(seqlen), "n_new": int(n_new), "page_size": self.P,
                "refcount": list(self.refcount), "free": list(self.free)}
        copies, t, rc, fr = reference_append(**args)
        if copies is not None:
            self.reqs[req] = [t, seqlen + n_new]
            self.refcount, self.free = rc, fr
        return _case(name, APPEND, args, **kw)

    def share(self, new, src, n_shared):
        table = pages.share_prefix(self.reqs[src][0], n_shared, self.P, self.refcount)
        self.reqs[new] = [table, n_shared]

    def release_case(self, name, req, **kw):
        args = {"table": list(self.reqs.pop(req)[0]), "refcount": list(self.refcount), "free": list(self.free)}
        _, _, self.refcount, self.free = reference_release(**args)
        return _case(name, RELEASE, args, **kw)


def _case(name, fn, args, hidden=False, seed=None):
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return Case(name, fn, args, hidden=hidden, seed=seed,
                describe=shown)


def _public():
    out = []
    pool = _Pool(8, 4)
    out.append(pool.append_case("a new request: 6 tokens at page size 4", "a", 6))
    pool.share("b", "a", 6)
    out.append(pool.append_case("copy-on-write: b shares a's half-full page 1 and appends 3", "b", 3))
    pool.share("c", "a", 4)
    out.append(pool.append_case("a full shared page is not copied: c shares a's first 4 tokens", "c", 2))
    out.append(pool.release_case("release a: page 0 is still held by b and c", "a"))
    small = _Pool(3, 2)
    small.append_case("", "x", 3)
    small.share("y", "x", 3)
    out.append(small.append_case("out of pages: y needs a copy and a new page, 1 page is free", "y", 2))
    out.append(small.release_case("release x: y still holds both pages", "x"))
    out.append(small.release_case("release y, the last holder: both pages are freed", "y"))
    return out


def _scenarios(rng, seed):
    """Hidden cases that hold each situation the statement names, at random sizes."""
    h = dict(hidden=True, seed=seed)
    out = []

    def P(lo=2):
        return int(rng.choice([lo, 3, 4, 5, 7, 8, 16, 64, 256]))

    # 1. copy-on-write, then growth; seqlen spans more than one page (first hidden case:
    #    its answer always holds a copy)
    p = P()
    s = int(rng.integers(1, 3)) * p + int(rng.integers(1, p))
    pool = _Pool(64, p, rng)  # the largest pool the statement names
    pool.append_case("", "a", s)
    pool.share("b", "a", s)
    out.append(pool.append_case("copy-on-write of a shared half-full page, then growth", "b",
                                p * int(rng.integers(1, 3)) + int(rng.integers(0, p)), **h))
    # the source now holds its last page alone: it appends in place; then an exact boundary
    out.append(pool.append_case("appending into a page the request holds alone", "a", p - s % p, **h))
    out.append(pool.release_case("release a request whose first pages are shared", "a", **h))
    out.append(pool.release_case("release the last holder of the shared pages", "b", **h))

    # 2. copy-on-write without growth, and n_new = 0 on a shared half-full page
    p = P()
    s = int(rng.integers(0, 3)) * p + int(rng.integers(1, p))
    pool = _Pool(int(rng.integers(6, 40)), p, rng)
    pool.append_case("", "a", s)
    pool.share("b", "a", s)
    pool.share("c", "a", s)
    out.append(pool.append_case("n_new = 0 on a shared half-full page: nothing to do", "b", 0, **h))
    out.append(pool.append_case("copy-on-write without growth", "b", int(rng.integers(1, p - s % p + 1)), **h))
    out.append(pool.release_case("release a: its pages are still held by c", "a", **h))

    # 3. a full shared last page, and a page-size-1 pool
    p = P()
    s = int(rng.integers(1, 4)) * p
    pool = _Pool(int(rng.integers(8, 50)), p, rng)
    pool.append_case("", "a", s)
    pool.share("b", "a", s)
    out.append(pool.append_case("a full shared last page: no copy, growth only", "b", int(rng.integers(1, 2 * p)), **h))
    one = _Pool(int(rng.integers(3, 20)), 1, rng)
    one.append_case("", "a", int(rng.integers(1, 4)))
    one.share("b", "a", len(one.reqs["a"][0]))
    out.append(one.append_case("page size 1: every page is full", "b", int(rng.integers(1, 3)), **h))

    # 4. out of pages with some pages free (copy + growth), and with exactly enough
    p = P(3)
    s = p + int(rng.integers(1, p))
    pool = _Pool(4, p, rng)
    pool.append_case("", "a", s)           # 2 pages
    pool.share("b", "a", s)
    out.append(pool.append_case("out of pages: a copy and 2 new pages, 2 pages free", "b",
                                2 * p - s % p + int(rng.integers(1, p)), **h))
    out.append(pool.append_case("exactly enough: a copy and 1 new page, 2 pages free", "b",
                                p - s % p + int(rng.integers(1, p + 1)), **h))
    tiny = _Pool(1, 256, rng)
    out.append(tiny.append_case("a pool of one page, filled to its boundary", "a", tiny.P, **h))
    out.append(tiny.append_case("a pool of one page: out of pages", "a", int(rng.integers(1, 9)), **h))

    # 5. at the pool's limit (every free page spoken for): a partly filled last page that
    #    no one shares is written in place, so no page is kept for a copy; and n_new = 0 on
    #    a shared half-full page copies nothing, so it needs no page at all
    p = P(3)
    s = p * int(rng.integers(0, 3)) + int(rng.integers(1, p))
    grow = int(rng.integers(0, 3))          # the free pages left: exactly the growth
    pool = _Pool(-(-s // p) + grow + int(rng.integers(1, 6)), p, rng)
    pool.append_case("", "a", s)
    pool.append_case("", "filler", (len(pool.free) - grow) * p)
    room = p - s % p                        # the free slots of a's last page
    if grow:                                # ends inside the grow-th new page
        n_new = room + (grow - 1) * p + int(rng.integers(1, p + 1))
    else:                                   # stays inside the last page
        n_new = int(rng.integers(1, room + 1))
    out.append(pool.append_case(f"an unshared half-full page with exactly the {grow} free pages its growth needs",
                                "a", n_new, **h))
    p = P(3)
    s = p * int(rng.integers(0, 3)) + int(rng.integers(1, p))
    pool = _Pool(-(-s // p) + int(rng.integers(1, 6)), p, rng)
    pool.append_case("", "a", s)
    pool.share("b", "a", s)
    pool.append_case("", "filler", len(pool.free) * p)
    out.append(pool.append_case("n_new = 0 on a shared half-full page, no page free", "b", 0, **h))
    return out


def _random_walk(rng, seed, n_ops):
    """A random operation sequence: new requests, shared prefixes, appends, releases."""
    pool = _Pool(int(rng.integers(1, 65)), int(rng.choice([1, 2, 4, 6, 16, 32, 100, 256])), rng)
    out, k = [], 0
    for i in range(n_ops):
        live = [r for r, (t, n) in pool.reqs.items() if n > 0]
        roll = rng.random()
        if live and roll < 0.25:
            r = str(rng.choice(live))
            out.append(pool.release_case(f"walk op {i}: release", r, hidden=True, seed=seed))
            continue
        if live and roll < 0.55:  # a new request sharing a prefix of a live one, then its own tokens
            src = str(rng.choice(live))
            n_sh = int(rng.integers(1, pool.reqs[src][1] + 1))
            k += 1
            pool.share(f"r{k}", src, n_sh)
            r = f"r{k}"
        elif live and roll < 0.8:
            r = str(rng.choice(live))
        else:
            k += 1
            r = f"r{k}"
        n_new = int(rng.integers(0, 3 * pool.P + 2))
        out.append(pool.append_case(f"walk op {i}: append {n_new}", r, n_new, hidden=True, seed=seed))
    return out


def make_cases(seed):
    rng = np.random.default_rng(seed)
    cases = _public() + _scenarios(rng, seed) + _random_walk(rng, seed, 14) + _random_walk(rng, seed, 14)
    return memo_twins(cases, rng, CHANGES, reference=REFERENCE, check=check, same_shapes=_relabelled)


# ---- memo twins: valid states that change one argument (or every page id) ----------------

def _relabelled(args, rng):
    """The same state with the page ids renamed by a random permutation: the same lengths
    and sizes, other values (a cache keyed on sizes returns the old ids)."""
    n = len(args["refcount"])
    if n < 2:
        return None
    new_id = [int(x) for x in rng.permutation(n)]
    refcount = [0] * n
    for p, r in enumerate(args["refcount"]):
        refcount[new_id[p]] = r
    return {**args, "table": [new_id[p] for p in args["table"]], "refcount": refcount,
            "free": [new_id[p] for p in args["free"]]}


def _swap_two(xs, rng):
    if len(xs) < 2:
        return None
    i, j = (int(v) for v in rng.choice(len(xs), size=2, replace=False))
    out = list(xs)
    out[i], out[j] = out[j], out[i]
    return out if out != list(xs) else None


def _other_seqlen(a, rng):
    """Another seqlen with the same number of pages (the table stays valid)."""
    n, P = len(a["table"]), a["page_size"]
    options = [s for s in range((n - 1) * P + 1, n * P + 1) if s != a["seqlen"]] if n else []
    return int(rng.choice(options)) if options else None


def _other_page_size(a, rng):
    n, s = len(a["table"]), a["seqlen"]
    options = [P for P in (1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 100, 256)
               if P != a["page_size"] and -(-s // P) == n]
    return int(rng.choice(options)) if options else None


def _one_more_reference(a, rng):
    """refcount with one more holder of one of the table's pages (another request shares it)."""
    if not a["table"]:
        return None
    refcount = list(a["refcount"])
    refcount[int(rng.choice(a["table"]))] += 1
    return refcount


CHANGES = {
    "table": lambda a, rng: _swap_two(a["table"], rng),
    "seqlen": _other_seqlen,
    "n_new": lambda a, rng: int((a["n_new"] + rng.integers(1, 3 * a["page_size"] + 2)) % (3 * a["page_size"] + 2)),
    "page_size": _other_page_size,
    "refcount": _one_more_reference,
    "free": lambda a, rng: _swap_two(a["free"], rng),
}


def _int_list(x, what):
    """x as a list of ints, or a Verdict saying why not."""
    if isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype.kind in "iu":
        return [int(v) for v in x]
    if not isinstance(x, (list, tuple)) or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in x):
        return fail(said("{what} should be a list of integer page ids; got {value}.", what=what,
                         value=f"{x!r:.120}"), Reason.WRONG_TYPE)
    return [int(v) for v in x]


def _copies(x, fn):
    if x is None:
        return None
    if not isinstance(x, (list, tuple)) or not all(isinstance(c, (list, tuple)) and len(c) == 3 for c in x):
        return fail(said("{fn}'s copies should be a list of (src, dst, n_slots) triples, or None when "
                         "out of pages; got {value}.", fn=fn, value=f"{x!r:.120}"), Reason.WRONG_TYPE)
    out = []
    for c in x:
        v = _int_list(c, said("{fn}'s copy {copy}", fn=fn, copy=repr(c)))
        if not isinstance(v, list):
            return v
        out.append(tuple(v))
    return out


def check(case, result):
    fn = case.function
    first = "copies" if fn == APPEND else "freed"
    if not isinstance(result, (tuple, list)) or len(result) != 4:
        size = said(" of length {n}", n=len(result)) if isinstance(result, (tuple, list)) else ""
        return fail(said("{fn} should return a 4-tuple ({first}, table, refcount, free); got a {type}{size}. "
                         "The judge sees only what your function returns, so return the lists too, even "
                         "where you changed them in place.", fn=fn, first=first,
                         type=type(result).__name__, size=size), Reason.WRONG_TYPE)
    if fn == APPEND:
        exp = reference_append(**copy.deepcopy(case.args))
        want0 = None if exp[0] is None else [tuple(c) for c in exp[0]]
        got0 = _copies(result[0], fn)
        if got0 is not None and not isinstance(got0, list):
            return got0
        n_free = len(case.args["free"])
        if want0 is None and got0 is not None:
            return fail(said("append_slots needs more pages than the {n_free} in free: return (None, "
                             "table, refcount, free) with nothing changed; you returned copies {got}.",
                             n_free=n_free, got=str(got0)))
        if want0 is not None and got0 is None:
            need = len(exp[1]) - len(case.args["table"]) + len(want0)
            return fail(said("append_slots returned None (out of pages), but it needs {need} of the "
                             "{n_free} free pages: enough.", need=need, n_free=n_free))
    else:
        exp = reference_release(**copy.deepcopy(case.args))
        want0, got0 = list(exp[0]), _int_list(result[0], said("release's freed pages"))
        if not isinstance(got0, list):
            return got0
    oop = said(" (out of pages: return every list as it was given)") if want0 is None and fn == APPEND else ""
    if got0 != want0:
        return fail(said("{fn}: {first} is {got}, expected {want}.", fn=fn, first=first, got=str(got0),
                         want=str(want0)))
    for name, want, got in zip(("table", "refcount", "free"), exp[1:], result[1:]):
        got = _int_list(got, said("{fn}'s {name}", fn=fn, name=name))
        if not isinstance(got, list):
            return got
        if got != want:
            return fail(said("{fn}: {name} after the call is {got}, expected {want}{oop}.", fn=fn, name=name,
                             got=str(got), want=str(want), oop=oop))
    return PASS


MISTAKES = load_mistakes(__file__)


def _needs(a):
    return reference_append(**copy.deepcopy(a))


def _partial_last(a):
    """The request's last page is partly filled (a copy-on-write candidate if shared)."""
    return a["seqlen"] % a["page_size"] > 0


def _growth(a):
    return -(-(a["seqlen"] + a["n_new"]) // a["page_size"]) - len(a["table"])


EDGES = [
    Edge("copy-on-write followed by growth",
         lambda a: bool(_needs(a)[0]) and len(_needs(a)[1]) > len(a["table"]), function=APPEND),
    Edge("copy-on-write without growth",
         lambda a: bool(_needs(a)[0]) and len(_needs(a)[1]) == len(a["table"]), function=APPEND),
    Edge("n_new = 0 on a shared half-full page",
         lambda a: a["n_new"] == 0 and _partial_last(a) and a["refcount"][a["table"][-1]] > 1,
         function=APPEND, kind="none"),
    Edge("a new request (an empty table)", lambda a: not a["table"] and a["seqlen"] == 0, function=APPEND,
         kind="none"),
    Edge("a full shared last page", lambda a: a["n_new"] > 0 and a["seqlen"] > 0
         and a["seqlen"] % a["page_size"] == 0 and a["refcount"][a["table"][-1]] > 1, function=APPEND,
         kind="limit"),
    Edge("out of pages with some pages free", lambda a: _needs(a)[0] is None and len(a["free"]) > 0,
         function=APPEND, kind="limit"),
    Edge("exactly enough free pages", lambda a: _needs(a)[0] is not None and a["free"]
         and not _needs(a)[3], function=APPEND, kind="limit"),
    Edge("an unshared half-full last page written with exactly the free pages its growth needs",
         lambda a: a["n_new"] > 0 and _partial_last(a) and a["refcount"][a["table"][-1]] == 1
         and _growth(a) == len(a["free"]), function=APPEND, kind="limit"),
    Edge("n_new = 0 on a shared half-full page with no page free",
         lambda a: a["n_new"] == 0 and _partial_last(a) and a["refcount"][a["table"][-1]] > 1
         and not a["free"], function=APPEND, kind="limit"),
    Edge("page size 1", lambda a: a["page_size"] == 1, function=APPEND, kind="one"),
    Edge("page size 256", lambda a: a["page_size"] == 256, function=APPEND, kind="largest"),
    Edge("a pool of one page", lambda a: len(a["refcount"]) == 1, function=APPEND, kind="one"),
    Edge("a pool of 64 pages", lambda a: len(a["refcount"]) == 64, function=APPEND, kind="largest"),
    Edge("free pages in no order of their ids", lambda a: sorted(a["free"]) != a["free"] != sorted(a["free"])[::-1],
         function=APPEND, kind="order"),
    Edge("a shared page survives release", lambda a: any(a["refcount"][p] > 1 for p in a["table"]),
         function=RELEASE),
]

REFERENCE = {APPEND: reference_append, RELEASE: reference_release}

PROBLEM = Problem(
    number=13, slug="block_allocator", title="The block-table allocator: sharing and copy-on-write",
    summary="block tables with prefix sharing, copy-on-write and release",
    chapter="notebooks/07_inference_engine.ipynb",
    functions=[APPEND, RELEASE], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    timeout_s=5.0, memory_mb=512,
    reference=REFERENCE, edges=EDGES,
    no_structure={
        "none first": "the allocator walks no pieces with a running state: each call handles one "
                      "request's last page and its growth",
        "spread": "no scores or sums: page ids and counts, compared exactly",
        "ties": "no ranking: every page id is decided by the order of free",
    },
    may_change_inputs={name: "the engine's allocator works on its lists in place; the contract returns "
                             "the whole state, so an attempt may change the lists it is given"
                       for name in ("table", "refcount", "free")},
)
