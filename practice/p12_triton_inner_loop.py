"""Problem 12 - triton_inner_loop: the decode kernel's inner loop in Triton.

Chapter: notebooks/06_decode_kernel.ipynb
Check your answer: python practice/judge.py 12     (hints: python practice/judge.py 12 --hint)
The whole statement: python practice/judge.py 12 --statement

Needs torch and triton. Without a GPU the kernel runs in Triton's CPU interpreter
(TRITON_INTERPRET=1, set below and by the judge): slow but exact enough, fp32 only.
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
    """One program = one sequence, all H heads (they share the cached rows).

    q   [b, H, D_K]      kv  [b, t_max, D_K] (V = first D_V dims; rows >= seqlen are NaN)
    out [b, H, D_V]      lse [b, H]
    """
    b = tl.program_id(0)
    seqlen = tl.load(seqlens_ptr + b)
    offs_h = tl.arange(0, H)
    offs_k = tl.arange(0, D_K)
    offs_v = tl.arange(0, D_V)
    q = tl.load(q_ptr + b * H * D_K + offs_h[:, None] * D_K + offs_k[None, :])  # [H, D_K]
    kv_base = kv_ptr + b * t_max * D_K                     # row r starts at kv_base + r * D_K
    m = tl.full([H], float("-inf"), tl.float32)            # running max of each head's scores
    l = tl.zeros([H], tl.float32)                          # running sum of exp(score - m)
    acc = tl.zeros([H, D_V], tl.float32)                   # running sum of exp(score - m) * v

    # TODO(problem 12): for start in range(0, seqlen, BLOCK_T): load a tile of k and v (masked),
    #           score it, update m, l and acc with the online-softmax rescaling.

    out = acc  # TODO(problem 12): normalise by l (an empty sequence must give 0, not NaN)
    lse = m    # TODO(problem 12): the log-sum-exp of each head's scores (-inf for an empty sequence)
    tl.store(out_ptr + b * H * D_V + offs_h[:, None] * D_V + offs_v[None, :], out)
    tl.store(lse_ptr + b * H + offs_h, lse)


def triton_inner_loop(q, kv, cache_seqlens, d_v, scale):
    """q [b, h_q, d_k], kv [b, t_max, d_k], cache_seqlens [b] -> (out [b, h_q, d_v], lse [b, h_q])."""
    # TODO(problem 12): delete the next line once decode_kernel is written.
    raise NotImplementedError("problem 12: write the loop in decode_kernel, then delete this line")
    q_t = torch.as_tensor(q, dtype=torch.float32).to(DEVICE).contiguous()       # [b, H, D_K]
    kv_t = torch.as_tensor(kv, dtype=torch.float32).to(DEVICE).contiguous()     # [b, t_max, D_K]
    lens = torch.as_tensor(cache_seqlens, dtype=torch.int32).to(DEVICE)         # [b]
    n_seq, n_heads, d_k = q_t.shape
    out = torch.empty((n_seq, n_heads, d_v), dtype=torch.float32, device=DEVICE)
    lse = torch.empty((n_seq, n_heads), dtype=torch.float32, device=DEVICE)
    decode_kernel[(n_seq,)](q_t, kv_t, lens, out, lse, kv_t.shape[1], scale,
                            H=n_heads, D_K=d_k, D_V=d_v, BLOCK_T=BLOCK_T)
    return out.cpu(), lse.cpu()
