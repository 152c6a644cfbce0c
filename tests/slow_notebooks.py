"""Notebooks built to be slow to read: each within every byte limit of a hand-in, each
aimed at a part of the static analysis (classroom/notebooks.py) that once grew faster than
the notebook. The times measured before the analysis was made linear (one problem, this
machine, 2 cores): ``fanout`` 4.6 / 14.5 / 56 s for 1k / 2k / 4k names; ``shared_line``
46 s for 4k statements; ``spaces`` 1.5 / 4.1 s for a line of 20k / 40k spaces (a 1 MiB
line: some 45 minutes). Used by tests/test_classroom_notebooks.py (each read within a
bound) and tests/test_classroom_hostile.py (handed in among honest students)."""
from __future__ import annotations

import json


def notebook(cells: list[str], markdown: int = 0) -> bytes:
    """An nbformat-4 notebook of code cells (and ``markdown`` empty markdown cells first)."""
    md = [{"cell_type": "markdown", "metadata": {}, "source": ""}] * markdown
    code = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": c}
            for c in cells]
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": md + code}).encode()


FN = "def kv_cache_bytes(*args, **kwargs):\n    return "   # problem 1's function


def fanout(n: int = 19000) -> bytes:
    """n cells each binding a name, then a function that reads all of them: every name was
    checked for later changes by walking every statement after it (n**2 walks)."""
    return notebook([f"c{i} = {i}" for i in range(n)] + [FN + "sum([" + ", ".join(f"c{i}" for i in range(n)) + "])"])


def changed(n: int = 9000) -> bytes:
    """Names bound early and changed in place by later cells (`c.append`, `c[0] = `,
    `np.add(.., out=c)`): the refusal must be found as fast as the absence of one."""
    cells = [f"c{i} = [{i}]" for i in range(n)]
    cells += [f"c{i}.append(1)" if i % 3 == 0 else f"c{i}[0] = 2" if i % 3 == 1 else f"f(1, out=c{i})"
              for i in range(n)]
    return notebook(cells + [FN + "sum([" + ", ".join(f"c{i}[0]" for i in range(n)) + "])"])


def shared_line(n: int = 19000) -> bytes:
    """n statements on one line (`a0 = 0; a1 = 1; ...`): each statement's text was cut out
    of the whole cell again, and compared with every other statement's span."""
    return notebook(["; ".join(f"a{i} = {i}" for i in range(n)) + f"\n{FN}a{n - 1}"])


def spaces(n: int = 1_000_000) -> bytes:
    """One line of a million spaces between two letters: the regular expression for
    `x = !cmd` backtracked over it (minutes)."""
    return notebook(["a" + " " * n + "b\n" + FN + "1"])


def blank_lines(n: int = 1_000_000) -> bytes:
    """A cell that does not parse, a million blank lines long: the search for `def name`
    in it started again from every line."""
    return notebook(["def kv_cache_bytes(:\n" + "\n" * n + " def"])


def deep(n: int = 20000) -> bytes:
    """Nesting the parser takes (lambdas) and nesting it refuses (brackets), and a
    class whose body nests scopes: recursion in the reader must not crash grading."""
    return notebook(["f = " + "lambda: " * n + "1", "x = " + "[" * 180 + "]" * 180,
                     "g = " + "(lambda: " * 150 + "1" + ")" * 150, FN + "x"])


def statements(n: int = 19900) -> bytes:
    """Just under MAX_STATEMENTS statements, a name bound many times, many markdown cells."""
    return notebook(["x = 1\n" * n + FN + "x"], markdown=200_000)


SLOW = {"fanout": fanout, "changed": changed, "shared_line": shared_line, "spaces": spaces,
        "blank_lines": blank_lines, "deep": deep, "statements": statements}

__all__ = ["SLOW", "notebook"]
