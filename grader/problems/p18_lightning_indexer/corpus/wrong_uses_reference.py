"""expect: fail
slip: calls the course's lightning_indexer.
reason: uses_reference
"""
from mlacourse import sparse


def lightning_indexer(q_idx, weights, k_idx, topk):
    return sparse.lightning_indexer(q_idx, weights, k_idx, topk)
