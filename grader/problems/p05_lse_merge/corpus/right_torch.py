"""expect: pass
slip: none -- torch.logsumexp in float64, returns torch tensors.
"""
import torch


def lse_merge(outs, lses):
    o = torch.as_tensor(outs, dtype=torch.float64)            # [P, H, s_q, d_v]
    l = torch.as_tensor(lses, dtype=torch.float64)            # [P, H, s_q]
    lse = torch.logsumexp(l, dim=0)                           # -inf where every part is -inf
    ref = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    w = torch.exp(l - ref)                                    # [P, H, s_q]
    return (w[..., None] * o).sum(0), lse
