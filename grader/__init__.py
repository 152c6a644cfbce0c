"""The course judge: problem specs (grader/problems/), a sandboxed runner, and the
command line behind `python practice/judge.py`. In a notebook:

    from grader import check
    check(4, attention_flops=attention_flops, choose_path=choose_path)
    check("choose_path", namespace=globals())
    statement(4)          # what problem 4 asks for
"""
from .notebook import check, statement  # noqa: F401
