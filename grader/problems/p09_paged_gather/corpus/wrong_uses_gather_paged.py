"""expect: fail
slip: importlib.import_module("mlacourse.paged").gather_paged -- the course's reference.
reason: uses_reference
"""
import importlib


def paged_gather(kv_cache, block_table, cache_seqlens, seq):
    return importlib.import_module("mlacourse.paged").gather_paged(kv_cache, block_table, cache_seqlens, seq)
