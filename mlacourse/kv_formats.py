"""FlashMLA's FP8 KV-cache formats for sparse attention, byte accounting only (chapter 8).

Two formats are in FlashMLA's main (deepseek-ai/FlashMLA at 9241ae3, 2026-04-29: tests/quant.py
FP8KVCacheLayout, csrc/api/sparse_decode.h's bytes_per_token):

  V32_FP8Sparse     DeepSeek-V3 / V3.2: d_qk 576 = 512 latent + 64 rope. Per token, 656 bytes
                    together: 512 e4m3 latent values, 4 float32 scales (one per 128 values),
                    64 bf16 rope values. The kernel is told head_dim 576.
  MODEL1_FP8Sparse  d_qk 512 = 448 "nope" + 64 rope (the next model's shape; FlashMLA's source
                    calls it MODEL1 and names no model). Per token 584 bytes: 448 e4m3 values
                    in 7 tiles of 64, 64 bf16 rope values, 7 UE8M0 scales (one byte each: a
                    power of two) and 1 byte of padding. A page block is two planes: first
                    every token's 576 bytes of values (448 + 128), then every token's 8 scale
                    bytes; the block is allocated in multiples of 576 bytes.

The quantizer of tests/quant.py rounds every scale up to a power of two (its
_cast_scale_inv_to_ue8m0) in both formats, so V3.2's float32 scales hold powers of two too.
The arithmetic of packing lives with the kernels; this module only counts bytes."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FP8KVFormat:
    name: str
    d_nope: int  # quantized values per token (e4m3, 1 byte each)
    d_rope: int  # bf16 values per token, not quantized
    tile: int  # values that share one scale
    scale_bytes: int  # 4: float32; 1: UE8M0 (an 8-bit exponent: a power of two)
    pad_bytes: int  # padding per token after the scales
    planes: bool  # False: each token's bytes together; True: a block's values, then its scales
    block_align: int | None  # a page block's bytes are rounded up to a multiple of this (None: not)

    @property
    def d_qk(self) -> int:
        return self.d_nope + self.d_rope

    @property
    def n_scales(self) -> int:
        return self.d_nope // self.tile

    @property
    def bytes_per_token(self) -> int:
        """d_nope e4m3 + 2 * d_rope (bf16) + the scales + padding: 656 (V3.2), 584 (MODEL1)."""
        return self.d_nope + 2 * self.d_rope + self.n_scales * self.scale_bytes + self.pad_bytes

    def block_bytes(self, page_block_size: int) -> int:
        """Bytes one page block of page_block_size tokens occupies (padding included)."""
        if int(page_block_size) != page_block_size or page_block_size < 1:
            raise ValueError(f"page_block_size must be a whole number >= 1, got {page_block_size!r}")
        raw = page_block_size * self.bytes_per_token
        if self.block_align is None:
            return raw
        return -(-raw // self.block_align) * self.block_align

    def token_offsets(self, slot: int, page_block_size: int) -> dict:
        """Byte offsets inside its page block of token `slot`'s values and scales."""
        if not 0 <= slot < page_block_size:
            raise ValueError(f"slot must be in 0..{page_block_size - 1}, got {slot}")
        values = self.d_nope + 2 * self.d_rope
        if not self.planes:
            return {"values": slot * self.bytes_per_token, "scales": slot * self.bytes_per_token + self.d_nope}
        return {"values": slot * values,
                "scales": page_block_size * values + slot * (self.n_scales * self.scale_bytes + self.pad_bytes)}


V32_FP8_SPARSE = FP8KVFormat("V32_FP8Sparse", d_nope=512, d_rope=64, tile=128, scale_bytes=4, pad_bytes=0,
                             planes=False, block_align=None)
MODEL1_FP8_SPARSE = FP8KVFormat("MODEL1_FP8Sparse", d_nope=448, d_rope=64, tile=64, scale_bytes=1, pad_bytes=1,
                                planes=True, block_align=576)
FORMATS = (V32_FP8_SPARSE, MODEL1_FP8_SPARSE)
