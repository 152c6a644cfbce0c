"""expect: fail
slip: imports the course's answer (mlacourse.prefill.tile_classes) instead of writing it.
reason: uses_reference
"""
from mlacourse.prefill import tile_classes


def tile_plan(n_q, n_k, block_m, block_n, causal=True):
    return tile_classes(n_q, n_k, block_m, block_n, causal)
