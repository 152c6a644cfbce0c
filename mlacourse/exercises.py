"""Checks for the exercises inside the chapters.

A chapter asks a "what if" question and gives a cell with `answer = ...`. Running that cell
with the `...` left in prints that the exercise is not attempted yet; a wrong answer raises
an AssertionError that shows the expected value's size and the tolerance, not the value; a
right one prints "correct". The expected value is always computed by the course's own
formulas (mlacourse), in the cell, never typed in."""
from __future__ import annotations

import math


def check(label: str, answer, expected, rel: float = 1e-6, abs_tol: float = 0.0) -> None:
    """Compare a learner's answer with the course's figure: prints "correct" when right, prints
    "not attempted" when `answer` is `...`, raises AssertionError when wrong. Returns None, so
    that a notebook cell ending with check(...) shows only the printed line."""
    if answer is Ellipsis:
        print(f"Exercise {label}: not attempted yet -- replace the ... with your answer and run the "
              f"cell again (a worked solution follows in the next cell).")
        return
    if isinstance(expected, str) or isinstance(answer, str):
        ok = str(answer).strip().lower() == str(expected).strip().lower()
        hint = "a word, compared without case"
    else:
        try:
            a, e = float(answer), float(expected)
        except (TypeError, ValueError):
            raise AssertionError(f"Exercise {label}: expected a number, got {answer!r} "
                                 f"of type {type(answer).__name__}") from None
        ok = math.isclose(a, e, rel_tol=rel, abs_tol=abs_tol)
        hint = f"relative tolerance {rel:g}" + (f", absolute {abs_tol:g}" if abs_tol else "")
    if not ok:
        size = "" if isinstance(expected, str) else f" (the right answer has magnitude ~1e{math.floor(math.log10(abs(float(expected)) or 1)):d})"
        raise AssertionError(f"Exercise {label}: {answer!r} is not right{size}; compared with {hint}.")
    print(f"Exercise {label}: correct ({answer if isinstance(answer, str) else f'{float(answer):,.6g}'})")
