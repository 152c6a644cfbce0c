"""expect: fail
slip: loads solutions/p06_chunked_extend.py with importlib.util.spec_from_file_location and calls it.
reason: uses_reference
"""
import importlib.util
import os


def _repo_root():
    here = os.path.dirname(os.path.abspath(__file__))
    while not os.path.isdir(os.path.join(here, "solutions")):
        here = os.path.dirname(here)
    return here


_spec = importlib.util.spec_from_file_location(
    "model_answer", os.path.join(_repo_root(), "solutions", "p06_chunked_extend.py"))
_model = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_model)


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    return _model.chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk)
