"""expect: fail
slip: calls mlacourse.layer.attend_absorb, the course's reference for this problem.
reason: uses_reference
"""
from mlacourse.layer import attend_absorb


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    out, _ = attend_absorb(q_nope[None], q_rope[None], c_kv, k_rope, w_uk, w_uv, scale)
    return out[0]
