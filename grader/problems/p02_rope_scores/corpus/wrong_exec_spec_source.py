"""expect: fail
slip: reads grader/problems/p02_rope_scores/spec.py, exec's it and calls the spec's _reference.
reason: uses_reference
"""
import os


def _repo_root():
    here = os.path.dirname(os.path.abspath(__file__))
    while not os.path.isdir(os.path.join(here, "grader")):
        here = os.path.dirname(here)
    return here


_ns = {"__name__": "not_the_spec"}
with open(os.path.join(_repo_root(), "grader", "problems", "p02_rope_scores", "spec.py")) as _f:
    exec(compile(_f.read(), "p02_spec", "exec"), _ns)


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    return _ns["_reference"](q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta)
