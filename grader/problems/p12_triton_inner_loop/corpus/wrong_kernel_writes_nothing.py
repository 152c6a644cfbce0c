"""expect: fail
slip: computes out and lse with torch into the output tensors, then launches a kernel that reads the lengths and writes nothing.
reason: no_kernel
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
    seqlen = tl.load(seqlens_ptr + b)      # TODO: the loop
    seqlen = seqlen + 0


def triton_inner_loop(q, kv, cache_seqlens, d_v, scale):
    q_t = torch.as_tensor(q, dtype=torch.float32).to(DEVICE).contiguous()
    kv_t = torch.as_tensor(kv, dtype=torch.float32).to(DEVICE).contiguous()
    lens = torch.as_tensor(cache_seqlens, dtype=torch.int32).to(DEVICE)
    n_seq, n_heads, d_k = q_t.shape
    out = torch.zeros((n_seq, n_heads, d_v), dtype=torch.float32, device=DEVICE)
    lse = torch.full((n_seq, n_heads), float("-inf"), dtype=torch.float32, device=DEVICE)
    for i in range(n_seq):
        n = int(lens[i])
        if n:
            s = q_t[i] @ kv_t[i, :n].T * scale
            lse[i] = torch.logsumexp(s, dim=1)
            out[i] = torch.softmax(s, dim=1) @ kv_t[i, :n, :d_v]
    decode_kernel[(n_seq,)](q_t, kv_t, lens, out, lse, kv_t.shape[1], scale,
                            H=n_heads, D_K=d_k, D_V=d_v, BLOCK_T=BLOCK_T)
    return out.cpu(), lse.cpu()
