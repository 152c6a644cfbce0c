"""expect: fail
slip: computes in torch bfloat16 "like the GPU" and returns the bf16 tensor (about 3 significant digits).
"""
import torch


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    b = lambda x: torch.from_numpy(x).to(torch.bfloat16)                   # noqa: E731
    q_lat = torch.einsum("hd,hcd->hc", b(q_nope), b(w_uk))
    p = torch.softmax((q_lat @ b(c_kv).T + b(q_rope) @ b(k_rope).T) * scale, dim=-1)
    return torch.einsum("hc,hcd->hd", p @ b(c_kv), b(w_uv))                # slip: bf16 result
