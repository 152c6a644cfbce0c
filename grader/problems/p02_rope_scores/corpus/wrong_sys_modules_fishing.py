"""expect: fail
slip: fishes apply_rope out of sys.modules (importing it quietly when the judge has not).
reason: uses_reference
"""
import sys

import numpy as np


def _find(attr):
    for name, mod in list(sys.modules.items()):
        if name.startswith(("mlacourse", "grader")) and hasattr(mod, attr):
            return getattr(mod, attr)
    # nothing of the course loaded in this process yet: pull it in quietly
    return getattr(__import__("mlacourse.rope", fromlist=[attr]), attr)


def rope_scores(q_nope, q_rope, k_nope, k_rope, q_pos, k_pos, theta=10000.0):
    rot = _find("apply_rope")
    s = np.einsum("hd,thd->ht", q_nope, k_nope) + rot(q_rope, np.asarray(q_pos), theta) @ rot(k_rope, np.asarray(k_pos), theta).T
    return s / np.sqrt(q_nope.shape[1] + q_rope.shape[1])
