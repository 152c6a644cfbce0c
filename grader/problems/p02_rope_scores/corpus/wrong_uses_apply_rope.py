"""expect: fail
slip: rotates with the course's mlacourse.rope.apply_rope instead of writing the rotation.
reason: uses_reference
"""
import numpy as np

from mlacourse.rope import apply_rope


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    s = np.einsum("hd,thd->ht", q_nope, k_nope) + apply_rope(q_rope, np.asarray(q_pos), theta) @ apply_rope(k_rope, np.asarray(k_pos), theta).T
    return s / np.sqrt(q_nope.shape[1] + q_rope.shape[1])
