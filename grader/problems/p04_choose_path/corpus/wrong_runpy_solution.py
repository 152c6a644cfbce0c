"""expect: fail
slip: runs solutions/p04_choose_path.py with runpy and re-exports its functions.
reason: uses_reference
"""
import os
import runpy


def _repo_root():
    here = os.path.dirname(os.path.abspath(__file__))
    while not os.path.isdir(os.path.join(here, "solutions")):
        here = os.path.dirname(here)
    return here


_ns = runpy.run_path(os.path.join(_repo_root(), "solutions", "p04_choose_path.py"))
attention_flops = _ns["attention_flops"]
choose_path = _ns["choose_path"]
