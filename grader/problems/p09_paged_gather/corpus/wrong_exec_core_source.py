"""expect: fail
slip: reads mlacourse/paged.py as text, exec's it and calls its gather_paged.
reason: uses_reference
"""
import os


def _repo_root():
    here = os.path.dirname(os.path.abspath(__file__))
    while not os.path.isdir(os.path.join(here, "mlacourse")):
        here = os.path.dirname(here)
    return here


_ns = {}
with open(os.path.join(_repo_root(), "mlacourse", "paged.py")) as _f:
    exec(_f.read(), _ns)


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    return _ns["gather_paged"](kv_cache, block_table, cache_seqlens, seq)
