"""expect: fail
slip: calls mlacourse.attention.merge_attention, the course's reference for this problem.
reason: uses_reference
"""
from mlacourse.attention import merge_attention


def lse_merge(outs, lses):
    return merge_attention(list(outs), list(lses))
