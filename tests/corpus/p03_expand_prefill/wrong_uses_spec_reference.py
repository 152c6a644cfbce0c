"""expect: fail
slip: imports grader.problems.p03_expand_prefill and returns the spec's _reference.
reason: uses_reference
"""
import importlib

_spec = importlib.import_module("grader.problems.p03_expand_prefill")


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    return _spec._reference(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale)
