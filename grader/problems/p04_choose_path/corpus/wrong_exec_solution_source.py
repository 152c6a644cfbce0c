"""expect: fail
slip: reads solutions/p04_choose_path.py as text and exec's it into this module.
reason: uses_reference
"""
import os


def _repo_root():
    here = os.path.dirname(os.path.abspath(__file__))
    while not os.path.isdir(os.path.join(here, "solutions")):
        here = os.path.dirname(here)
    return here


with open(os.path.join(_repo_root(), "solutions", "p04_choose_path.py")) as _f:
    exec(_f.read())            # defines attention_flops and choose_path here
