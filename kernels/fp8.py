"""FlashMLA's FP8 cache row in torch: the same format as mlacourse.fp8 (numpy), a
second implementation that the tests hold to byte-for-byte agreement with the first.

One token = 656 bytes:
  bytes   0..511  512 latents as float8 e4m3fn, tile k = values 128k..128k+127
  bytes 512..527  4 float32 scales; stored code * scale[k] = value
  bytes 528..655  64 rope values as bfloat16
scale[k] = max|tile k| / 448 (1.0 for an all-zero tile)."""
from __future__ import annotations

import torch

from .dims import D_LATENT, D_ROPE
from .dims import FP8_ROW_BYTES as ROW_BYTES  # 656
from .dims import FP8_TILE as TILE

E4M3_MAX = 448.0
N_TILES = D_LATENT // TILE


def _to_e4m3_exact(x64: torch.Tensor) -> torch.Tensor:
    """float64 -> float8_e4m3fn, rounded once to nearest-even.

    torch converts to float8 through float32, which could round twice. Rounding to
    float32 with round-to-odd first (keep the truncated value, force its last bit to 1
    when it was inexact) makes the second rounding exact: float32 carries 20 more
    mantissa bits than e4m3."""
    f32 = x64.to(torch.float32)
    inexact = f32.to(torch.float64) != x64
    toward_zero = torch.where(f32.abs().to(torch.float64) > x64.abs(),
                              torch.nextafter(f32, torch.zeros_like(f32)), f32)
    odd = (toward_zero.view(torch.int32) | 1).view(torch.float32)
    return torch.where(inexact, odd, f32).to(torch.float8_e4m3fn)


def pack_fp8_rows(latent: torch.Tensor, rope: torch.Tensor) -> torch.Tensor:
    """latent [..., 512], rope [..., 64] (any float dtype) -> uint8 [..., 656]."""
    if latent.shape[-1] != D_LATENT or rope.shape[-1] != D_ROPE or latent.shape[:-1] != rope.shape[:-1]:
        raise ValueError(f"pack_fp8_rows wants latent [..., {D_LATENT}] and rope [..., {D_ROPE}] with the "
                         f"same leading shape, got {tuple(latent.shape)} and {tuple(rope.shape)}")
    lead = latent.shape[:-1]
    tiles = latent.to(torch.float64).reshape(*lead, N_TILES, TILE)  # [..., 4, 128]
    amax = tiles.abs().amax(dim=-1)  # [..., 4]
    scale = torch.where(amax > 0, amax / E4M3_MAX, torch.ones_like(amax)).to(torch.float32)
    scaled = (tiles / scale.to(torch.float64)[..., None]).clamp(-E4M3_MAX, E4M3_MAX)
    codes = _to_e4m3_exact(scaled).view(torch.uint8).reshape(*lead, D_LATENT)
    codes = torch.where((codes & 0x7F) == 0, torch.zeros_like(codes), codes)  # no -0: one code for zero
    scale_bytes = scale.contiguous().view(torch.uint8).reshape(*lead, 4 * N_TILES)
    rope_bytes = rope.to(torch.float32).to(torch.bfloat16).contiguous().view(torch.uint8).reshape(*lead, 2 * D_ROPE)
    return torch.cat([codes, scale_bytes, rope_bytes], dim=-1)


def pack_fp8_kvcache(kv_cache: torch.Tensor) -> torch.Tensor:
    """kv_cache [num_blocks, page_block_size, 1, 576] (float) -> uint8 [num_blocks, page_block_size, 1, 656].
    NaN-poisoned slots stay NaN-ish garbage (their scale is NaN): a kernel must never read them."""
    return pack_fp8_rows(kv_cache[..., :D_LATENT], kv_cache[..., D_LATENT:])


def unpack_fp8_rows(rows: torch.Tensor) -> torch.Tensor:
    """uint8 [..., 656] -> float32 [..., 576] = [dequantized latent, rope]."""
    if rows.dtype != torch.uint8 or rows.shape[-1] != ROW_BYTES:
        raise ValueError(f"unpack_fp8_rows wants uint8 [..., {ROW_BYTES}], got {rows.dtype} {tuple(rows.shape)}")
    rows = rows.contiguous()
    lead = rows.shape[:-1]
    codes = rows[..., :D_LATENT].contiguous().view(torch.float8_e4m3fn).to(torch.float32)
    scale = rows[..., D_LATENT:D_LATENT + 4 * N_TILES].contiguous().view(torch.float32)  # [..., 4]
    rope = rows[..., D_LATENT + 4 * N_TILES:].contiguous().view(torch.bfloat16).to(torch.float32)
    latent = (codes.reshape(*lead, N_TILES, TILE) * scale[..., None]).reshape(*lead, D_LATENT)
    return torch.cat([latent, rope], dim=-1)
