"""expect: pass
slip: none -- works in the log2 domain with exp2 (scores times log2 e), converts the lse back to natural log.
"""
import os

import torch

if not torch.cuda.is_available():  # must be set before triton is imported
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BLOCK_T = 16  # cached rows per tile


@triton.jit
def decode_kernel(q_ptr, kv_ptr, seqlens_ptr, out_ptr, lse_ptr, t_max, scale,
                  H: tl.constexpr, D_K: tl.constexpr, D_V: tl.constexpr, BLOCK_T: tl.constexpr):
    b = tl.program_id(0)
    seqlen = tl.load(seqlens_ptr + b)
    offs_h = tl.arange(0, H)
    offs_k = tl.arange(0, D_K)
    offs_v = tl.arange(0, D_V)
    q = tl.load(q_ptr + b * H * D_K + offs_h[:, None] * D_K + offs_k[None, :])  # [H, D_K]
    kv_base = kv_ptr + b * t_max * D_K
    m = tl.full([H], float("-inf"), tl.float32)
    l = tl.zeros([H], tl.float32)
    acc = tl.zeros([H, D_V], tl.float32)

    LOG2E: tl.constexpr = 1.4426950408889634
    for start in range(0, seqlen, BLOCK_T):
        rows = start + tl.arange(0, BLOCK_T)
        keep = rows < seqlen
        k = tl.load(kv_base + rows[:, None] * D_K + offs_k[None, :], mask=keep[:, None], other=0.0)
        v = tl.load(kv_base + rows[:, None] * D_K + offs_v[None, :], mask=keep[:, None], other=0.0)
        s2 = tl.dot(q, tl.trans(k), input_precision="ieee") * (scale * LOG2E)   # log2-domain scores
        s2 = tl.where(keep[None, :], s2, float("-inf"))
        m_next = tl.maximum(m, tl.max(s2, axis=1))
        corr = tl.exp2(m - m_next)
        p = tl.exp2(s2 - m_next[:, None])
        acc = acc * corr[:, None] + tl.dot(p, v, input_precision="ieee")
        l = l * corr + tl.sum(p, axis=1)
        m = m_next

    nonempty = l > 0
    safe_l = tl.where(nonempty, l, 1.0)
    out = acc / safe_l[:, None]
    lse = tl.where(nonempty, (m + tl.log2(safe_l)) / LOG2E, float("-inf"))   # back to natural log
    tl.store(out_ptr + b * H * D_V + offs_h[:, None] * D_V + offs_v[None, :], out)
    tl.store(lse_ptr + b * H + offs_h, lse)


def triton_inner_loop(q, kv, cache_seqlens, d_v, scale):
    q_t = torch.as_tensor(q, dtype=torch.float32).to(DEVICE).contiguous()       # [b, H, D_K]
    kv_t = torch.as_tensor(kv, dtype=torch.float32).to(DEVICE).contiguous()     # [b, t_max, D_K]
    lens = torch.as_tensor(cache_seqlens, dtype=torch.int32).to(DEVICE)         # [b]
    n_seq, n_heads, d_k = q_t.shape
    out = torch.empty((n_seq, n_heads, d_v), dtype=torch.float32, device=DEVICE)
    lse = torch.empty((n_seq, n_heads), dtype=torch.float32, device=DEVICE)
    decode_kernel[(n_seq,)](q_t, kv_t, lens, out, lse, kv_t.shape[1], scale,
                            H=n_heads, D_K=d_k, D_V=d_v, BLOCK_T=BLOCK_T)
    return out.cpu(), lse.cpu()
