"""Problem 15: which cached prefixes to evict from a radix-tree prefix cache -- unlocked
leaves, least recently used first, a parent as soon as its last child is gone (chapter 7).
The judge sends only valid trees (what a cache holds), because an exception is a failed
case to it: checking the input is mlacourse.engine.radix's business."""

from __future__ import annotations

import copy

import numpy as np

from grader.lang import said
from grader.spec import Case, Edge, PASS, Problem, Reason, another_int, fail, load_mistakes, memo_twins
from mlacourse.engine import radix

FN = "evict_lru"

STATEMENT = r"""
## Problem 15 — evicting from a radix-tree prefix cache

A prefix cache like SGLang's keeps cached token sequences in a tree: each node holds a
run of tokens that continues its parent's. Running requests lock the nodes on their path.
When memory runs short, the cache frees whole nodes: only **unlocked leaves**, the
**least recently used first**, and a parent becomes a candidate the moment its last child
is evicted.

Write `evict_lru(parent, tokens, last_access, in_use, n_needed)`:

| argument | what |
|---|---|
| `parent` | `[n]` int64: the parent node of each node, or `-1` for a child of the root (the root itself is not listed). Node ids are the positions `0 .. n-1`, in no particular order: a parent may have a larger id than its children, and children of the root sit anywhere |
| `tokens` | `[n]` int64 >= 1: how many tokens (cache slots) each node holds |
| `last_access` | `[n]` int64: when each node was last used; larger is more recent. Using a node uses its whole path, so a node's `last_access` is never smaller than its children's |
| `in_use` | `[n]` bool: the node is on a running request's path (locked). Locking covers the whole path, so the parent of an in-use node is in use too |
| `n_needed` | int >= 0: tokens to free |

Return the list of evicted node ids, **in the order they are evicted**:

1. the candidates are the nodes that are not in use and have no child left (every one
   of their children, if any, has already been evicted);
2. evict the candidate with the smallest `last_access`; a tie goes to the smaller node id;
3. repeat while the evicted nodes hold fewer than `n_needed` tokens and a candidate is left.

So stop as soon as the tokens freed reach `n_needed` (`0` evicts nothing); if every
candidate is gone first, return all of them -- the caller then knows it freed too little.
A node under an in-use node may itself be unlocked and evicted. The input is always valid,
so you need not check it.

The judge compares the list exactly -- order included -- with
the radix-tree model's eviction (`mlacourse.engine.radix`) on trees of 1 to 40 nodes with ids in random order: ties in `last_access`,
parents that become leaves in the middle of a call, locked paths with unlocked branches,
`n_needed` of 0, exactly reached, and more than everything that can go.
"""

HINTS = [
    "Count each node's children that are still there (one pass over parent). The candidates are the "
    "nodes with count 0 that are not in use; keep them in a heap of (last_access, node).",
    "Pop the smallest (last_access, node), add its tokens, and decrement its parent's count: if that "
    "reaches 0 and the parent is not in use, push the parent too -- it may be next in the same call. "
    "Stop when the tokens freed reach n_needed, or the heap is empty.",
]


# ---- the reference ---------------------------------------------------------------------

def reference(parent, tokens, last_access, in_use, n_needed):
    """The radix model's eviction order, cut where the nodes taken hold n_needed tokens (an
    adapter: the model's API is not the problem's)."""
    out, freed = [], 0
    for i in radix.eviction_order(np.array(parent), np.array(last_access), np.array(in_use)):
        if freed >= n_needed:
            break
        out.append(i)
        freed += int(tokens[i])
    return out


# ---- cases -------------------------------------------------------------------------------

def _case(name, parent, tokens, last, in_use, n_needed, hidden=False, seed=None):
    args = {"parent": np.asarray(parent, dtype=np.int64), "tokens": np.asarray(tokens, dtype=np.int64),
            "last_access": np.asarray(last, dtype=np.int64), "in_use": np.asarray(in_use, dtype=bool),
            "n_needed": int(n_needed)}
    shown = (f"{len(args['parent'])} nodes, n_needed={n_needed}"
             if hidden else f"parent={list(args['parent'])}, tokens={list(args['tokens'])}, "
             f"last_access={list(args['last_access'])}, in_use={[bool(x) for x in args['in_use']]}, n_needed={n_needed}")
    return Case(name, FN, args, hidden=hidden, seed=seed, describe=shown)


# The tree of the public examples:   0 (t=5) -- 1 (t=5, in use) -- 2 (t=3)
#                                                               \- 3 (t=4, in use)
#                                    4 (t=1)
PUBLIC_TREE = dict(parent=[-1, 0, 1, 1, -1], tokens=[10, 4, 2, 3, 7], last=[5, 5, 3, 4, 1],
                   in_use=[False, True, False, True, False])


def _public():
    t = PUBLIC_TREE
    return [
        _case("the oldest leaf is enough", t["parent"], t["tokens"], t["last"], t["in_use"], 5),
        _case("two leaves; the locked path stays", t["parent"], t["tokens"], t["last"], t["in_use"], 9),
        _case("nothing is needed", t["parent"], t["tokens"], t["last"], t["in_use"], 0),
        _case("nothing locked: parents follow their children", t["parent"], t["tokens"], t["last"],
              [False] * 5, 21),
    ]


def _shuffled(rng, parent, tokens, last, in_use):
    """The same tree with its nodes renumbered at random (ids say nothing about depth)."""
    n = len(parent)
    perm = rng.permutation(n)  # old id -> new id
    inv = np.empty(n, dtype=np.int64)
    inv[perm] = np.arange(n)
    p = np.array([-1 if parent[old] < 0 else perm[parent[old]] for old in inv], dtype=np.int64)
    return p, np.asarray(tokens)[inv], np.asarray(last)[inv], np.asarray(in_use)[inv]


def _random_tree(rng, n, locked_paths=1, tie_rate=0.3, t_max=60):
    """A random cache tree: node k hangs under the root or an earlier node; access times
    rise up each path (a parent was used whenever a child was); some request paths locked.
    Then the ids are shuffled: parents after their children, children of the root anywhere
    (the statement promises no order)."""
    parent = np.array([-1 if k == 0 or rng.random() < 0.25 else int(rng.integers(0, k)) for k in range(n)])
    tokens = rng.integers(1, 65, n)
    last = rng.integers(0, t_max, n)
    if rng.random() < tie_rate:  # whole runs inserted at once share one time
        last = (last // 8) * 8
    for k in range(n - 1, -1, -1):  # children come after parents: push times up the path
        if parent[k] >= 0:
            last[parent[k]] = max(last[parent[k]], last[k])
    in_use = np.zeros(n, dtype=bool)
    for _ in range(locked_paths):
        k = int(rng.integers(0, n))
        while k >= 0:
            in_use[k] = True
            k = parent[k]
    return _shuffled(rng, parent, tokens, last, in_use)


def _renumbered(rng, parent, tokens, last, in_use, fixed):
    """The tree with its ids shuffled, except that node old -> new for each (old, new) in
    ``fixed`` (the rest at random)."""
    n = len(parent)
    perm = np.full(n, -1)
    for old, new in fixed:
        perm[old] = new
    rest = [k for k in range(n) if k not in {new for _, new in fixed}]
    free = [old for old in range(n) if perm[old] < 0]
    perm[free] = rng.permutation(rest)
    inv = np.empty(n, dtype=np.int64)
    inv[perm] = np.arange(n)
    p = np.array([-1 if parent[old] < 0 else perm[parent[old]] for old in inv], dtype=np.int64)
    return p, np.asarray(tokens)[inv], np.asarray(last)[inv], np.asarray(in_use)[inv]


def _with_extra(rng, parent, tokens, last, in_use, n_extra, t_min):
    """The tree plus n_extra random unlocked nodes, all used after t_min (so they go after it)."""
    parent, tokens, last, in_use = list(parent), list(tokens), list(last), list(in_use)
    base = len(parent)
    for k in range(n_extra):
        parent.append(-1 if k == 0 or rng.random() < 0.4 else int(rng.integers(base, base + k)))
        tokens.append(int(rng.integers(1, 65)))
        last.append(int(rng.integers(t_min + 1, t_min + 40)))
        in_use.append(False)
    for _ in range(len(parent)):  # times never smaller on a parent than on its children
        for k in range(len(parent)):
            if parent[k] >= 0 and last[parent[k]] < last[k]:
                last[parent[k]] = last[k]
    return parent, tokens, last, in_use


def _scenarios(rng, seed):
    h = dict(hidden=True, seed=seed)
    out = []
    tok = lambda k: rng.integers(2, 40, k)  # noqa: E731
    # 1. a chain whose nodes share one time, the parent with the smaller id: the leaf goes first
    t0 = int(rng.integers(5, 50))
    p, tk, la, iu = [-1, 0, 1, -1], tok(4), [t0, t0, t0, t0 + int(rng.integers(1, 9))], [False] * 4
    out.append(_case("a chain inserted at once: the leaf first, then its parent", p, tk, la, iu, int(tk[2] + tk[1]), **h))
    # 2. a parent becomes a leaf and is older than another leaf
    old, new = int(rng.integers(1, 20)), int(rng.integers(30, 60))
    p, tk, la = [-1, 0, -1, 2], tok(4), [old + 2, old, new, new]
    out.append(_case("a parent that loses its only child is next", *_shuffled(rng, p, tk, la, [False] * 4),
                     int(tk[1] + tk[0]), **h))
    # 3. the oldest leaf is locked; an unlocked leaf hangs under a locked node
    p = [-1, 0, 0, -1, 3]
    tk, la = tok(5), [40, 1, 20, 30, 25]
    iu = [True, True, False, False, False]
    out.append(_case("the oldest leaf is in use; an unlocked branch under a locked node goes",
                     *_shuffled(rng, p, tk, la, iu), int(tk[2]), **h))
    # 4. more than everything that can go: all unlocked nodes, locked ones stay
    p, tk, la, iu = _random_tree(rng, int(rng.integers(8, 14)), locked_paths=2)
    out.append(_case("more than can be freed: every candidate goes", p, tk, la, iu, int(tk.sum()) + 1, **h))
    # 5. n_needed reached exactly by the first evictions
    p, tk, la, iu = _random_tree(rng, int(rng.integers(8, 14)))
    ev = radix.eviction_order(p, la, iu)  # everything that can go, in order
    k = max(1, len(ev) // 2)
    out.append(_case("n_needed reached exactly", p, tk, la, iu, int(tk[ev[:k]].sum()), **h))
    # 6. leaves with equal times: the smaller id wins; tokens large, so one node is enough
    t1 = int(rng.integers(5, 50))
    p, tk, la = [-1, -1, -1, 0], rng.integers(30, 64, 4), [t1, t1, t1 + 5, t1]
    out.append(_case("a tie between leaves goes to the smaller id", *_shuffled(rng, p, tk, la, [False] * 4),
                     int(rng.integers(1, 20)), **h))
    # 7. n_needed = 0 on a random tree; and a single node
    p, tk, la, iu = _random_tree(rng, int(rng.integers(5, 10)))
    out.append(_case("nothing needed", p, tk, la, iu, 0, **h))
    out.append(_case("a single node", [-1], tok(1), [int(rng.integers(0, 9))], [False], 1, **h))
    # 8. the last id is a parent (-1 used as an index would reach it): an old child of the
    #    root goes first, then the last node's child, then the last node itself
    t = int(rng.integers(1, 20))
    p, tk, la, iu = [-1, -1, 1], tok(3), [t, t + 20, t + int(rng.integers(5, 20))], [False] * 3
    p, tk, la, iu = _with_extra(rng, p, tk, la, iu, int(rng.integers(1, 6)), t + 20)
    p, tk, la, iu = _renumbered(rng, p, tk, la, iu, fixed=[(1, len(p) - 1)])
    out.append(_case("the last id is a parent; a child of the root is evicted before its child",
                     p, tk, la, iu, int(np.sum(tk)) + 1, **h))
    # 9. a path used at one time (a tie all along it) whose ids are out of depth order: a
    #    node with a smaller-id child and a larger-id grandchild -- ties go by id only among
    #    candidates, and the grandchild is the only one
    t = int(rng.integers(1, 20))
    p, tk, la, iu = [-1, 0, 1], tok(3), [t, t, t], [False] * 3
    p, tk, la, iu = _with_extra(rng, p, tk, la, iu, int(rng.integers(1, 6)), t)
    a, b, c = sorted(int(x) for x in rng.choice(len(p), size=3, replace=False))
    p, tk, la, iu = _renumbered(rng, p, tk, la, iu, fixed=[(0, b), (1, a), (2, c)])
    out.append(_case("a path used at one time whose ids are out of depth order", p, tk, la, iu,
                     int(rng.integers(1, int(np.sum(tk)) + 2)), **h))
    return out


def _random(rng, seed, i, n=None):
    n = int(rng.integers(2, 41)) if n is None else n
    p, tk, la, iu = _random_tree(rng, n, locked_paths=int(rng.integers(0, 3)))
    total = int(tk[~iu].sum()) if (~iu).any() else 1
    need = int(rng.integers(0, total + 20))
    return _case(f"random cache {i}", p, tk, la, iu, need, hidden=True, seed=seed)


def make_cases(seed):
    """Public examples, the scenarios, random trees -- two of them with the same number of
    nodes and the same n_needed but other contents (a memo keyed on shapes or on n_needed
    answers the second wrong), and an exact repeat of an earlier case -- in a seeded order."""
    rng = np.random.default_rng(seed)
    hidden = _scenarios(rng, seed) + [_random(rng, seed, i, n=40 if i == 0 else None) for i in range(8)]
    n = int(rng.integers(6, 20))
    twin_a = _random(rng, seed, "twin a", n)
    twin_b = _random(rng, seed, "twin b", n)
    twin_b.args["n_needed"] = twin_a.args["n_needed"]
    hidden += [twin_a, twin_b]
    hidden = [hidden[i] for i in rng.permutation(len(hidden))]
    first = hidden[0]
    hidden.append(Case(first.name + " (again)", FN, copy.deepcopy(first.args), hidden=True, seed=seed,
                       describe=first.describe))
    return memo_twins(_public() + hidden, rng, CHANGES, reference={FN: reference}, check=check)


# ---- memo twins: valid trees that change one argument ------------------------------------

def _under(parent, k):
    """k and every node whose path to the root passes through k."""
    out = {k}
    changed = True
    while changed:
        changed = False
        for i, p in enumerate(parent):
            if p in out and i not in out:
                out.add(i)
                changed = True
    return out


def _reparented(a, rng):
    """One node moved under another valid parent (or the root): not its own descendant, at
    least as recent, and in use if the node is (the tree stays what a cache holds)."""
    parent, last, in_use = (np.asarray(a[k]) for k in ("parent", "last_access", "in_use"))
    for k in rng.permutation(len(parent)):
        sub = _under(parent.tolist(), int(k))
        options = [-1] + [j for j in range(len(parent)) if j not in sub and last[j] >= last[k]
                          and (in_use[j] or not in_use[k])]
        options = [j for j in options if j != parent[k]]
        if options:
            new = parent.copy()
            new[k] = int(rng.choice(options))
            return new
    return None


def _new_times(a, rng):
    """Other access times, still never smaller on a parent than on its children."""
    parent = np.asarray(a["parent"])
    last = rng.integers(0, 60, len(parent)).astype(np.int64)
    for _ in range(len(parent)):  # ids are in no order: push times up until nothing moves
        for k, p in enumerate(parent):
            if p >= 0 and last[p] < last[k]:
                last[p] = last[k]
    return last


def _new_locks(a, rng):
    """Other running requests: one or two random paths locked (closed upwards)."""
    parent = np.asarray(a["parent"])
    in_use = np.zeros(len(parent), dtype=bool)
    for _ in range(int(rng.integers(1, 3))):
        k = int(rng.integers(len(parent)))
        while k >= 0:
            in_use[k] = True
            k = int(parent[k])
    return in_use


CHANGES = {
    "parent": _reparented,
    "tokens": lambda a, rng: rng.integers(1, 65, len(a["tokens"])).astype(np.int64),
    "last_access": _new_times,
    "in_use": _new_locks,
    "n_needed": lambda a, rng: another_int(0, int(np.asarray(a["tokens"]).sum()) + 20)(a["n_needed"], rng),
}


def check(case, result):
    exp = reference(**case.args)
    if isinstance(result, np.ndarray):
        result = result.tolist()
    if not isinstance(result, (list, tuple)):
        return fail(said("{fn} should return a list of node ids; got {value}.", fn=FN,
                         value=f"{result!r:.120}"), Reason.WRONG_TYPE)
    got = []
    for x in result:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) and not (
                isinstance(x, float) and x.is_integer()):
            return fail(said("{fn} should return node ids (ints); got {x} in {start}.", fn=FN, x=repr(x),
                             start=str(list(result)[:10])), Reason.WRONG_TYPE)
        got.append(int(x))
    n = len(case.args["parent"])
    bad = [x for x in got if not 0 <= x < n]
    if bad:
        return fail(said("{fn} returned node {node}, but the nodes are 0..{last}.", fn=FN, node=bad[0], last=n - 1))
    if len(set(got)) < len(got):
        dup = next(x for x in got if got.count(x) > 1)
        return fail(said("{fn} evicted node {node} twice: {got}.", fn=FN, node=dup, got=str(got)))
    locked = [x for x in got if case.args["in_use"][x]]
    if locked:
        return fail(said("{fn} evicted node {node}, which is in use (a running request reads it): {got}.",
                         fn=FN, node=locked[0], got=str(got)))
    if got != exp:
        first = next((i for i, (a, b) in enumerate(zip(got, exp)) if a != b), min(len(got), len(exp)))
        return fail(said("{fn} evicted {got}, expected {want} (first difference at position {first}).",
                         fn=FN, got=str(got), want=str(exp), first=first))
    return PASS


MISTAKES = load_mistakes(__file__)

def _evicted_before(a, first, then):
    """Is node ``first`` evicted, and before node ``then`` (also evicted)?"""
    order = reference(**a)
    return first in order and then in order and order.index(first) < order.index(then)


def _last_id_is_a_parent_after_a_root_child(a):
    """Node n-1 has children, and a child of the root is evicted while one of them is
    still there -- where a decrement of children[parent[x]] with parent[x] = -1 lands."""
    parent, last = list(a["parent"]), len(a["parent"]) - 1
    order = reference(**a)
    kids = [k for k in range(len(parent)) if parent[k] == last]
    roots = [x for x in order if parent[x] == -1 and x != last]
    return bool(kids) and any(any(k not in order[:order.index(r)] for k in kids) for r in roots)


def _depth_order_broken_on_a_tie(a):
    """A node whose child has a smaller id and whose grandchild a larger one, all three
    used at one time, the grandchild evicted."""
    parent, last = a["parent"], a["last_access"]
    for g in range(len(parent)):
        c = parent[g]
        if c < 0 or parent[c] < 0:
            continue
        p = parent[c]
        if c < p < g and last[p] == last[c] == last[g] and g in reference(**a):
            return True
    return False


EDGES = [
    Edge("n_needed 0", lambda a: a["n_needed"] == 0, kind="none"),
    Edge("more than can be freed",
         lambda a: a["n_needed"] > int(np.asarray(a["tokens"])[~np.asarray(a["in_use"])].sum()), kind="limit"),
    Edge("n_needed reached exactly",
         lambda a: a["n_needed"] > 0 and int(np.asarray(a["tokens"])[reference(**a)].sum()) == a["n_needed"],
         kind="limit"),
    Edge("a parent evicted after its last child in the same call",
         lambda a: any(a["parent"][x] in reference(**a)[i + 1:] for i, x in enumerate(reference(**a)))),
    Edge("a tie in last_access between two candidates",
         lambda a: len(reference(**a)) >= 2 and len({int(a["last_access"][x]) for x in reference(**a)})
         < len(reference(**a)), kind="ties"),
    Edge("an unlocked node evicted under an in-use parent",
         lambda a: any(a["parent"][x] >= 0 and a["in_use"][a["parent"][x]] for x in reference(**a))),
    Edge("a locked node older than an evicted one",
         lambda a: any(a["in_use"][k] and any(a["last_access"][k] < a["last_access"][x] for x in reference(**a))
                       for k in range(len(a["parent"])))),
    Edge("a parent with a larger id than its child, evicted after it",
         lambda a: any(a["parent"][x] > x and _evicted_before(a, x, int(a["parent"][x])) for x in reference(**a)),
         kind="order"),
    Edge("a child of the root that is not node 0 and a node 0 that is not a child of the root",
         lambda a: a["parent"][0] >= 0 and any(a["parent"][k] == -1 for k in range(1, len(a["parent"]))),
         kind="order"),
    Edge("the last id is a parent, and a child of the root goes while its children are there",
         _last_id_is_a_parent_after_a_root_child, kind="order"),
    Edge("a path used at one time whose ids are out of depth order", _depth_order_broken_on_a_tie, kind="ties"),
    Edge("a single node", lambda a: len(a["parent"]) == 1, kind="one"),
    Edge("40 nodes", lambda a: len(a["parent"]) == 40, kind="largest"),
]

PROBLEM = Problem(
    number=15, slug="evict_lru", title="Evicting from a radix-tree prefix cache",
    summary="evict from a radix-tree prefix cache: unlocked leaves, least recently used first",
    chapter="notebooks/07_inference_engine.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    timeout_s=5.0, memory_mb=512,
    reference={FN: reference}, edges=EDGES,
    no_structure={
        "none first": "one heap of candidates, no pieces walked in order: an empty piece cannot come "
                      "before the first one",
        "spread": "no scores: access times are compared, never exponentiated or summed",
    },
)
