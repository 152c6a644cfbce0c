"""expect: pass
slip: none -- torch in float64, returns a torch tensor (the statement allows it).
"""
import torch


def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
    t = lambda x: torch.from_numpy(x)                                      # noqa: E731
    q_lat = torch.einsum("hd,hcd->hc", t(q_nope), t(w_uk))
    s = (q_lat @ t(c_kv).T + t(q_rope) @ t(k_rope).T) * scale             # [H, T]
    p = torch.softmax(s, dim=-1)                                            # stable
    return torch.einsum("hc,hcd->hd", p @ t(c_kv), t(w_uv))
