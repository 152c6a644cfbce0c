"""Problem 14: one continuous-batching step under a token budget -- decodes first, then
chunked prefills, then admissions (chapter 7). The judge sends only valid input (what an
engine passes), because an exception is a failed case to it: checking the input is the
engine's business (mlacourse.engine.scheduler raises ValueError), not graded here."""

from __future__ import annotations

import copy

import numpy as np

from grader.lang import said
from grader.spec import Case, Edge, PASS, Problem, Reason, another_int, fail, load_mistakes, memo_twins
from mlacourse.engine import scheduler

FN = "schedule_step"

STATEMENT = r"""
## Problem 14 — one scheduler step under a token budget

Write `schedule_step(running, waiting, token_budget, max_running=None)`: which requests
run in this engine step, and with how many tokens each.

| argument | what |
|---|---|
| `running` | `[(rid, n_pending, is_decode)]` in arrival order: requests that hold pages. `n_pending >= 1` tokens are known but not yet cached; a decode (`is_decode` True) has exactly 1 |
| `waiting` | `[(rid, n_pending)]` in arrival order: requests without pages, with the tokens they would compute |
| `token_budget` | the most tokens this step may run (>= 1) |
| `max_running` | the most requests that may hold pages (running ones included), or `None` for no limit |

Return the plan, a list of `(rid, n_tokens)`, built in three passes, each in arrival order:

1. **decodes:** every running decode gets 1 token, while budget is left;
2. **prefills under way:** every running request that is not decoding gets
   `min(n_pending, budget left)` tokens, while budget is left (chunked prefill: a long
   prompt is cut to what is left and continues next step);
3. **admissions:** waiting requests are admitted one by one, each with
   `min(n_pending, budget left)`, while budget is left and fewer than `max_running`
   requests (the running ones plus those admitted so far) would hold pages. Admission
   stops at the first request that cannot be admitted (first come, first served).

The plan lists the decodes first, then the prefills, then the admissions. No entry has
0 tokens, and the tokens add up to at most `token_budget`. Input is always valid (unique
ids, decodes with exactly 1 pending token, `max_running` >= 1 and >= the number of
running requests), so you need not check it. A prefill can have a single token left: it
is still a prefill (read `is_decode`).

The judge compares the plan exactly -- order included -- with
the engine's scheduler (`mlacourse.engine.scheduler`) on budgets from 1 to 300, with more decodes
than budget, prompts from 1 to 1200 tokens (longer than the budget, and as long as what is
left of it), and `max_running` from `None` to full.
"""

HINTS = [
    "Keep one counter, left = token_budget, and three loops over the inputs: decodes, then "
    "running prefills, then waiting requests. Each loop only adds an entry while left > 0.",
    "A prefill takes n = min(n_pending, left) and then left -= n -- the budget LEFT, not the whole "
    "token_budget. For admissions also count the requests holding pages: start at len(running), "
    "add 1 per admission, and stop when it reaches max_running (unless it is None).",
]


# ---- the reference ---------------------------------------------------------------------

def reference(running, waiting, token_budget, max_running=None):
    """The engine's scheduler, set up with this step's limits (an adapter: the engine's API is not the problem's)."""
    return scheduler.Scheduler(token_budget, max_running).plan(copy.deepcopy(running), copy.deepcopy(waiting))


# ---- cases -------------------------------------------------------------------------------

def _case(name, running, waiting, budget, max_running=None, hidden=False, seed=None):
    args = {"running": [tuple(r) for r in running], "waiting": [tuple(w) for w in waiting],
            "token_budget": int(budget), "max_running": max_running}
    shown = (f"running={args['running']}, waiting={args['waiting']}, token_budget={budget}, "
             f"max_running={max_running}")
    return Case(name, FN, args, hidden=hidden, seed=seed, describe=shown)


def _public():
    running = [("A", 30, False), ("B", 1, True), ("C", 1, True)]
    waiting = [("D", 50), ("E", 5)]
    return [
        _case("decodes first, then A's prefill is cut to the 38 left", running, waiting, 40),
        _case("budget for everyone: A, then D cut to what is left", running, waiting, 100),
        _case("budget 2: only the two decodes run", running, waiting, 2),
        _case("at most 4 requests may hold pages: only D is admitted", running, waiting, 100, 4),
        _case("nothing running: admissions only, E waits behind D", [], [("D", 50), ("E", 5)], 60),
    ]


class _Ids:
    """Request ids in arrival order that are not their positions ("r17", "r3", ...)."""

    def __init__(self, rng):
        self.ids = [f"r{i}" for i in rng.permutation(200)]

    def take(self, n):
        out, self.ids = self.ids[:n], self.ids[n:]
        return out


def _running(rng, ids, n_decode, prefills):
    """n_decode decodes and the given prefills (pending counts), shuffled into one arrival order."""
    kinds = [True] * n_decode + [False] * len(prefills)
    order = rng.permutation(len(kinds))
    pend = iter(prefills)
    out = []
    for rid, i in zip(ids.take(len(kinds)), order):
        out.append((rid, 1, True) if kinds[i] else (rid, int(next(pend)), False))
    return out


def _waiting(rng, ids, sizes):
    return list(zip(ids.take(len(sizes)), [int(s) for s in sizes]))


def _scenarios(rng, seed):
    h = dict(hidden=True, seed=seed)
    ids = _Ids(rng)
    out = []
    # 1. a prefill that arrived before decodes, cut to the budget left (first hidden case)
    nd = int(rng.integers(2, 6))
    pre = int(rng.integers(20, 60))
    run = [(ids.take(1)[0], pre, False)] + [(r, 1, True) for r in ids.take(nd)]
    out.append(_case("a prefill arrived before the decodes; it gets what they leave", run,
                     _waiting(rng, ids, rng.integers(3, 30, 2)), int(rng.integers(nd + 2, pre)),
                     int(rng.integers(nd + 3, nd + 6)), **h))
    # 2. more decodes than budget
    nd = int(rng.integers(5, 12))
    out.append(_case("more decodes than budget", _running(rng, ids, nd, rng.integers(2, 9, 2)),
                     _waiting(rng, ids, rng.integers(1, 9, 2)), int(rng.integers(1, nd)), None, **h))
    # 3. budget runs out in the middle of the waiting queue; waiting not sorted by size
    sizes = [int(rng.integers(10, 30)), int(rng.integers(2, 8)), int(rng.integers(10, 30)), int(rng.integers(1, 5))]
    run = _running(rng, ids, int(rng.integers(1, 4)), [int(rng.integers(3, 12))])
    budget = len(run) + int(rng.integers(2, 10)) + sizes[0] + sizes[1] + int(rng.integers(1, sizes[2]))
    out.append(_case("the budget runs out among the waiting requests", run, _waiting(rng, ids, sizes),
                     budget, None, **h))
    # 4. max_running already reached by the running requests
    run = _running(rng, ids, int(rng.integers(1, 4)), rng.integers(1, 6, int(rng.integers(1, 3))))
    out.append(_case("max_running reached by the running requests: nobody is admitted", run,
                     _waiting(rng, ids, rng.integers(1, 10, len(run) + 2)), int(rng.integers(60, 300)), len(run),
                     **h))
    # 5. max_running leaves room for some admissions, budget ample
    run = _running(rng, ids, int(rng.integers(1, 4)), rng.integers(1, 6, int(rng.integers(1, 3))))
    extra = int(rng.integers(1, 3))
    out.append(_case("max_running admits some of the waiting requests", run,
                     _waiting(rng, ids, rng.integers(1, 12, extra + int(rng.integers(2, 4)))),
                     int(rng.integers(100, 300)), len(run) + extra, **h))
    # 6. only waiting requests, a budget of 1
    out.append(_case("budget 1, nothing running", [], _waiting(rng, ids, rng.integers(1, 9, 3)), 1,
                     int(rng.integers(2, 6)), **h))
    # 7. everything fits with budget to spare; no waiting requests
    run = _running(rng, ids, int(rng.integers(0, 4)), rng.integers(1, 20, int(rng.integers(1, 4))))
    out.append(_case("everything fits, nobody waits", run, [], int(rng.integers(80, 300)), None, **h))
    # 8. two prefills under way, the second one cut
    run = _running(rng, ids, int(rng.integers(1, 3)), [int(rng.integers(4, 12)), int(rng.integers(20, 40))])
    out.append(_case("the second prefill under way is cut", run, _waiting(rng, ids, rng.integers(1, 9, 2)),
                     len(run) + int(rng.integers(13, 18)), len(run) + 2, **h))
    # 9. a prefill with one token left, between another prefill and a decode
    d1, p1, p2, d2 = ids.take(4)
    run = [(d1, 1, True), (p1, int(rng.integers(2, 20)), False), (p2, 1, False), (d2, 1, True)]
    out.append(_case("a prefill with a single token left is still a prefill", run,
                     _waiting(rng, ids, rng.integers(1, 9, 2)), int(rng.integers(40, 200)), None, **h))
    # 10. prompts past the largest budget: a prefill under way and a waiting prompt, each
    #     longer than a budget near 300, after a few decodes -- one of them takes all that is
    #     left (hundreds of tokens: a chunk capped anywhere below the budget fails)
    budget = int(rng.integers(290, 301))
    nd = int(rng.integers(0, 3))
    big = int(rng.integers(budget + 1, 4 * budget))
    if rng.random() < 0.5:   # the long prompt is under way, or waits behind nothing
        run, wait = _running(rng, ids, nd, [big]), _waiting(rng, ids, [int(rng.integers(budget, 3 * budget))])
    else:
        run, wait = _running(rng, ids, nd, []), _waiting(rng, ids, [big, int(rng.integers(1, 50))])
    out.append(_case("a prompt longer than a budget near 300 gets everything the decodes leave", run, wait,
                     budget, None, **h))
    # 11. a waiting prompt exactly as long as the budget left, then one that would fit alone
    nd = int(rng.integers(1, 4))
    budget = int(rng.integers(100, 301))
    run = _running(rng, ids, nd, [])
    out.append(_case("a prompt exactly as long as the budget left", run,
                     _waiting(rng, ids, [budget - nd, int(rng.integers(1, 9))]), budget,
                     int(rng.integers(nd + 1, nd + 4)), **h))
    return out


def _random(rng, seed, i):
    """Pending counts up to 600, past every budget (1-159) some of the time."""
    ids = _Ids(rng)
    run = _running(rng, ids, int(rng.integers(0, 8)), _lengths(rng, int(rng.integers(0, 4))))
    wait = _waiting(rng, ids, _lengths(rng, int(rng.integers(0, 5))))
    if not run and not wait:
        wait = _waiting(rng, ids, [int(rng.integers(1, 40))])
    mr = None if rng.random() < 0.4 else max(1, len(run) + int(rng.integers(0, 4)))  # valid: >= 1
    return _case(f"random mix {i}", run, wait, int(rng.integers(1, 160)), mr, hidden=True, seed=seed)


def _lengths(rng, n):
    """n pending counts: short ones (1-79) and long prompts (80-600), about half each."""
    return [int(rng.integers(1, 80)) if rng.random() < 0.5 else int(rng.integers(80, 601)) for _ in range(n)]


def make_cases(seed):
    rng = np.random.default_rng(seed)
    cases = _public() + _scenarios(rng, seed) + [_random(rng, seed, i) for i in range(8)]
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check,
                      same_shapes=_renamed, other_shapes=_other_queues)


# ---- memo twins: valid inputs that change one argument, or keep only the sizes ---------

def _fresh_id(args, rng):
    used = {r[0] for r in args["running"]} | {w[0] for w in args["waiting"]}
    while True:
        rid = f"r{int(rng.integers(200, 100_000))}"
        if rid not in used:
            return rid


def _other_running(args, rng):
    """One running request renamed, or a prefill's pending count changed."""
    run = list(args["running"])
    if not run:
        return None
    i = int(rng.integers(len(run)))
    rid, n, is_decode = run[i]
    if is_decode or rng.random() < 0.5:
        run[i] = (_fresh_id(args, rng), n, is_decode)
    else:
        run[i] = (rid, another_int(1, 80)(n, rng), False)
    return run


def _other_waiting(args, rng):
    wait = list(args["waiting"])
    if not wait:
        return None
    i = int(rng.integers(len(wait)))
    rid, n = wait[i]
    wait[i] = (_fresh_id(args, rng), n) if rng.random() < 0.5 else (rid, another_int(1, 80)(n, rng))
    return wait


def _other_max_running(args, rng):
    low = max(1, len(args["running"]))
    options = [m for m in [None, *range(low, low + 4)] if m != args["max_running"]]
    return options[int(rng.integers(len(options)))]


CHANGES = {
    "running": _other_running,
    "waiting": _other_waiting,
    "token_budget": lambda a, rng: another_int(1, 300)(a["token_budget"], rng),
    "max_running": _other_max_running,
}


def _renamed(args, rng):
    """Every request renamed and every pending count redrawn: the same list lengths and
    the same budget (a cache keyed on sizes returns the old plan)."""
    ids = _Ids(rng)
    names = ids.take(len(args["running"]) + len(args["waiting"]))
    run = [(names[i], 1 if d else int(rng.integers(1, 80)), d) for i, (_, _, d) in enumerate(args["running"])]
    wait = [(names[len(run) + i], int(rng.integers(1, 80))) for i in range(len(args["waiting"]))]
    return {**args, "running": run, "waiting": wait}


def _other_queues(args, rng):
    """The same budget and max_running, queues of other lengths (still valid for them)."""
    cap = args["max_running"]
    ids = _Ids(rng)
    n_run = int(rng.integers(0, 6 if cap is None else cap + 1))
    n_decode = int(rng.integers(0, n_run + 1))
    run = _running(rng, ids, n_decode, rng.integers(1, 40, n_run - n_decode))
    wait = _waiting(rng, ids, rng.integers(1, 40, int(rng.integers(1, 5))))
    if (len(run), len(wait)) == (len(args["running"]), len(args["waiting"])):
        wait = wait + _waiting(rng, ids, [int(rng.integers(1, 40))])
    return {**args, "running": run, "waiting": wait}


def check(case, result):
    exp = reference(**case.args)
    if not isinstance(result, (list, tuple)) or not all(
            isinstance(e, (list, tuple)) and len(e) == 2 for e in result):
        return fail(said("{fn} should return a list of (rid, n_tokens) pairs; got {value}.", fn=FN,
                         value=f"{result!r:.120}"), Reason.WRONG_TYPE)
    got = []
    for rid, n in result:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            return fail(said("{fn}: the token count for {rid} should be an int; got {n}.", fn=FN,
                             rid=repr(rid), n=repr(n)), Reason.WRONG_TYPE)
        got.append((rid, int(n)))
    budget = case.args["token_budget"]
    if sum(n for _, n in got) > budget:
        return fail(said("{fn}'s plan {plan} runs {n} tokens; the budget is {budget}.", fn=FN, plan=str(got),
                         n=sum(n for _, n in got), budget=budget))
    zero = [rid for rid, n in got if n <= 0]
    if zero:
        return fail(said("{fn}'s plan {plan} gives {rid} {n} tokens; leave out a request that gets no "
                         "tokens.", fn=FN, plan=str(got), rid=repr(zero[0]), n=dict(got)[zero[0]]))
    if got != exp:
        first = next((i for i, (a, b) in enumerate(zip(got, exp)) if a != b), min(len(got), len(exp)))
        return fail(said("{fn}'s plan is {plan}, expected {want} (first difference at entry {first}).",
                         fn=FN, plan=str(got), want=str(exp), first=first))
    return PASS


MISTAKES = load_mistakes(__file__)

def _exact_fit(a):
    """A waiting prompt admitted whole that uses exactly the budget left."""
    used, pending = 0, dict(a["waiting"])
    for rid, n in reference(**a):
        used += n
        if pending.get(rid) == n and used == a["token_budget"]:
            return True
    return False


def _biggest_entry(a):
    return max((n for _, n in reference(**a)), default=0)


EDGES = [
    Edge("more decodes than budget", lambda a: sum(r[2] for r in a["running"]) > a["token_budget"], kind="limit"),
    Edge("a prefill under way cut to the budget left",
         lambda a: any(not r[2] and (r[0], r[1]) not in reference(**a) and any(p[0] == r[0] for p in reference(**a))
                       for r in a["running"]), kind="limit"),
    Edge("an admission cut to the budget left",
         lambda a: any(w[0] in dict(reference(**a)) and dict(reference(**a))[w[0]] < w[1] for w in a["waiting"]),
         kind="limit"),
    Edge("a prompt exactly as long as the budget left", _exact_fit, kind="limit"),
    Edge("a prompt past a budget near 300 taking hundreds of tokens in one entry",
         lambda a: a["token_budget"] >= 290 and _biggest_entry(a) >= a["token_budget"] - 2
         and any(n > a["token_budget"] for _, n, *_ in a["running"] + a["waiting"]), kind="largest"),
    Edge("a prefill that arrived before a decode",
         lambda a: any(not r[2] and any(s[2] for s in a["running"][i + 1:]) for i, r in enumerate(a["running"])),
         kind="order"),
    Edge("waiting prompts not sorted by length",
         lambda a: len(a["waiting"]) >= 3 and [w[1] for w in a["waiting"]] != sorted(w[1] for w in a["waiting"])
         and [w[1] for w in a["waiting"]] != sorted((w[1] for w in a["waiting"]), reverse=True), kind="order"),
    Edge("max_running None", lambda a: a["max_running"] is None),
    Edge("max_running reached with budget left",
         lambda a: a["max_running"] is not None and a["waiting"]
         and len(a["running"]) + sum(w[0] in dict(reference(**a)) for w in a["waiting"]) == a["max_running"]
         and sum(n for _, n in reference(**a)) < a["token_budget"], kind="limit"),
    Edge("nothing running", lambda a: not a["running"], kind="none"),
    Edge("nobody waiting", lambda a: not a["waiting"], kind="none"),
    Edge("token_budget 1", lambda a: a["token_budget"] == 1, kind="one"),
    Edge("a prefill with one pending token before a decode, after another prefill",
         lambda a: any(not r[2] and r[1] == 1 and any(not s[2] for s in a["running"][:i])
                       and any(s[2] for s in a["running"][i + 1:]) for i, r in enumerate(a["running"])),
         kind="one"),
]

PROBLEM = Problem(
    number=14, slug="schedule_step", title="One scheduler step under a token budget",
    summary="one continuous-batching step: decodes, chunked prefills, admissions",
    chapter="notebooks/07_inference_engine.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    timeout_s=5.0, memory_mb=512,
    reference={FN: reference}, edges=EDGES,
    no_structure={
        "none first": "the passes keep one counter (the budget left), which starts full: no piece "
                      "before the first can leave it in a state that breaks later ones",
        "spread": "no scores: token counts, compared exactly",
        "ties": "no ranking by value: the order is arrival order, which the arguments give",
    },
)
