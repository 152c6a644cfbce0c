"""expect: fail
slip: imports the judge's spec grader.problems.p08_absorb_decode.spec and returns its reference().
reason: uses_reference
"""
from grader.problems.p08_absorb_decode.spec import reference as absorb_decode  # noqa: F401
