"""expect: fail
slip: imports the course's sparse decode and returns its answer.
reason: uses_reference
"""
import importlib


def sparse_decode(q, kv_cache, indices, softmax_scale):
    ref = importlib.import_module("mlacourse.sparse")
    return ref.sparse_decode(q, kv_cache, indices, softmax_scale)
