"""expect: fail
slip: leaves the stub's kernel as it is (no loop) and computes the answer in torch in the launcher, deleting the raise line.
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
    q_t = torch.as_tensor(q, dtype=torch.float32).to(DEVICE).contiguous()       # [b, H, D_K]
    kv_t = torch.as_tensor(kv, dtype=torch.float32).to(DEVICE).contiguous()     # [b, t_max, D_K]
    lens = torch.as_tensor(cache_seqlens, dtype=torch.int32).to(DEVICE)         # [b]
    n_seq, n_heads, d_k = q_t.shape
    out = torch.empty((n_seq, n_heads, d_v), dtype=torch.float32, device=DEVICE)
    lse = torch.empty((n_seq, n_heads), dtype=torch.float32, device=DEVICE)
    for i in range(n_seq):  # the answer here is not the kernel's: the judge launches the kernel itself
        n = int(lens[i])
        s = (q_t[i] @ kv_t[i, :n].T) * scale                                  # [H, n]
        lse[i] = torch.logsumexp(s, dim=1)
        out[i] = torch.softmax(s, dim=1) @ kv_t[i, :n, :d_v] if n else 0.0
    return out.cpu(), lse.cpu()
