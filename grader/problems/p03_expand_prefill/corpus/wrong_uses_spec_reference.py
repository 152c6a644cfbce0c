"""expect: fail
slip: imports grader.problems.p03_expand_prefill.spec and returns the spec's _reference.
reason: uses_reference
"""
import importlib

_spec = importlib.import_module("grader.problems.p03_expand_prefill.spec")


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    return _spec._reference(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale)
