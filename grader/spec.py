"""The problem-spec format, and the comparison helpers every spec's checker uses.

A problem is one folder, grader/problems/pNN_slug/ (grader/problems/__init__.py lists what
it holds): its spec, spec.py, a module that defines ``PROBLEM``; its named mistakes,
mistakes.diff, each a learner-style file written as its change to a right one, learner.py
(``load_mistakes``, grader/slips.py); its stub template, stub.py; and its corpus. The judge
finds the specs by scanning grader/problems/. What is derived from them (the stub in
practice/, README's rows, the chapters' practice lists, the guides, the catalogues) is
written by ``python -m authoring regenerate``; CONTRIBUTING.md says what a new problem takes,
and tests/test_problem_checklist.py fails for each step left out.

How the judge uses a spec
-------------------------
1. ``make_cases(seed)`` builds the cases in the judge's process. ``seed`` is the
   problem's own stream of the run's secret seed (grader/seeds.py: 128 bits, hashed
   with the problem's number). Public cases should not depend on it (so the learner
   sees the same examples every run); hidden cases draw their data from
   ``numpy.random.default_rng(seed)`` and may record it in ``Case.seed``, but never
   write it into a text (``describe``, a name, a message): the report decides where
   the run's seed is shown (a learner's own run prints ``--seed N`` to rerun it; a
   class graded with ``--hide-seed`` shows it nowhere). They hold only input
   the statement allows (tests/test_judge_sweeps.py runs the reference on many seeds),
   every edge, and the twins of ``memo_twins`` (last line of every ``make_cases``).
2. Each case's ``args`` are sent to a fresh child process, which imports the learner's
   file and calls ``function(**args)``. Only plain data comes back: numpy arrays (torch
   tensors are converted in the child), numbers, strings, lists/tuples/dicts of those.
   The child also reports an exception, a timeout, a crash, running out of memory, a
   changed argument (every argument is compared deeply, lists and what they hold
   included), or a reach for the course's own code (importing or reading
   mlacourse/, grader/, solutions/ or kernels/ is refused; ``may_import`` lists the
   data an attempt may import instead).
3. ``check(case, result)`` runs in the judge's process on that returned data and gives a
   ``Verdict``. It must compare against the math core (``mlacourse``) -- computed here,
   or stored in ``Case.expected`` by ``make_cases`` -- never against solutions/.
4. When some cases fail, a ``Mistake`` is named only if it reproduces the attempt on
   EVERY case of its function: its file's answer (run in the judge's process: course
   code) equals the learner's (``same_answer`` or its ``match``) wherever the learner
   fails, it raises where the learner's raised, and its answer passes wherever the
   learner passes. So a mistake that merely coincides with the attempt on one case says
   nothing, and the cases must hold, for each pair of mistakes, one where their outputs
   differ (tests/test_judge_specs.py grades each mistake's file and requires the judge to
   name exactly that mistake; tests/test_judge_corpus.py does it through the real judge).

Field reference
---------------
Problem(number, slug, title, chapter, functions, statement, hints, make_cases, check,
        mistakes=(), requires=("numpy",), timeout_s=5.0, memory_mb=1024, reference=None,
        may_import={}, kernel=None, edges=(), fixed={}, normalises_rows=False,
        may_change_inputs={}, no_twin={}, no_structure={})
  number      1..99, the id used everywhere (stub, notebook, solution, judge).
  slug        snake_case name; the files are pNN_slug.py.
  chapter     the notebook that teaches it, e.g. "notebooks/04_flops_and_path_choice.ipynb".
  functions   names the learner's file must define, in the order they are taught.
  statement   learner-facing markdown: what to write, shapes, rules, tolerances.
  hints       revealed one at a time by ``judge.py --hint``; gentle first, specific last.
  make_cases  seed -> list[Case].
  check       (case, result) -> Verdict. ``result`` is what the child returned.
  summary     one line for the tables, the chapters' practice lists and the stub ("merge
              partial attention results by log-sum-exp"): no capital, no full stop.
  mistakes    ``load_mistakes(__file__)``: the slips the verdict can name, one entry each
              of the folder's mistakes.diff.
  requires    modules needed to run the problem (("torch", "triton") for a GPU kernel);
              if one is missing the judge says so instead of grading.
  timeout_s   wall-clock seconds per case (override per case with Case.timeout_s).
  memory_mb   what the attempt's process may hold beyond the interpreter and its imports
              (grader/plan.py); a case with a budget of its own (Case.memory_mb) runs alone.
  reference   {function name: callable from mlacourse}, one per function; the judge's
              tests check that it passes every case on several seeds.
  may_import  {module: [names]} of the course the attempt may import: plain data only
              (dataclass instances arrive as read-only records of their fields).
  kernel      KernelContract(name, launcher): the answer must be a Triton kernel's (problem 12).
              Besides running the attempt's function, the judge launches the file's kernel
              ``name`` itself with the spec's ``launcher(kernel, **args)``, in a process where
              no other line of the file runs (grader/child/kernel.py); a case passes only
              when both answers do.
  edges       Edge(name, holds(args), kind=...): situations the statement promises ("an
              empty split", "T = 1", "one head") and the structural extremes it allows
              (``kind``, one of STRUCTURE); some HIDDEN case of every seed must hold each
              (tests/test_judge_specs.py checks 51 seeds, tests/test_judge_sweeps.py 1000 in CI).
  no_structure  {kind: why}: the kinds of STRUCTURE this statement allows no extreme of
              ("no ids: the arguments are arrays of floats"). Every other kind is the
              ``kind`` of some edge -- the rule below, checked by a test.
  fixed       {"arg" or "arg.axisN": why}: parameters the contract fixes. Every other one
              takes two or more values among one seed's hidden cases (a test checks).
  normalises_rows  the answer softmaxes or log-sum-exp-merges per row: the edges must
              include ``uneven_rows_edge`` (rows near +750 and near -750 in one case, so one
              array-wide maximum fails) and ``wide_row_edge`` (scores hundreds apart inside
              one row, the largest last: a maximum taken from a first tile or part, or a mean
              subtracted instead of the maximum, overflows), and the statement must say "stable".
  no_twin     {"arg" or "function.arg": why}: arguments memo_twins cannot change alone (the
              answer does not depend on it, or a valid input cannot change it without another). For every
              other argument some hidden case of every seed is a twin that changes only it
              (tests/test_judge_specs.py runs memoising attempts to check).
  may_change_inputs  {arg: why} the contract lets an attempt change in place (problem 13:
              the engine's allocator works on its lists); the statement then says so
              itself. Every other problem gets INPUTS_RULE appended to its statement, and
              the judge fails any case whose arguments changed (deep comparison in the
              child, naming the place: ``waiting[2]``, ``running`` (order), ``q[3, 1]``).

Case(name, function, args, hidden=False, seed=None, describe="", expected=None,
     data={}, timeout_s=None, memory_mb=None, memory_error_message=None, timeout_message=None)
  args        keyword arguments for the learner's function (numpy arrays, numbers, str).
  describe    shapes in words; shown with a failure ("q_nope [4, 8], T=17"). Never the seed.
  expected    optional precomputed reference answer for ``check`` to use.
  data        anything else ``check`` needs (names of dims, tolerances, ...); ``{"no_twin":
              True}`` keeps memo_twins from redrawing this case's values.
  memory_mb   a tighter memory cap for this case only; if the call then raises
              MemoryError, the case fails with ``memory_error_message`` (used by
              absorb_decode to catch attempts that materialize per-head keys).
  timeout_message  what a timeout on this case means, when the case is built to be slow
              for a forbidden method (absorb_decode: expanding K/V even in chunks).

Shared helpers for hidden cases (use them; tests/test_judge_specs.py holds every spec to them)
-------------------------------------------------------------------------------------------
  memo_twins(cases, rng, changes, reference=, check=)  appends to the hidden cases, per
              function, a "same shapes, new values" twin and, for each argument in
              ``changes``, a twin that changes only that argument, each kept only where
              the original's answer fails the twin's check; then a repeat of an original
              after its twins, all at seeded random places after their originals. An
              attempt that caches its answer (or an intermediate) by shapes, or by some of
              its arguments, then fails on every seed. ``changes``: {arg: fn(args, rng) ->
              another valid value of that argument (same shape), or None}.
              ``other_shapes(args, rng)``: optional, a twin with the same scalar
              arguments and other sizes (catches chunk bounds cached by chunk).
              ``changes_of(n=another_int(1, 9), gpu=another(GPUS))`` builds ``changes``
              from pickers of a new value given the current one.
  new_values(x, rng)  an array of x's shape and dtype with other finite values (NaN and
              infinities stay where they were: they encode poisoned slots, empty parts).
  uneven_rows_edge(row_max)  the Edge for ``normalises_rows``; ``row_offsets(rng, shape)``
              draws per-row offsets with one row at +750 and one at -750 to build it.
  wide_row_edge(row_scores)  the other Edge for ``normalises_rows``: one row's scores (or
              parts' lses) hundreds apart, the largest after all the others;
              ``wide_row(n, rng)`` draws such a row of target scores.
  describe_args(args)  a case's arguments in words (shapes for arrays).

Structural extremes: the rule
-----------------------------
For each parameter AND each structural property a statement allows, every seed's hidden
cases include its extremes. Parameters: the "two values per axis" test and ``fixed``.
Structure: the kinds of STRUCTURE below -- ids out of order, an empty piece before the
first full one, rows whose scores are hundreds apart, lengths past every budget / top-k /
page / pool, ties and near-ties at the statement's precision, nothing at all, a single
element, the largest sizes allowed. Each problem declares, for every kind, either edges of
that kind (``Edge(..., kind="order")``: some hidden case of EVERY seed holds each) or,
in ``no_structure``, why its statement allows no such extreme. A generator that draws an
extreme only on some seeds (a random tree that is sometimes shuffled, a prompt that is
sometimes long) lets a slip there pass on the others; so build each extreme on purpose,
and say it as an edge, so that the test proves it on every seed.

A named mistake: an entry of grader/problems/pNN_slug/mistakes.diff (see load_mistakes)
  A slip a learner really makes, written as that learner would: its file (the entry,
  expanded: grader/slips.py) defines the ONE function of the problem the slip is in, is
  otherwise right, imports from the course only what ``may_import`` allows (the corpus test
  grades it as an attempt), and opens with its header. The entry is that header and the
  slip, as a change to learner.py (a right answer in the same style; another base is named
  with ``from``):
      === row_sums.py
      mistake: row sums
      message: You summed each row; sum down the columns (axis 0).
      @@
      -    return np.sum(x, axis=0) * scale
      +    return np.sum(x, axis=1) * scale
  mistake     its name (the entry is named after it: mistake_file_name), for teachers
              (gradebook, docs/teaching.md); message: what the verdict tells the learner
              ("Likely slip: ..."), continued on lines that start with two spaces.
  reason      optional: the verdict's reason when it is not a wrong answer (not_finite, ...).
  match       optional: a name in MATCHES, for slips whose exact output varies from one
              learner to another (``non-finite rows``: an overflow's NaN/inf pattern).
  It becomes Mistake(name, message, fn, function, match, source): ``fn`` runs the file's
  function (``source``, the expanded text, compiled in the judge's process). Only where running the files is too slow does the spec pass ``models``
  ({name: fn(**case.args) -> the wrong answer, or None where the slip changes nothing})
  and say why (problem 12: Triton kernels). A test's toy problem may build
  Mistake(name, message, fn) directly.

Complete example (a toy problem; real ones live in grader/problems/, in this order)
--------------------------------------------------------------------------------------
    # grader/problems/p99_scaled_sum/spec.py
    '''Problem 99: scaled column sums (chapter 1).'''
    from __future__ import annotations

    import numpy as np

    from grader.spec import Case, Edge, Problem, compare_arrays, load_mistakes, memo_twins, new_values, shape_text

    FN = "scaled_sum"
    STATEMENT = "Write `scaled_sum(x, scale)`: x [n, d] -> [d], the column sums times scale."
    HINTS = ["Sum over axis 0.", "np.sum(x, axis=0) * scale"]


    def reference(x, scale):                       # normally: a function of mlacourse
        return np.asarray(x).sum(axis=0) * scale


    def make_cases(seed):
        cases = [Case("small example", FN, {"x": np.arange(6.0).reshape(3, 2), "scale": 0.5},
                      describe="x [3, 2], scale 0.5")]
        rng = np.random.default_rng(seed)
        for i, (n, d) in enumerate([(1, 7), (30, 2), (5, 5)]):
            x = rng.standard_normal((n, d))
            cases.append(Case(f"random {i}", FN, {"x": x, "scale": float(rng.uniform(0.1, 2))},
                              hidden=True, seed=seed,
                              describe=shape_text(x=x)))
        return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check)


    # each argument changed alone: an answer cached on the other one fails
    CHANGES = {"x": lambda a, rng: new_values(a["x"], rng), "scale": lambda a, rng: 2 * a["scale"]}


    def check(case, result):
        return compare_arrays(FN, reference(**case.args), result, rtol=1e-6, atol=1e-9, dims="[d]")


    MISTAKES = load_mistakes(__file__)             # mistakes.diff, below
    EDGES = [Edge("a single row", lambda a: a["x"].shape[0] == 1, kind="one")]   # hidden case "random 0"

    PROBLEM = Problem(
        number=99, slug="scaled_sum", title="Scaled column sums",
        summary="the column sums of x, times scale", chapter="notebooks/01_kv_cache.ipynb",
        functions=[FN], statement=STATEMENT, hints=HINTS,
        make_cases=make_cases, check=check, mistakes=MISTAKES,
        reference={FN: reference}, edges=EDGES,
        no_structure={                             # every other kind of STRUCTURE, and why
            "none": "x has a row and a column: the statement allows no empty array",
            "none first": "one sum per column: nothing is walked in pieces",
            "order": "rows are summed: their order is not part of the contract",
            "spread": "no softmax: sums never overflow at these sizes",
            "limit": "no budget, page or top-k to reach",
            "ties": "float sums compared with a tolerance: no ranking",
            "largest": "the statement names no largest size",
        },
    )

    # grader/problems/p99_scaled_sum/stub.py
    def scaled_sum(x, scale):
        '''x [n, d], scale: float -> [d]: the column sums times scale.'''
        # TODO(problem 99): sum down the columns, times scale.
        raise NotImplementedError("problem 99 (scaled_sum) is not written yet")

    # grader/problems/p99_scaled_sum/learner.py
    '''A right answer in a learner's style: the base of mistakes.diff.
    '''
    import numpy as np


    def scaled_sum(x, scale):
        return np.sum(x, axis=0) * scale

    # grader/problems/p99_scaled_sum/mistakes.diff
    === row_sums.py
    mistake: row sums
    message: You summed each row; sum down the columns (axis 0).
    @@
    -    return np.sum(x, axis=0) * scale
    +    return np.sum(x, axis=1) * scale           # the slip: axis 1
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .lang import N_, said, said_lines
from .reasons import Reason

__all__ = [
    "Case", "Edge", "Mistake", "Problem", "Verdict", "Reason", "PASS", "fail",
    "compare_arrays", "compare_scalar", "compare_choice", "compare_dict",
    "same_answer", "shape_text", "as_array", "type_name", "load_mistakes", "read_header", "read_header_text",
    "same_nonfinite_rows",
    "INPUTS_RULE", "UNEVEN_ROWS", "WIDE_ROW", "STRUCTURE", "memo_twins", "new_values", "uneven_rows_edge",
    "row_offsets", "wide_row_edge", "wide_row",
    "describe_args", "another", "another_int", "changes_of",
]

# Said once, in every statement whose problem does not declare may_change_inputs.
INPUTS_RULE = N_(
    "**Inputs are read-only.** Do not change any argument in place -- an array, a list, or "
    "anything inside one: the caller still needs them. The judge hands numpy arrays over "
    "read-only where the system allows it (an in-place write such as `x *= 2` then raises), "
    "and compares every other argument before and after each call (a change put back before "
    "returning cannot be seen, and is not counted). Write `x = x * 2`, not `x *= 2`; "
    "`sorted(xs)` or `list(xs)`, not `xs.sort()` or `xs.pop()`.")


# --------------------------------------------------------------------------- records

@dataclass
class Case:
    name: str
    function: str
    args: dict
    hidden: bool = False
    seed: int | None = None
    describe: str = ""
    expected: Any = None
    data: dict = field(default_factory=dict)
    timeout_s: float | None = None
    memory_mb: int | None = None
    memory_error_message: str | None = None
    timeout_message: str | None = None


@dataclass
class Verdict:
    """The checker's judgement of one result. ``reason`` is a short tag for tools
    (Reason.WRONG_ANSWER, WRONG_SHAPE, WRONG_TYPE, NOT_FINITE); ``message`` is what the
    learner reads, made with ``said`` so that it can be shown in their language."""
    passed: bool
    message: str = ""
    reason: Reason = Reason.WRONG_ANSWER

    def __post_init__(self):
        self.reason = Reason(self.reason)   # a misspelt tag raises here, in the checker


PASS = Verdict(True, "", Reason.PASSED)


def fail(message: str, reason: Reason = Reason.WRONG_ANSWER) -> Verdict:
    return Verdict(False, message, reason)


@dataclass
class Mistake:
    """A slip the verdict can name. Course problems load theirs with ``load_mistakes``: one
    learner-style file each (an entry of the problem's mistakes.diff, expanded), whose header
    holds the name and the message and whose function gives the wrong answer. (A toy
    problem in a test may pass ``fn`` directly.)"""
    name: str
    message: str
    fn: Callable[..., Any] | None = None  # fn(**case.args) -> the wrong answer; None: run the file
    function: str | None = None           # the learner function it imitates (None: found by Problem)
    match: Callable[[Any, Any], bool] | None = None
    source: str | None = None             # its learner-style file's text (the entry, expanded)
    where: str = ""                       # "p02_rope_scores/mistakes.diff: scale_by_d_nope.py"
    defines: tuple = ()                   # the top-level functions that file defines

    @property
    def file_name(self) -> str:
        """The name its file has where it is written out (mistake_file_name of its name)."""
        return mistake_file_name(self.name)

    @property
    def runs_file(self) -> bool:
        """Is its answer computed by running its file (not a model, not a toy's fn)?"""
        return isinstance(self.fn, _FileAnswer)

    @property
    def header(self) -> dict:
        """Its file's header (mistake, message, and reason or match where it has them)."""
        return read_header_text(self.source, MISTAKE_KEYS) if self.source is not None else {}

    @property
    def runs_file(self) -> bool:
        """Is its answer computed by running its file (not a model, not a toy's fn)?"""
        return isinstance(self.fn, _FileAnswer)


@dataclass
class Edge:
    """A situation the statement promises to test ("an empty split", "T = 1"), or one of
    the structural extremes it allows (``kind``, a key of STRUCTURE): some hidden case of
    every seed must satisfy ``holds(case.args)`` (tests/test_judge_specs.py checks it), so
    an attempt that gets it wrong fails on every seed, not on some."""
    name: str
    holds: Callable[[dict], bool]
    function: str | None = None
    kind: str | None = None   # a key of STRUCTURE; None: a promised situation, not an extreme


# The kinds of structural extreme (the rule in the module's docstring). Every problem declares, for each kind, edges
# of that kind or why its statement allows none (Problem.no_structure); a test checks both.
STRUCTURE = {
    "one": "a single element where the statement allows many: one head, one token, one key, "
           "one part, one node, top-k 1",
    "none": "nothing at all where the statement allows it: an empty sequence, split, part or "
            "queue, a row of -1 only, n_needed 0, n_new 0",
    "none first": "an empty piece BEFORE the first non-empty one, where a running state (a "
                  "maximum, a count) starts: a tile of -1 only first, an empty first part",
    "order": "ids, positions or pages in an order the statement does not promise: shuffled, "
             "descending, parents after their children, roots anywhere, -1 as an index",
    "spread": "scores hundreds apart inside one row (the largest after the others) and between rows",
    "limit": "lengths at and past every limit the statement names: a budget, top-k, a page, "
             "a pool, a chunk",
    "ties": "exact ties, and near-ties a narrower float cannot separate, at the statement's precision",
    "largest": "the largest sizes and values the statement allows",
}


TORCH_STACK = ("torch", "triton")   # the modules that make a problem need_torch


@dataclass(frozen=True)
class KernelContract:
    """A problem whose point is a Triton kernel: the file's ``@triton.jit`` function ``name``
    is launched by the judge with ``launcher(kernel, **case.args) -> answer`` (a function of
    the spec, sent to the sandbox as its source: it may use only torch, triton and numpy)."""
    name: str
    launcher: Callable

    def launcher_source(self) -> str:
        import inspect
        import textwrap
        return textwrap.dedent(inspect.getsource(self.launcher))


@dataclass
class Problem:
    number: int
    slug: str
    title: str
    chapter: str
    functions: Sequence[str]
    statement: str
    hints: Sequence[str]
    make_cases: Callable[[int], list]
    check: Callable[[Case, Any], Verdict]
    mistakes: Sequence[Mistake] = ()
    requires: Sequence[str] = ("numpy",)
    timeout_s: float = 5.0
    memory_mb: int = 1024
    reference: dict | None = None
    may_import: dict = field(default_factory=dict)   # {"mlacourse.hardware": ["GPUS"]}: data only
    kernel: "KernelContract | None" = None  # the answer must come from this Triton kernel
    edges: Sequence[Edge] = ()         # situations the hidden cases must always include
    fixed: dict = field(default_factory=dict)  # {"arg" or "arg.axisN": why it never varies}
    normalises_rows: bool = False      # softmax / lse merge per row: needs uneven_rows_edge
    no_twin: dict = field(default_factory=dict)  # {"arg" / "fn.arg": why no twin changes it alone}
    may_change_inputs: dict = field(default_factory=dict)  # {arg: why in-place changes are allowed}
    no_structure: dict = field(default_factory=dict)  # {STRUCTURE kind: why the statement allows none}
    summary: str = ""                  # one line for the tables and the stub: "merge partial ... by log-sum-exp"

    def __post_init__(self):
        # the read-only rule, from one place (idempotent: dataclasses.replace runs this again)
        if not self.may_change_inputs and INPUTS_RULE not in self.statement:
            self.statement = self.statement.rstrip() + "\n\n" + INPUTS_RULE + "\n"
        for m in self.mistakes:
            _attach(m, self.functions)

    @property
    def filename(self) -> str:
        """The learner's file (practice/pNN_slug.py) and the model answer's (solutions/)."""
        return f"{self.stem}.py"

    @property
    def stem(self) -> str:
        """"p04_choose_path": the problem's folder under grader/problems/, and its files' name."""
        return f"p{self.number:02d}_{self.slug}"

    @property
    def needs_torch(self) -> bool:
        """Needs torch and Triton (a GPU kernel; on a CPU, Triton's interpreter), from
        ``requires``: the one place that decides it. Such a problem cannot run in the
        browser, is left out of a --without-torch Gradescope zip, and gets the sandbox's
        larger start-up time, memory and process allowances."""
        return any(m in TORCH_STACK for m in self.requires)

    def mistakes_for(self, function: str):
        return [m for m in self.mistakes if (m.function or self.functions[0]) == function]


# --------------------------------------------------------------------------- helpers

def type_name(x) -> str:
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def shape_text(**arrays) -> str:
    """'q_nope [4, 8], c_kv [17, 16]' for the arrays (or scalars) given."""
    parts = []
    for k, v in arrays.items():
        shp = np.shape(v)
        parts.append(f"{k} [{', '.join(map(str, shp))}]" if shp else f"{k}={v!r}")
    return ", ".join(parts)


def as_array(got, name: str = "result"):
    """Turn an array-like answer into a float64 ndarray, or return a Verdict saying why not."""
    arr = _numeric_array(got, name)
    return arr if isinstance(arr, Verdict) else arr.astype(np.float64)


def _numeric_array(got, name):
    """The answer as a numeric ndarray in its own dtype, or a Verdict saying why not."""
    if isinstance(got, dict) and "__unsupported__" in got:
        return fail(said("{name} returned an object of type {type}; return a numpy array (or a "
                         "torch tensor).", name=name, type=got["__unsupported__"]), Reason.WRONG_TYPE)
    if got is None:
        return fail(said("{name} returned None; did you forget a `return`?", name=name), Reason.WRONG_TYPE)
    if isinstance(got, (str, bytes, dict, set)):
        return fail(said("{name} returned a {type}; expected an array of numbers.", name=name,
                         type=type_name(got)), Reason.WRONG_TYPE)
    try:
        arr = np.asarray(got)
    except Exception as e:  # ragged lists and the like
        return fail(said("{name} returned something numpy cannot read as an array ({error}).",
                         name=name, error=str(e)), Reason.WRONG_TYPE)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        return fail(said("{name} returned an array of {dtype}; expected numbers.", name=name,
                         dtype=str(arr.dtype)), Reason.WRONG_TYPE)
    if np.iscomplexobj(arr):
        return fail(said("{name} returned complex numbers; expected real ones.", name=name), Reason.WRONG_TYPE)
    return arr


def _fmt(x) -> str:
    return f"{x:.6g}" if isinstance(x, (float, np.floating)) else repr(x)


def _pair(e, g) -> str:
    """'expected vs got' with enough digits that the two never look the same."""
    a, b = _fmt(e), _fmt(g)
    if a == b:
        a, b = f"{e:.17g}", f"{g:.17g}"
    return f"{a} vs {b}"


def _index(flat_i: int, shape) -> str:
    return str(tuple(int(i) for i in np.unravel_index(flat_i, shape))) if shape else "()"


def _nonfinite_mismatch(name, exp, arr) -> Verdict | None:
    """Non-finite values must match exactly: NaN where NaN is expected, and an infinity of
    the same sign where one is expected (the lse of an empty split is -inf, and no finite
    number, however negative, stands in for it). None when they all match."""
    exp_bad = ~np.isfinite(exp)
    same_kind = (np.isnan(arr) & np.isnan(exp)) | (np.isinf(exp) & (arr == exp))
    wrong = exp_bad & ~same_kind
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        return fail(said("{name}: {n} of {total} positions where the reference is not finite differ "
                         "(first at index {index}: expected {expected}, got {got}). Non-finite values "
                         "must match exactly: -inf is the lse of no keys at all (an empty split or "
                         "sequence), and no finite number stands in for it.", name=name,
                         n=int(wrong.sum()), total=int(exp_bad.sum()), index=_index(i, exp.shape),
                         expected=str(exp.flat[i]), got=_fmt(arr.flat[i])), Reason.NOT_FINITE)
    got_bad = ~np.isfinite(arr) & np.isfinite(exp)
    if got_bad.any():
        i = int(np.flatnonzero(got_bad)[0])
        n_nan, n_inf = int(np.isnan(arr).sum()), int(np.isinf(arr).sum())
        return fail(said("{name} contains {n_nan} NaN and {n_inf} inf values of {size} (first at "
                         "index {index}: expected {expected}, got {got}).", name=name, n_nan=n_nan,
                         n_inf=n_inf, size=arr.size, index=_index(i, arr.shape),
                         expected=_fmt(exp.flat[i]), got=_fmt(arr.flat[i])), Reason.NOT_FINITE)
    return None


def compare_arrays(name: str, expected, got, *, rtol: float = 1e-5, atol: float = 0.0,
                   dims: str | None = None, max_show: int = 3) -> Verdict:
    """FlashMLA-style comparison of an array answer against the reference.

    Non-finite expected values must be matched exactly (NaN by NaN, an infinity by the same
    infinity); the finite ones pass when |got - expected| <= atol + rtol * |expected|. A
    failure message names the worst absolute and relative errors and where they are, the
    tolerance, how many elements are within it, the cosine difference, the first
    mismatching values, and the answer's dtype when a narrower float explains the misses.
    ``dims`` (e.g. "[n_heads, d_v]") names the expected shape."""
    exp = np.asarray(expected, dtype=np.float64)
    raw = _numeric_array(got, name)
    if isinstance(raw, Verdict):
        return raw
    with np.errstate(invalid="ignore", over="ignore"):
        arr = raw.astype(np.float64)
    if arr.shape != exp.shape:
        want = f"{dims} = {tuple(exp.shape)}" if dims else str(tuple(exp.shape))
        return fail(said("{name} returned shape {shape}, expected {want}.", name=name,
                         shape=str(tuple(arr.shape)), want=want), Reason.WRONG_SHAPE)
    anomaly = _nonfinite_mismatch(name, exp, arr)
    if anomaly is not None:
        return anomaly
    finite = np.isfinite(exp)
    with np.errstate(invalid="ignore"):
        abs_err = np.where(finite, np.abs(arr - exp), 0.0)
    ok = ~finite | (abs_err <= atol + rtol * np.abs(exp))
    if ok.all():
        return PASS
    return fail(_mismatch_report(name, exp, arr, raw.dtype, abs_err, ok, rtol, atol, max_show))


def _mismatch_report(name, exp, arr, dtype, abs_err, ok, rtol, atol, max_show) -> str:
    nonzero = np.isfinite(exp) & (exp != 0)
    lines = [said("{name} does not match the reference.", name=name)]
    ia = int(np.argmax(abs_err))
    where_abs = dict(abs=f"{abs_err.flat[ia]:.3g}", at=_index(ia, exp.shape))
    if nonzero.any():
        rel = np.where(nonzero, abs_err / np.where(nonzero, np.abs(exp), 1.0), 0.0)
        ir = int(np.argmax(rel))
        line = said("  max abs error {abs} at index {at}; max rel error {rel} at index {rel_at}",
                    rel=f"{rel.flat[ir]:.3g}", rel_at=_index(ir, exp.shape), **where_abs)
        max_rel = float(rel.flat[ir])
    else:
        line = said("  max abs error {abs} at index {at}; relative error undefined (every expected "
                    "value is 0)", **where_abs)
        max_rel = np.inf
    lines.append(line)
    finite = np.isfinite(exp)
    x, y = exp[finite], arr[finite]
    nx, ny = float(np.sqrt((x * x).sum())), float(np.sqrt((y * y).sum()))
    if nx > 0 and ny > 0:
        cos = said("cosine difference {value}", value=f"{1.0 - float((x * y).sum()) / (nx * ny):.3g}")
    elif nx == 0 and ny == 0:
        cos = said("both all zeros")
    else:
        cos = said("expected all zeros") if nx == 0 else said("your answer is all zeros")
    lines.append(said("  tolerance |got - expected| <= {atol} + {rtol} * |expected|: {n} of {size} "
                      "elements within it; {cos}", atol=f"{atol:g}", rtol=f"{rtol:g}", n=int(ok.sum()),
                      size=ok.size, cos=cos))
    lines.append(said("  first mismatches (index: expected vs got):"))
    for i in np.flatnonzero(~ok)[:max_show]:
        lines.append(f"    {_index(int(i), exp.shape)}: {_pair(exp.flat[i], arr.flat[i])}")
    if np.issubdtype(dtype, np.floating) and np.dtype(dtype).itemsize < 8 and max_rel < 1e-2:
        digits = {2: said("about 3"), 4: said("about 7")}.get(np.dtype(dtype).itemsize, said("fewer"))
        lines.append(said("  Your answer is {dtype} ({digits} significant digits) and the misses are "
                          "small: this check needs rtol {rtol}, so keep the computation in float64, "
                          "like the inputs.", dtype=np.dtype(dtype).name, digits=digits, rtol=f"{rtol:g}"))
    return said_lines(lines)


def compare_scalar(name: str, expected, got, *, rtol: float = 1e-9, atol: float = 0.0,
                   unit: str = "") -> Verdict:
    """One number (int or float accepted), relative tolerance by default. A non-finite
    expected value must be matched exactly."""
    if isinstance(got, bool) or not isinstance(got, (int, float, np.integer, np.floating)):
        if isinstance(got, np.ndarray) and got.size == 1 and got.dtype.kind in "iuf":
            got = got.item()
        else:
            return fail(said("{name} should be a number; got {type} {value}.", name=name,
                             type=type_name(got), value=f"{got!r:.80}"), Reason.WRONG_TYPE)
    got = float(got)
    exp = float(expected)
    if not math.isfinite(exp):
        if got == exp or (math.isnan(exp) and math.isnan(got)):
            return PASS
        return fail(said("{name}: expected {expected}, got {got}; a non-finite value must be matched "
                         "exactly.", name=name, expected=f"{exp}{unit}", got=f"{got:.10g}{unit}"), Reason.NOT_FINITE)
    if not math.isfinite(got):
        return fail(said("{name} is {got}; expected {expected}.", name=name, got=str(got),
                         expected=f"{exp:.6g}{unit}"), Reason.NOT_FINITE)
    err = abs(got - exp)
    if err <= atol + rtol * abs(exp):
        return PASS
    ratio = said(" (got/expected = {ratio})", ratio=f"{got / exp:.4g}") if exp else ""

    def show(v):  # whole numbers in full, with thousands separators
        return f"{int(v):,}" if v.is_integer() and abs(v) < 1e18 else f"{v:.10g}"
    a, b = show(exp), show(got)
    if a == b:
        a, b = f"{exp:.17g}", f"{got:.17g}"
    return fail(said("{name}: expected {expected}, got {got}{ratio}; tolerance {atol} + {rtol} * "
                     "|expected|.", name=name, expected=f"{a}{unit}", got=f"{b}{unit}", ratio=ratio,
                     atol=f"{atol:g}", rtol=f"{rtol:g}"))


def compare_choice(name: str, expected: str, got, choices: Sequence[str]) -> Verdict:
    """A string answer from a fixed set."""
    if not isinstance(got, str):
        return fail(said("{name} should return one of {choices}; got {type} {value}.", name=name,
                         choices=str(list(choices)), type=type_name(got), value=f"{got!r:.80}"), Reason.WRONG_TYPE)
    if got not in choices:
        return fail(said("{name} returned {got}; it must be one of {choices}.", name=name, got=repr(got),
                         choices=str(list(choices))), Reason.WRONG_TYPE)
    if got != expected:
        return fail(said("{name} returned {got}, expected {expected}.", name=name, got=repr(got),
                         expected=repr(expected)))
    return PASS


def compare_out_lse(name: str, expected, got, *, rtol: float, atol: float,
                    out_dims: str, lse_dims: str) -> Verdict:
    """An attention result returned as the pair (out, lse): checks the pair's form, then
    out, then lse, each with compare_arrays. `expected` is the reference's (out, lse)."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        size = said(" of length {n}", n=len(got)) if isinstance(got, (tuple, list)) else ""
        return fail(said("{name} should return a pair (out, lse); got a {type}{size}.", name=name,
                         type=type_name(got), size=size), Reason.WRONG_TYPE)
    v = compare_arrays(f"{name} out", expected[0], got[0], rtol=rtol, atol=atol, dims=out_dims)
    if not v.passed:
        return v
    return compare_arrays(f"{name} lse", expected[1], got[1], rtol=rtol, atol=atol, dims=lse_dims)


def compare_dict(name: str, expected: dict, got, compare_value: Callable[[str, Any, Any], Verdict]) -> Verdict:
    """A dict with exactly the expected keys; each value compared by compare_value(label, exp, got)."""
    if not isinstance(got, dict) or "__unsupported__" in got:
        shown = got.get("__unsupported__") if isinstance(got, dict) else type_name(got)
        return fail(said("{name} should return a dict with keys {keys}; got {shown}.", name=name,
                         keys=str(sorted(expected)), shown=shown), Reason.WRONG_TYPE)
    missing = [k for k in expected if k not in got]
    extra = [k for k in got if k not in expected]
    if missing or extra:
        return fail(said("{name} returned keys {got}; expected exactly {keys}{missing}{extra}.", name=name,
                         got=str(sorted(map(str, got))), keys=str(sorted(expected)),
                         missing=said(" (missing {keys})", keys=str(missing)) if missing else "",
                         extra=said(" (unexpected {keys})", keys=str(extra)) if extra else ""), Reason.WRONG_TYPE)
    for k in expected:
        v = compare_value(f"{name}[{k!r}]", expected[k], got[k])
        if not v.passed:
            return v
    return PASS


def same_answer(a, b, rtol: float = 1e-6, atol: float = 1e-12) -> bool:
    """Do two answers agree (used to recognise a known mistake)? NaN equals NaN."""
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b)
                and all(same_answer(a[k], b[k], rtol, atol) for k in a))
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        # element by element, so pairs like (out, lse) of different shapes can match
        return len(a) == len(b) and all(same_answer(x, y, rtol, atol) for x, y in zip(a, b))
    try:
        x = np.asarray(a, dtype=np.float64)
        y = np.asarray(b, dtype=np.float64)
    except Exception:
        return False
    return x.shape == y.shape and bool(np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True))


# --------------------------------------------------------------------------- named mistakes

MISTAKE_KEYS = ("mistake", "message", "reason", "match")


def read_header(path, keys: Sequence[str]) -> dict:
    """The ``key: value`` lines that open a file's docstring, for the given keys. A line
    that starts with spaces continues the value above it (joined with one space); the
    header ends at the first other line."""
    return read_header_text(Path(path).read_text(encoding="utf-8"), keys)


def read_header_text(text: str, keys: Sequence[str]) -> dict:
    """read_header of a file's text."""
    out: dict = {}
    last = None
    for line in _docstring(text).splitlines():
        m = re.match(r"^(\w+):\s*(.*)$", line)
        if m and m.group(1) in keys and m.group(1) not in out:
            last = m.group(1)
            out[last] = m.group(2).strip()
        elif last and line[:1].isspace() and line.strip():
            out[last] += " " + line.strip()
        else:
            break
    return out


def _docstring(text: str) -> str:
    """A module's docstring; quickly where the file opens with triple quotes (a
    judge run reads every mistake's header)."""
    for quotes in ('"""', "'''"):
        if text.startswith(quotes) and quotes in text[3:]:
            return text[3:text.index(quotes, 3)].strip("\n")
    return ast.get_docstring(ast.parse(text), clean=False) or ""


def mistake_file_name(name: str) -> str:
    """'scale 1/sqrt(d_nope)' -> 'scale_1_sqrt_d_nope.py'; '-1 became 0' -> 'minus_1_became_0.py'."""
    words = re.sub(r"(^|\s)-1\b", r"\1minus 1", name.lower())
    return re.sub(r"[^a-z0-9]+", "_", words).strip("_") + ".py"


def same_nonfinite_rows(result, wrong) -> bool:
    """``match: non-finite rows``: an overflowing softmax spoils whole rows (the last axis),
    and which NaN or inf lands where varies with how the attempt wrote it; the same rows
    must be spoiled."""
    r = np.asarray(result, dtype=np.float64)
    w = np.asarray(wrong, dtype=np.float64)
    if r.shape != w.shape or np.isfinite(w).all():
        return False
    return bool(np.array_equal(~np.isfinite(r).all(axis=-1), ~np.isfinite(w).all(axis=-1)))


MATCHES = {"non-finite rows": same_nonfinite_rows}


def load_mistakes(spec_file, *, models: dict | None = None, match: Callable | None = None) -> list:
    """The named mistakes of the problem whose spec is ``spec_file``: the entries of its
    folder's mistakes.diff (grader/slips.py), in their order. Each entry expands to a
    learner-style file that opens with the header

        mistake: <its name>
        message: <what the learner is told; continuation lines start with two spaces>
        reason: <the verdict's reason, when it is not a plain wrong answer: a Reason value>   (optional;
                tests/test_judge_corpus.py grades the entry and checks its verdict says it)
        match: <a way to compare in MATCHES, when the exact output varies>   (optional)

    and defines the ONE function of the problem it imitates, written as a learner would.
    The judge computes the mistake's answer by running that function in its own process
    (course code: trusted), compiled from the expanded text. ``models`` ({name: fn},
    compared with ``match``) replaces running the files where that is too slow -- problem
    12's Triton kernels -- and must cover every entry. A student edition has no slip file
    but mistakes.json, the entries' answers on the public cases (grader/recorded.py)."""
    from . import problems, slips
    home = Path(spec_file).resolve().parent
    diff = home / problems.MISTAKES
    if not diff.is_file() and (home / problems.RECORDED).is_file():   # the student edition
        from . import recorded
        return recorded.load(home / problems.RECORDED, Mistake, MATCHES, models=models, match=match)
    if not diff.is_file():
        raise ValueError(f"{home.name}: no named mistakes in {home.name}/{problems.MISTAKES} "
                         "(one entry per slip: grader/slips.py)")
    out = []
    for entry in slips.read(diff):
        where = f"{home.name}/{problems.MISTAKES}: {entry.name}"
        source = slips.expand(entry, home)
        head = read_header_text(source, MISTAKE_KEYS)
        if not head.get("mistake") or not head.get("message"):
            raise ValueError(f"{where}: the docstring must open with 'mistake: <name>' and 'message: <text>'")
        if entry.name != mistake_file_name(head["mistake"]):
            raise ValueError(f"{where}: a mistake named {head['mistake']!r} is the entry "
                             f"{mistake_file_name(head['mistake'])}")
        if "match" in head and head["match"] not in MATCHES:
            raise ValueError(f"{where}: unknown 'match: {head['match']}' (known: {sorted(MATCHES)})")
        if "reason" in head and head["reason"] not in {r.value for r in Reason}:
            raise ValueError(f"{where}: unknown 'reason: {head['reason']}' (a grader.reasons.Reason value)")
        defines = tuple(re.findall(r"^(?:async\s+)?def\s+(\w+)", source, re.M))
        fn = None
        if models is not None:
            if head["mistake"] not in models:
                raise ValueError(f"{where}: no model of {head['mistake']!r} in the spec's models")
            fn = models[head["mistake"]]
        out.append(Mistake(head["mistake"], head["message"], fn, match=MATCHES.get(head.get("match"), match),
                           source=source, where=where, defines=defines))
    unknown = set(models or ()) - {m.name for m in out}
    if unknown:
        raise ValueError(f"{home.name}: models of mistakes that have no entry: {sorted(unknown)}")
    return out


class _FileAnswer:
    """Calls one function of a mistake's file (its expanded text), compiled on first use;
    the text is registered with linecache under ``where``, so a traceback shows its lines."""

    def __init__(self, source: str, where: str, function: str):
        self.source, self.where, self.function, self._fn = source, where, function, None

    def __call__(self, **args):
        if self._fn is None:
            import linecache
            import types
            filename = f"<mistake {self.where}>"
            linecache.cache[filename] = (len(self.source), None, self.source.splitlines(True), filename)
            module = types.ModuleType(f"grader_mistake_{abs(hash(self.where))}")
            module.__file__ = filename
            exec(compile(self.source, filename, "exec"), module.__dict__)   # noqa: S102 -- course code
            self._fn = getattr(module, self.function)
        return self._fn(**args)

    def __repr__(self):
        return f"<{self.function} of {self.where}>"


def _attach(m: Mistake, functions) -> None:
    """Which learner function a mistake's file imitates (the one of ``functions`` it
    defines), and its answer: that function of the file, unless a model stands in."""
    if m.source is None:
        return
    if m.function is None:
        mine = [f for f in functions if f in m.defines]
        if len(mine) != 1:
            raise ValueError(f"{m.where} must define exactly one of {list(functions)} (the function "
                             f"the slip is in); it defines {mine or 'none'}")
        m.function = mine[0]
    if m.fn is None:
        m.fn = _FileAnswer(m.source, m.where, m.function)


# --------------------------------------------------------------------------- hidden-case helpers

def describe_args(args: dict) -> str:
    """'q [2, 16], kv [2, 32, 64], d_v=16, running=[('r3', 1, True), ...]': a case in words."""
    parts = []
    for k, v in args.items():
        if isinstance(v, np.ndarray):
            parts.append(f"{k} [{', '.join(map(str, v.shape))}]")
        else:
            text = repr(v)
            parts.append(f"{k}={text if len(text) <= 90 else text[:87] + '...'}")
    return ", ".join(parts)


def new_values(x, rng) -> np.ndarray:
    """x's shape and dtype with other values: the finite entries redrawn from a normal
    distribution with their own mean and spread; NaN and infinities stay where they are
    (they mean something: poisoned slots, parts that saw no key)."""
    x = np.asarray(x)
    out = np.array(x, copy=True)
    finite = np.isfinite(x)
    vals = x[finite].astype(np.float64)
    if not vals.size:
        return out
    spread = float(vals.std()) or max(1.0, float(np.abs(vals).max()))
    out[finite] = rng.standard_normal(vals.size) * spread + float(vals.mean())
    return out


def _eligible(case) -> bool:
    """Cases built for a memory cap or a deadline are not worth twinning (slow, and their
    point is the method, not the values), nor those whose values are built with care
    (``data={"no_twin": True}``: new values would lose what they test, e.g. a softmax kept
    one-hot so that float32 answers pass)."""
    return case.memory_mb is None and case.timeout_message is None and not case.data.get("no_twin")


def memo_twins(cases: list, rng, changes: dict, *, reference: dict, check: Callable,
               same_shapes: Callable | None = None, other_shapes: Callable | None = None,
               eligible: Callable | None = None) -> list:
    """The cases, with hidden twins that catch memoisation keyed on the wrong thing.

    For each function, among its eligible hidden cases (in a seeded random order):
      * a "same shapes, new values" twin: ``same_shapes(args, rng)`` (default: every
        change in ``changes`` applied at once) -- a cache keyed by shapes and scalars fails;
      * for each argument in ``changes``, a twin where only that argument changes
        (``changes[arg](args, rng)`` -> its new value, or None where it cannot change) --
        a cache keyed by any subset of the arguments that leaves one out fails;
      * with ``other_shapes(args, rng)``: a twin that keeps every scalar argument and
        changes the arrays' (or lists') sizes -- an intermediate cached by a scalar (chunk
        boundaries by chunk, split bounds by n_splits) fails;
      * a repeat of an original after its twins (an answer that depends on the history of
        calls fails).
    A twin is kept only where the original's answer FAILS the twin's check, so a stale
    answer is always caught. Twins go to seeded random places after their originals
    (originals keep their order: a spec may rely on its first hidden case; special cases
    at the end -- a memory trap -- stay last). All args are deep copies: no two cases
    share an object."""
    hidden = [c for c in cases if c.hidden]
    ok = eligible or _eligible
    out = list(hidden)
    tail = len(out)
    while tail and not ok(out[tail - 1]):
        tail -= 1
    special = out[tail:]  # kept at the very end
    out = out[:tail]
    functions = list(dict.fromkeys(c.function for c in hidden))
    for fn in functions:
        pool = [c for c in hidden if c.function == fn and ok(c)]
        order = [pool[i] for i in rng.permutation(len(pool))]
        made = []  # (original, twin)

        def attempt(what, build, tries=6):
            for _ in range(tries):  # a random change may leave the answer as it was: redraw
                for orig in order:
                    args = build(copy.deepcopy(orig.args))
                    if args is None:
                        continue
                    twin = _twin(orig, args, what)
                    stale = reference[fn](**copy.deepcopy(orig.args))
                    try:
                        caught = not check(twin, stale).passed
                    except Exception:  # noqa: BLE001 -- an answer of another shape: caught too
                        caught = True
                    if caught:
                        made.append((orig, twin))
                        return

        attempt("the same shapes with new values",
                (lambda a: same_shapes(a, rng)) if same_shapes else _apply_all(changes, rng))
        if other_shapes is not None:
            attempt("other sizes, the same scalar arguments", lambda a: other_shapes(a, rng))
        for arg, change in changes.items():
            def one(a, arg=arg, change=change):
                if arg not in a:
                    return None
                v = change(a, rng)
                return None if v is None else {**a, arg: v}
            attempt(f"another {arg}, every other argument the same", one)
        for orig, twin in made:
            _insert_after(out, orig, twin, rng)
        if made:
            orig = made[0][0]
            last = max(out.index(t) for o, t in made if o is orig)
            again = _twin(orig, copy.deepcopy(orig.args), None)
            out.insert(int(rng.integers(last + 1, len(out) + 1)), again)
    return [c for c in cases if not c.hidden] + out + special


def _apply_all(changes, rng):
    def build(args):
        new = dict(args)
        changed = False
        for arg, change in changes.items():
            if arg in new and isinstance(new[arg], (np.ndarray, list)):
                v = change(new, rng)
                if v is not None:
                    new[arg] = v
                    changed = True
        return new if changed else None
    return build


def _twin(orig, args, what):
    name = f"{orig.name} (again: {what})" if what else f"{orig.name} (repeated after other calls)"
    return dataclasses.replace(orig, name=name, args=args, expected=None,
                               describe=describe_args(args), data=copy.deepcopy(orig.data))


def _insert_after(out, orig, twin, rng):
    at = next(i for i, c in enumerate(out) if c is orig)
    out.insert(int(rng.integers(at + 1, len(out) + 1)), twin)


def another(values) -> Callable:
    """A change picker: one of ``values`` other than the current one (None if none)."""
    values = list(values)

    def pick(current, rng):
        rest = [v for v in values if v != current]
        return rest[int(rng.integers(len(rest)))] if rest else None
    return pick


def another_int(lo: int, hi: int) -> Callable:
    """A change picker: an int in [lo, hi] other than the current one (None if none)."""
    def pick(current, rng):
        if hi <= lo:
            return None if current == lo else lo
        v = int(rng.integers(lo, hi))  # lo .. hi-1, shifted past current
        return v + 1 if v >= current else v
    return pick


def changes_of(**pickers) -> dict:
    """{arg: change} for memo_twins from {arg: picker(current, rng)} (``another``,
    ``another_int``, or a function of the current value)."""
    def change(picker, arg):
        return lambda args, rng: picker(args[arg], rng)
    return {arg: change(picker, arg) for arg, picker in pickers.items()}


UNEVEN_ROWS = "rows whose scores differ by hundreds (one row near +750, another near -750)"


def uneven_rows_edge(row_max: Callable[[dict], Any], function: str | None = None) -> Edge:
    """The edge every ``normalises_rows`` problem needs: in one case, some row's largest
    score (or lse) is above +700 and another row's is below -700, so an attempt that
    subtracts one maximum for the whole array instead of each row's gets exp(-1400) = 0
    there (0/0, or a wrong lse). ``row_max(args)`` -> each row's largest finite score."""
    def holds(args):
        m = np.asarray(row_max(args), dtype=np.float64).ravel()
        m = m[np.isfinite(m)]
        return m.size >= 2 and m.max() > 700 and m.min() < -700
    return Edge(UNEVEN_ROWS, holds, function, kind="spread")


WIDE_ROW = ("scores hundreds apart inside one row, the largest last (its maximum 709 above its mean and "
            "every earlier score)")


def wide_row_edge(row_scores: Callable[[dict], Any], function: str | None = None) -> Edge:
    """The second edge every ``normalises_rows`` problem needs: in one case, some row's
    last score (in the order its keys, tiles, chunks or parts are listed) is more than 709
    above every earlier one AND above the row's mean. An online softmax whose running max
    comes from the first tile (or part) and is never raised, and a softmax that subtracts
    the row's mean instead of its maximum, both overflow there -- while rows that differ
    only from each other (uneven_rows_edge) let them pass. ``row_scores(args)`` yields each
    row's scores in that order (-inf, NaN: no key there, skipped)."""
    def holds(args):
        for row in row_scores(args):
            s = np.asarray(row, dtype=np.float64).ravel()
            s = s[np.isfinite(s)]
            if s.size >= 2 and s[-1] - s[:-1].max() > 709 and s[-1] - s.mean() > 709:
                return True
        return False
    return Edge(WIDE_ROW, holds, function, kind="spread")


def wide_row(n: int, rng, big: float = 800.0) -> np.ndarray:
    """Target scores for one row of ``n >= 3`` keys that holds wide_row_edge: the others
    near -big (a few units apart), the last near +big."""
    if n < 3:
        raise ValueError("wide_row needs at least three keys (a mean and an earlier maximum)")
    out = -big + rng.uniform(-3.0, 3.0, n)
    out[-1] = big + rng.uniform(-3.0, 3.0)
    return out


def row_offsets(rng, shape, big: float = 750.0) -> np.ndarray:
    """Per-row offsets of shape ``shape``: each +big, -big or 0, with at least one +big
    and one -big (needs two or more rows)."""
    n = int(np.prod(shape))
    if n < 2:
        raise ValueError("row_offsets needs at least two rows")
    flat = rng.choice([-big, 0.0, big], size=n)
    two = rng.choice(n, size=2, replace=False)
    flat[two[0]], flat[two[1]] = big, -big
    return flat.reshape(shape)
