"""How one attempt runs, decided once from the problem and its cases: which cases share a
process, what each process may hold, each case's deadline, and the whole attempt's time.

Every rule here is enforced from outside the process that runs graded code:

  memory   A case with a memory budget of its own (``Case.memory_mb``: problem 6's long
           prefix, problem 8's expansion trap) runs alone, in a process of its own. Where
           the attempt has a cgroup (the jail), the judge sets that process's memory limit
           itself once the interpreter and the libraries the file imports are loaded and
           before a line of the file runs: what they hold, plus the budget, plus
           ``IMPORT_SLACK_MB`` for the file's own module-level objects (no room for files:
           memory in a memfd or the sandbox's tmpfs is memory). Without a cgroup the
           child sets the same headroom as hard rlimits before the file runs (a process
           cannot raise its hard limits). The other cases share one process whose cap is
           the problem's ``memory_mb``.
  time     Each case has its deadline (``Case.timeout_s`` or the problem's). The attempt as
           a whole has ``total_s``: every process's start-up, the largest case limit once
           (any one case may use all of it), and a tenth of every case's limit -- so an
           attempt that sleeps just under each deadline is stopped with "used its whole time
           budget" instead of holding a grader for the sum of the limits. An honest attempt
           uses a small fraction of it (README: measured times).

  kernel   A problem whose answer must be a Triton kernel's (``Problem.kernel``: problem 12)
           has one more process: the judge launches the file's kernel itself on every case,
           with no other line of the file run there (grader/kernel_harness.py).

The parent (grader/sandbox.py) carries the plan out; nothing the attempt sends can change it.
"""
from __future__ import annotations

from dataclasses import dataclass

STARTUP_S = {"numpy": 20.0, "torch": 60.0}   # per process: interpreter, imports, the file itself
IMPORT_SLACK_MB = 4      # a budget-bearing case's process: the file's own module-level objects
SHARE_OF_EACH_LIMIT = 0.1   # total_s: a tenth of every case's limit, beyond the largest one


def stack(problem) -> str:
    """"torch" for a problem that needs torch and Triton (a slower start, more memory and
    threads), else "numpy"."""
    return "torch" if problem.needs_torch else "numpy"


@dataclass(frozen=True)
class Group:
    """Cases that run one after another in one process, under one memory budget."""
    cases: tuple          # indices into the attempt's case list, in order
    memory_mb: int        # what the attempt may hold in this process beyond the interpreter
    own_budget: bool      # a single case with a budget of its own (set after start-up)
    kernel: bool = False  # the judge launches the file's kernel (Problem.kernel) on these cases


@dataclass(frozen=True)
class Plan:
    groups: tuple         # Group, in the order they run (the shared process first)
    timeouts: dict        # case index -> seconds
    startup_s: float      # per process, before its first case
    total_s: float        # the attempt's whole budget, every process together

    def group_of(self, index: int) -> Group:
        return next(g for g in self.groups if index in g.cases and not g.kernel)


def case_limit(problem, case) -> float:
    return float(case.timeout_s or problem.timeout_s)


def plan_for(problem, cases: list) -> Plan:
    """The plan for grading ``cases`` (in the order the judge runs them)."""
    shared = tuple(i for i, c in enumerate(cases) if not c.memory_mb)
    alone = [i for i, c in enumerate(cases) if c.memory_mb]
    groups = []
    if shared or not alone:
        groups.append(Group(shared, int(problem.memory_mb), False))
    groups += [Group((i,), int(cases[i].memory_mb), True) for i in alone]
    if problem.kernel is not None:
        groups.append(Group(tuple(range(len(cases))), int(problem.memory_mb), False, kernel=True))
    timeouts = {i: case_limit(problem, c) for i, c in enumerate(cases)}
    startup = STARTUP_S[stack(problem)] + problem.timeout_s
    runs = [timeouts[i] for g in groups for i in g.cases]   # every case once per process it runs in
    return Plan(tuple(groups), timeouts, startup, total_budget_s(startup, len(groups), runs))


def total_budget_s(startup_s: float, processes: int, limits) -> float:
    """Start-up for every process, the largest case limit once, and a tenth of each limit."""
    limits = list(limits)
    return startup_s * processes + max(limits, default=0.0) + SHARE_OF_EACH_LIMIT * sum(limits)


def attempt_budget_s(problem, seeds=range(3)) -> float:
    """The whole-attempt budget of ``problem`` (the largest over a few seeds), for the
    classroom's worker backstop."""
    return max(plan_for(problem, problem.make_cases(s)).total_s for s in seeds)


__all__ = ["Group", "Plan", "plan_for", "total_budget_s", "attempt_budget_s", "case_limit", "stack",
           "STARTUP_S", "IMPORT_SLACK_MB"]
