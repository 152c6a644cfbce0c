"""expect: fail
slip: takes the partials from mlacourse.attention.attention and the combined answer from merge_attention.
reason: uses_reference
"""
import math

import numpy as np

from mlacourse.attention import attention, merge_attention


def split_kv_decode(q, kv, d_v, scale, n_splits):
    c = math.ceil(kv.shape[0] / n_splits)
    parts = [attention(q, kv[j * c:(j + 1) * c], kv[j * c:(j + 1) * c, :d_v], scale) for j in range(n_splits)]
    o_parts = np.stack([o for o, _ in parts])
    lse_parts = np.stack([l for _, l in parts])
    out, lse = merge_attention(list(o_parts), list(lse_parts))
    return out, lse, o_parts, lse_parts
