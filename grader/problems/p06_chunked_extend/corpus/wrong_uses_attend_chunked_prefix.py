"""expect: fail
slip: calls mlacourse.layer.attend_chunked_prefix, the core's version of this exact problem.
reason: uses_reference
"""
from mlacourse.layer import attend_chunked_prefix


def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    return attend_chunked_prefix(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk)
