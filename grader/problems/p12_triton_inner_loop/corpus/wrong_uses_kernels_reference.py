"""expect: fail
slip: returns kernels.reference.reference_decode (the course's torch reference), one sequence at a time as a one-page cache.
reason: uses_reference
"""
import math

import torch

from kernels.reference import reference_decode


def triton_inner_loop(q, kv, cache_seqlens, d_v, scale):
    b, h_q, _ = q.shape
    out = torch.zeros(b, h_q, d_v, dtype=torch.float64)
    lse = torch.full((b, h_q), -math.inf, dtype=torch.float64)
    for i in range(b):
        n = int(cache_seqlens[i])
        if n == 0:
            continue                                              # its gather assumes 576-wide rows
        page = torch.as_tensor(kv[i:i + 1])[:, :, None, :]        # [1, t_max, 1, d_k]: one page
        o, l = reference_decode(torch.as_tensor(q[i:i + 1])[:, None], page,
                                torch.zeros(1, 1, dtype=torch.int32), torch.tensor([n]),
                                head_dim_v=d_v, softmax_scale=scale)
        out[i], lse[i] = o[0, 0], l[0, :, 0]
    return out, lse
