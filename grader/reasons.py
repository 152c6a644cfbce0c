"""Why a case or a problem got its verdict: one tag, the same in every language.

A ``Reason`` is a ``str`` Enum, so it *is* its value wherever it goes: results.json, a
class's verdict records and their cache, the gradebook's "reason" column and
tests/corpus/'s expected reasons all carry the plain words below, and a record read back
from JSON compares equal to the member. The sentence a learner reads is the verdict's
message; the tag is for tools and for a teacher's tally (classroom/gradebook.py says each
one in words).

Defined in a module of its own, with no imports, so that both grader/spec.py (the checkers'
``Verdict``) and grader/records.py (the results, which import the specs) can use it; it is
re-exported by both. Anything that sets a tag goes through ``Reason(...)``: a misspelt tag
raises where it is set instead of reaching a gradebook.
"""
from __future__ import annotations

from enum import Enum


class Reason(str, Enum):
    PASSED = "passed"

    # the checker's verdict on a returned answer (Verdict.reason)
    WRONG_ANSWER = "wrong_answer"      # the values are wrong
    WRONG_SHAPE = "wrong_shape"        # an array of another shape
    WRONG_TYPE = "wrong_type"          # another type, dtype, set of keys, or None
    NOT_FINITE = "not_finite"          # NaN/inf where a number is expected, or the reverse

    # the attempt's process, one case (grader/runner.py reads the child's record)
    MUTATED_INPUT = "mutated_input"    # changed an argument in place
    NO_KERNEL = "no_kernel"            # the file's kernel, launched by the judge, gives another answer
    EXCEPTION = "exception"            # raised
    TIMEOUT = "timeout"                # over the case's time limit
    TIME_BUDGET = "time_budget"        # the attempt's whole time budget spent
    MEMORY = "memory"                  # over the memory cap
    EXIT = "exit"                      # stopped the program (SystemExit), or its process ended early
    CRASH = "crash"                    # the process died of a signal
    TOO_LARGE = "too_large"            # an answer too large to send back
    NOT_STARTED = "not_started"        # still the stub (NotImplementedError)
    NOT_RUN = "not_run"                # an earlier case took the process down

    # the file as a whole (ProblemResult.reason)
    USES_REFERENCE = "uses_reference"  # reached for the course's own code
    IMPORT_ERROR = "import_error"      # the file does not import
    MISSING_FUNCTION = "missing_function"  # a function of the problem is not defined
    MISSING = "missing"                # no file to grade
    UNAVAILABLE = "unavailable"        # this machine lacks a package the problem needs
    INFRASTRUCTURE = "infrastructure"  # the sandbox could not run it: not the attempt's fault
    JUDGE_ERROR = "judge_error"        # a bug in the judge or a spec (cases not built, ...)

    # a class's grading (classroom/)
    NOTEBOOK_UNUSABLE = "notebook_unusable"  # the notebook handed in could not be turned into a file
    UNUSABLE_RECORD = "unusable_record"      # a verdict record that could not be used, twice

    def __str__(self):
        return self.value


__all__ = ["Reason"]
