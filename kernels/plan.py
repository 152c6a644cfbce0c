"""mla_decode_plan: the schedule of one decode batch, computed once and reused by every
layer (FlashMLA's get_mla_metadata plays this role).

The arithmetic is mlacourse.schedule.plan_decode (numpy); this module puts its tables on
the device in the layout the planned kernels read:

  segments    [n_seg, SEGMENT_WIDTH] int32   (sequence, first token, end token, partial slot or -1)
  part_start  [num_parts + 1] int32   part p runs segments part_start[p] .. part_start[p+1]-1
  combine     [n_split, COMBINE_WIDTH] int32  (sequence, first slot, slots) for sequences cut into pieces

The field offsets of both records are named below, once: the kernels (Triton and Gluon) read
field F of record j at ptr + j * WIDTH + F through these names.

A segment with slot -1 is a whole sequence: its program writes out and lse directly. The
pieces of a split sequence write normalized partial rows to slots base..base+n-1, which
the combine kernel merges by their log-sum-exps. The plan reads cache_seqlens on the host
(one device-to-host copy per batch, not per layer)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import triton.language as tl

from mlacourse.schedule import FIXED_OVERHEAD_BLOCKS, Plan, plan_decode

PLAN_BLOCK_M = 64  # query rows per program of the planned kernels
PLAN_BLOCK_N = 64  # the planner's unit of work, in keys (FlashMLA's page and KV tile)

# One segment record, a row of DecodePlan.segments (tl.constexpr: jitted kernels read them as globals)
SEG_SEQUENCE = tl.constexpr(0)  # the sequence i_b
SEG_FIRST = tl.constexpr(1)  # the piece's first token
SEG_END = tl.constexpr(2)  # one past its last token
SEG_SLOT = tl.constexpr(3)  # its partial slot, or -1: the piece is the whole sequence and writes out, lse
SEGMENT_WIDTH = tl.constexpr(4)
# One combine record, a row of DecodePlan.combine (and of split-KV's table, kernels.mla_decode)
COMBINE_SEQUENCE = tl.constexpr(0)  # the split sequence i_b
COMBINE_FIRST_SLOT = tl.constexpr(1)  # the slot of its first piece; its pieces' slots are consecutive
COMBINE_SLOTS = tl.constexpr(2)  # how many pieces
COMBINE_WIDTH = tl.constexpr(3)


@dataclass
class DecodePlan:
    b: int
    s_q: int
    h_q: int
    block_m: int
    block_n: int
    num_parts: int
    row_blocks: int
    num_slots: int
    segments: torch.Tensor  # [n_seg, SEGMENT_WIDTH] int32
    part_start: torch.Tensor  # [num_parts + 1] int32
    combine: torch.Tensor  # [n_split, COMBINE_WIDTH] int32
    host: Plan  # the numpy plan (work per part, for reports)

    @property
    def batch_invariant(self) -> bool:
        """No sequence is cut: each sequence's result is bitwise the same in any batch."""
        return self.host.batch_invariant

    def check(self, b: int, s_q: int, h_q: int, device):
        if (self.b, self.s_q, self.h_q) != (b, s_q, h_q):
            raise ValueError(f"this plan was made for b={self.b}, s_q={self.s_q}, h_q={self.h_q}; the call has "
                             f"b={b}, s_q={s_q}, h_q={h_q}: make one plan per batch shape with mla_decode_plan")
        if self.segments.device != torch.device(device) and not (self.segments.device.type == "cuda" ==
                                                                  torch.device(device).type):
            raise ValueError(f"plan tensors are on {self.segments.device}, the inputs on {device}")


def mla_decode_plan(cache_seqlens, h_q: int, s_q: int = 1, num_sms: int | None = None,
                    block_m: int | None = None, block_n: int = PLAN_BLOCK_N,
                    overhead: int = FIXED_OVERHEAD_BLOCKS, batch_invariant: bool = False) -> DecodePlan:
    """Plan one decode batch. cache_seqlens [b] int32 (any device); num_sms defaults to
    the device's SM count (132 on CPU, an H100/H200's, so the interpreter runs the GPU plan);
    block_m (query rows per program) defaults to the kernels' choice: all s_q*h_q rows, at
    least 16, at most 64. batch_invariant=True cuts no sequence (mlacourse.schedule.plan_decode):
    every sequence's output is then bitwise the same whatever else is in the batch."""
    if not isinstance(cache_seqlens, torch.Tensor) or cache_seqlens.dim() != 1:
        raise TypeError("cache_seqlens must be a 1-D torch tensor [b]")
    device = cache_seqlens.device
    if block_m is None:
        block_m = max(16, min(PLAN_BLOCK_M, 1 << max(0, s_q * h_q - 1).bit_length()))
    if num_sms is None:
        num_sms = sm_count(device)
    if num_sms < 1:
        raise ValueError(f"num_sms must be >= 1, got {num_sms}")
    lens = cache_seqlens.detach().to("cpu", torch.int64).numpy()
    p = plan_decode(lens, h_q, s_q, num_sms, block_n=block_n, block_m=block_m, overhead=overhead,
                    batch_invariant=batch_invariant)
    seg = p.segments  # [n_seg, 4] in KV blocks, the same fields (mlacourse.schedule.Plan)
    tokens = np.empty((len(seg), int(SEGMENT_WIDTH)), dtype=np.int64)
    tokens[:, SEG_SEQUENCE] = seg[:, SEG_SEQUENCE]
    tokens[:, SEG_FIRST] = seg[:, SEG_FIRST] * block_n
    tokens[:, SEG_END] = np.minimum(seg[:, SEG_END] * block_n, lens[seg[:, SEG_SEQUENCE]])
    tokens[:, SEG_SLOT] = seg[:, SEG_SLOT]

    def dev(a):
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.int32)).to(device)

    return DecodePlan(len(lens), s_q, h_q, block_m, block_n, p.num_parts, p.row_blocks, p.num_slots,
                      dev(tokens), dev(p.part_start), dev(p.combine.reshape(-1, int(COMBINE_WIDTH))), p)


_SM_COUNT = {}


def sm_count(device) -> int:
    device = torch.device(device)
    if device.type != "cuda":
        return 132  # the interpreter has no SMs; an H100/H200's count keeps the GPU plan testable
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _SM_COUNT:
        _SM_COUNT[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _SM_COUNT[idx]
