"""What every decode version's host side shares: one checked call, one kernel launch, and the
launch configuration a GPU ships.

  Call            one mla_decode_with_kvcache call after its inputs were checked (the dense call)
  Launch          one kernel launch, kernel[grid](**args, **constexprs, num_warps=, num_stages=);
                  a launcher turns a Call into a list of them, which the compile report compiles
  combine_launch, uniform_combine_table   the launch that merges split sequences by lse (the
                  split-KV versions and the sparse kernel's top-k split share it)
  default_block_m, default_launch   the tile shape and warps a GPU launch ships
  check_tile      a tile size must be a power of two >= 16 (tl.dot's smallest tile)
  interpreting    True under Triton's CPU interpreter (TRITON_INTERPRET=1)

The kernels live in mla_decode (versions 1-4), gluon_decode, seesaw_decode (5, 6) and
sparse_decode; each imports this module and none imports another for these, so the modules
form no import cycle (tests/test_import_graph.py)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch
import triton
import triton.language as tl


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


@dataclass
class Launch:
    """One kernel launch: kernel[grid](**args, **constexprs, num_warps=..., num_stages=..., **options).
    The compile report and gpu_check.sh's compile step compile exactly these
    (kernels/compile_report.py, kernels/gpu_warm.py)."""
    label: str
    kernel: object
    grid: tuple
    args: dict
    constexprs: dict
    num_warps: int
    num_stages: int = 1
    tile: tuple | None = None  # (BLOCK_M, BLOCK_N) of a kernel that fixes them inside (Gluon)
    options: dict = field(default_factory=dict)  # other compile options of the launch (maxnreg: version 6)

    @property
    def block_shape(self) -> tuple:
        """(BLOCK_M, BLOCK_N) of the launch (None where the kernel has no such tile: naive's rows)."""
        return self.tile or (self.constexprs.get("BLOCK_M"), self.constexprs.get("BLOCK_N"))

    def __call__(self):
        self.kernel[self.grid](**self.args, **self.constexprs, num_warps=self.num_warps, num_stages=self.num_stages,
                               **self.options)

    def compile_options(self) -> dict:
        """What triton.compile takes besides the source: warps, stages and the launch's options."""
        return dict(num_warps=self.num_warps, num_stages=self.num_stages, **self.options)


@dataclass
class Call:
    """One mla_decode_with_kvcache call, checked. gpu=True builds the configuration a GPU
    launch ships (the compile report uses it on CPU tensors)."""
    q: torch.Tensor  # [b, s_q, h_q, 576]
    kv_cache: torch.Tensor  # [num_blocks, page, 1, 576] or uint8 [..., 656]
    block_table: torch.Tensor  # [b, max_blocks] int32
    cache_seqlens: torch.Tensor  # [b] int32
    out: torch.Tensor  # [b, s_q, h_q, 512]
    lse: torch.Tensor  # [b, h_q, s_q] fp32
    causal: bool
    is_fp8: bool
    qk_scale_log2: float
    options: dict
    gpu: bool
    batch_invariant: bool = False  # no split of a sequence's keys: its result independent of the batch
    b: int = field(init=False)
    s_q: int = field(init=False)
    h_q: int = field(init=False)
    page: int = field(init=False)

    def __post_init__(self):
        self.b, self.s_q, self.h_q = self.q.shape[:3]
        self.page = self.kv_cache.shape[1]

    @property
    def n_rows(self):
        return self.s_q * self.h_q

    @property
    def dtype(self):
        return compute_dtype(self.q, self.gpu)

    def common_args(self):
        return dict(q_ptr=self.q, kv_ptr=self.kv_cache, bt_ptr=self.block_table, seqlens_ptr=self.cache_seqlens,
                    h_q=self.h_q, s_q=self.s_q, stride_bt=self.block_table.stride(0),
                    stride_row=self.kv_cache.stride(1), qk_scale_log2=self.qk_scale_log2)

    def common_constexprs(self):
        return dict(PAGE=self.page, CAUSAL=bool(self.causal), IS_FP8=bool(self.is_fp8))

    def take(self, name, default):
        return self.options.pop(name, default)


def uniform_combine_table(b: int, num_splits: int, device) -> torch.Tensor:
    """The combine table (kernels.plan's record: sequence, first slot, slots) [b, 3] int32 of a
    batch where every sequence i has num_splits pieces in slots i*num_splits ... Made on the
    device: a host tensor copied over would be a copy (and a sync) inside every timed call."""
    from .plan import COMBINE_FIRST_SLOT, COMBINE_SEQUENCE, COMBINE_SLOTS, COMBINE_WIDTH
    seqs = torch.arange(b, dtype=torch.int32, device=device)
    combine = torch.empty(b, int(COMBINE_WIDTH), dtype=torch.int32, device=device)
    combine[:, int(COMBINE_SEQUENCE)] = seqs
    combine[:, int(COMBINE_FIRST_SLOT)] = seqs * num_splits
    combine[:, int(COMBINE_SLOTS)] = num_splits
    return combine


def combine_launch(call, o_part, lse_part, combine, max_count: int) -> Launch:
    """The launch of tiles._combine_kernel that merges the pieces of the sequences in `combine`
    into call.out and call.lse (any call with out, lse, h_q, s_q, n_rows: dense or sparse).
    o_part [slots, s_q*h_q, 512] fp32 and lse_part [slots, s_q*h_q] fp32 (base 2)."""
    from .tiles import _combine_kernel
    return Launch("combine", _combine_kernel, (call.n_rows, combine.shape[0]),
                  dict(o_part_ptr=o_part, lse_part_ptr=lse_part, combine_ptr=combine, out_ptr=call.out,
                       lse_ptr=call.lse, h_q=call.h_q, s_q=call.s_q),
                  dict(SPLITS_P2=triton.next_power_of_2(max(1, max_count))), 4)


def compute_dtype(q: torch.Tensor, gpu: bool):
    """The dots' operand type: q's dtype on a GPU. The interpreter runs bf16 dots on raw bit
    patterns, so there (gpu=False) they compute in fp32."""
    if not gpu:
        return tl.float32
    return tl.bfloat16 if q.dtype == torch.bfloat16 else tl.float16


def check_tile(name, value):
    if value < 16 or value & (value - 1):
        raise ValueError(f"{name} must be a power of two >= 16 (tl.dot's smallest tile), got {value}")


def default_block_m(s_q: int, h_q: int) -> int:
    """Query rows per program: all s_q*h_q rows up to 64 (tl.dot needs at least 16)."""
    return max(16, min(64, triton.next_power_of_2(s_q * h_q)))


def default_launch(block_m: int, is_fp8: bool = False):
    """(BLOCK_N, num_warps, num_stages) shipped for a BLOCK_M on a GPU (versions 2-4, sparse).

    Chosen from sm_90 compiles (python -m kernels.compile_report), not from timings --
    no GPU run has tuned them yet. Registers are the limit: the fp32 accumulator
    [BLOCK_M, 512] alone is 128 registers per thread at BLOCK_M=64 over 8 warps. FP8
    tiles, dequantized in registers, stay at 16 rows below BLOCK_M=64. BLOCK_M=64 is the
    first size whose dots compile to Hopper's wgmma (smaller ones use mma.sync). Whether
    the next tile's copies overlap this tile's MMAs is read off the SASS by the compile
    report, not assumed here."""
    if block_m <= 32:
        return (16 if is_fp8 else 32), (4 if block_m <= 16 else 8), 2
    return 32, 8, 2
