"""expect: fail
slip: returns mlacourse.sparse.physical_indices(...) -- the course's reference.
reason: uses_reference
"""
from mlacourse.sparse import physical_indices


def sparse_indices(topk_pos, block_table, page_block_size):
    return physical_indices(topk_pos, block_table, page_block_size)
