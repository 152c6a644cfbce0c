"""expect: fail
slip: pulls attend_expand and causal_mask out of mlacourse with __import__.
reason: uses_reference
"""
_layer = __import__("mlacourse.layer", fromlist=["attend_expand"])
_att = __import__("mlacourse.attention", fromlist=["causal_mask"])


def expand_prefill(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    T = c_kv.shape[0]
    out, _ = _layer.attend_expand(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, _att.causal_mask(T, T))
    return out
