"""What grading produces: one status vocabulary per level, and the result records.

Three levels, one Enum each (values are the words people read and JSON carries):
  RunStatus      one call in the sandbox (grader/child/): ok, error, timeout, ...
  CaseStatus     one case after the checker:  pass, fail, not started, not run
  ProblemStatus  one problem for one learner: passed, failed, not started, missing, unavailable
why a case or a problem got its verdict, ``Reason`` (grader/reasons.py: wrong_answer,
timeout, uses_reference, ...), and where an attempt ran, ``Isolation`` (jail, process,
user, fork, none).
State changes are methods on the records (``CaseOutcome.fail``, ``ProblemResult.finish``),
as in Exercism's test runner, so no caller spells a status by hand.

Every text a record holds is bounded where it is set (``cut``: ``MESSAGE_CAP`` for a
verdict, ``OUTPUT_CAP`` for printed output), whatever the attempt sent: a result, its
cache entry and a gradebook row stay a few KiB per case.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from .child import RunStatus  # noqa: F401 -- re-exported: the sandbox's vocabulary
from .child import cut  # noqa: F401 -- re-exported: one way to bound a text, with its "cut" note
from .lang import N_
from .reasons import Reason
from .spec import Case, Problem


MESSAGE_CAP = 12_000   # characters of one verdict (the attempt's part of it is at most ~4,000)
OUTPUT_CAP = 12_000    # characters of printed output kept with a case or a problem


class CaseStatus(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    NOT_STARTED = "not started"  # the function still raises NotImplementedError
    NOT_RUN = "not run"          # an earlier case took the process down

    def __str__(self):
        return self.value


class Isolation(str, Enum):
    """Where an attempt runs: what runner.grade is asked for (or decides: runner.
    default_isolation) and what its result records (grader/sandbox.py runs each)."""
    JAIL = "jail"        # a bubblewrap sandbox in its own cgroup: the operating system is the boundary
    PROCESS = "process"  # a fresh `python -I` behind the judge's Python guard (no bwrap: self-study)
    USER = "user"        # a fresh process as another, unprivileged user (Gradescope without namespaces)
    FORK = "fork"        # a fork of this process: functions defined in a notebook, same limits
    NONE = "none"        # this process, without limits (the browser, Windows)

    def __str__(self):
        return self.value


class ProblemStatus(str, Enum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_STARTED = "not started"
    MISSING = "missing"          # no file to grade
    UNAVAILABLE = "unavailable"  # this machine lacks a package the problem needs

    def __str__(self):
        return self.value

    @property
    def mark(self) -> str:
        return {"passed": "✓", "failed": "✗", "not started": "·", "missing": "?",
                "unavailable": "-"}[self.value]


def _bounded(message) -> str:
    """A verdict's text, cut to MESSAGE_CAP. A short Said stays a Said (str() would make
    it plain English, and the verdict would no longer show in the learner's language)."""
    return cut(message if isinstance(message, str) else str(message), MESSAGE_CAP)


@dataclass
class CaseOutcome:
    case: Case
    status: CaseStatus = CaseStatus.PASS
    message: str = ""
    reason: Reason = Reason.PASSED   # why: wrong_answer, wrong_shape, timeout, uses_reference, ...
    mistake: str | None = None  # a named mistake that reproduces the attempt on every case
    output: str = ""
    result: object = None    # the decoded answer (kept to name mistakes; not reported)

    @property
    def passed(self) -> bool:
        return self.status is CaseStatus.PASS

    def __post_init__(self):
        self.output = cut(str(self.output), OUTPUT_CAP)
        self.reason = Reason(self.reason)

    def fail(self, message: str, reason: Reason = Reason.WRONG_ANSWER) -> "CaseOutcome":
        self.status, self.message, self.reason = CaseStatus.FAIL, _bounded(message), Reason(reason)
        return self

    def not_started(self, message: str) -> "CaseOutcome":
        self.status, self.message = CaseStatus.NOT_STARTED, _bounded(message)
        self.reason = Reason.NOT_STARTED
        return self

    def not_run(self) -> "CaseOutcome":
        self.status, self.reason = CaseStatus.NOT_RUN, Reason.NOT_RUN
        self.message = N_("not run (an earlier case stopped the process).")  # translated when shown
        return self


@dataclass
class ProblemResult:
    problem: Problem
    path: str                 # the learner's file (or "<notebook: ...>")
    status: ProblemStatus = ProblemStatus.FAILED
    outcomes: list = field(default_factory=list)
    seed: int | None = None
    message: str = ""         # for whole-file verdicts (missing, import error, unavailable)
    reason: Reason | None = None  # why, for whole-file verdicts (import_error, uses_reference, ...)
    elapsed: float = 0.0
    isolation: Isolation = Isolation.PROCESS  # where the attempt ran
    output: str = ""          # printed below Python's level (os.write, C code), capped
    given_path: bool = False  # the file was named by the user (--file): shown as given

    @property
    def passed(self) -> bool:
        return self.status is ProblemStatus.PASSED

    def __post_init__(self):
        self.reason = None if self.reason is None else Reason(self.reason)

    @property
    def in_process(self) -> bool:
        """Ran in the caller's process: no time or memory limit."""
        return self.isolation is Isolation.NONE

    # ---- state changes
    def unavailable(self, message: str, reason: Reason = Reason.UNAVAILABLE) -> "ProblemResult":
        """Not graded here: a package missing (UNAVAILABLE), or the sandbox failed (INFRASTRUCTURE)."""
        self.status, self.message, self.reason = ProblemStatus.UNAVAILABLE, message, Reason(reason)
        return self

    def missing(self, message: str) -> "ProblemResult":
        self.status, self.message, self.reason = ProblemStatus.MISSING, message, Reason.MISSING
        return self

    def broken(self, message: str, reason: Reason = Reason.IMPORT_ERROR) -> "ProblemResult":
        """The file as a whole could not be graded (it did not import, ...)."""
        self.status, self.message, self.reason = ProblemStatus.FAILED, _bounded(message), Reason(reason)
        return self

    def add(self, outcome: CaseOutcome):
        self.outcomes.append(outcome)

    def finish(self) -> "ProblemResult":
        """Set the status from the case outcomes."""
        sts = [o.status for o in self.outcomes]
        if sts and all(s is CaseStatus.PASS for s in sts):
            self.status = ProblemStatus.PASSED
        elif sts and all(s is CaseStatus.NOT_STARTED for s in sts):
            self.status = ProblemStatus.NOT_STARTED
        else:
            self.status = ProblemStatus.FAILED
        return self

    # ---- questions
    def first_failure(self):
        for o in self.outcomes:   # the whole budget spent: that is what the verdict is about
            if o.reason is Reason.TIME_BUDGET:
                return o
        for o in self.outcomes:
            if o.status not in (CaseStatus.PASS, CaseStatus.NOT_RUN):
                return o
        return next((o for o in self.outcomes if o.status is CaseStatus.NOT_RUN), None)

    def counts(self, hidden: bool) -> tuple[int, int, int]:
        """(passed, total, not run) among public (hidden=False) or hidden cases."""
        cs = [o for o in self.outcomes if o.case.hidden == hidden]
        return (sum(o.status is CaseStatus.PASS for o in cs), len(cs),
                sum(o.status is CaseStatus.NOT_RUN for o in cs))

    def count(self, status: CaseStatus) -> int:
        return sum(o.status is status for o in self.outcomes)


__all__ = ["RunStatus", "CaseStatus", "ProblemStatus", "Reason", "Isolation", "CaseOutcome", "ProblemResult"]
