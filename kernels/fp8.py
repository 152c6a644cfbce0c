"""FlashMLA's FP8 cache layouts in torch: the same formats as mlacourse.fp8 (numpy), a second
implementation that the tests hold to byte-for-byte agreement with the first.

V3.2, one token = one 656-byte row (what the kernels read):
  bytes   0..511  512 latents as float8 e4m3fn, tile k = values 128k..128k+127
  bytes 512..527  4 float32 scales; stored code * scale[k] = value
  bytes 528..655  64 rope values as bfloat16
MODEL1_FP8Sparse (448 nope + 64 rope, 64-value tiles, 7 UE8M0 scales, 584 B per token; the
kernels do not read it): `pack_model1_kvcache` returns FlashMLA's tensor, uint8 [num_blocks,
P, 1, 584] whose page stride is mlacourse.fp8.model1_page_bytes(P) (a multiple of 576).

Scales (`scales=`, mlacourse.fp8's rules): "pow2" (default) = 2 ** ceil(log2(max(max|x| / 448,
1e-4))), FlashMLA's _cast_scale_inv_to_ue8m0 written out here in float64; "amax" = max|x| / 448
as float32 (1.0 for an all-zero tile). A NaN tile gets a NaN scale."""
from __future__ import annotations

import torch

from mlacourse.fp8 import (DEFAULT_SCALES, MODEL1_DATA_BYTES, MODEL1_NOPE, MODEL1_ROPE, MODEL1_SCALE_BYTES,
                           MODEL1_TILE, MODEL1_TILES, MODEL1_TOKEN_BYTES, SCALE_RULES, model1_page_bytes)

from .dims import D_LATENT, D_ROPE
from .dims import FP8_ROW_BYTES as ROW_BYTES  # 656
from .dims import FP8_TILE as TILE

E4M3_MAX = 448.0
N_TILES = D_LATENT // TILE
POW2_SCALE_INV_FLOOR = 1e-4  # FlashMLA clamps max|x| / 448 here before rounding up to a power of two


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


def tile_scales(amax: torch.Tensor, scales: str = DEFAULT_SCALES) -> torch.Tensor:
    """max|x| of each tile (float64) -> its float32 scale under the rule `scales`."""
    if scales not in SCALE_RULES:
        raise ValueError(f"scales must be one of {SCALE_RULES}, got {scales!r}")
    if scales == "amax":
        s = torch.where(amax > 0, amax / E4M3_MAX, torch.ones_like(amax))
    else:
        s = torch.pow(2.0, torch.ceil(torch.log2(torch.clamp_min(amax / E4M3_MAX, POW2_SCALE_INV_FLOOR))))
    return torch.where(torch.isnan(amax), amax, s).to(torch.float32)


def quantize_tiles(x: torch.Tensor, tile: int, scales: str = DEFAULT_SCALES):
    """x [..., n*tile] -> (uint8 e4m3 codes [..., n*tile], float32 scales [..., n])."""
    lead, width = x.shape[:-1], x.shape[-1]
    tiles = x.to(torch.float64).reshape(*lead, width // tile, tile)  # [..., n, tile]
    scale = tile_scales(tiles.abs().amax(dim=-1), scales)  # [..., n]
    scaled = (tiles / scale.to(torch.float64)[..., None]).clamp(-E4M3_MAX, E4M3_MAX)
    codes = _to_e4m3_exact(scaled).view(torch.uint8).reshape(*lead, width)
    codes = torch.where((codes & 0x7F) == 0, torch.zeros_like(codes), codes)  # no -0: one code for zero
    nan = torch.isnan(tiles).reshape(*lead, width)
    return torch.where(nan, torch.full_like(codes, 0x7F), codes), scale


def pack_fp8_rows(latent: torch.Tensor, rope: torch.Tensor, scales: str = DEFAULT_SCALES) -> torch.Tensor:
    """latent [..., 512], rope [..., 64] (any float dtype) -> uint8 [..., 656]."""
    if latent.shape[-1] != D_LATENT or rope.shape[-1] != D_ROPE or latent.shape[:-1] != rope.shape[:-1]:
        raise ValueError(f"pack_fp8_rows wants latent [..., {D_LATENT}] and rope [..., {D_ROPE}] with the "
                         f"same leading shape, got {tuple(latent.shape)} and {tuple(rope.shape)}")
    lead = latent.shape[:-1]
    codes, scale = quantize_tiles(latent, TILE, scales)  # [..., 512], [..., 4]
    scale_bytes = scale.contiguous().view(torch.uint8).reshape(*lead, 4 * N_TILES)
    rope_bytes = rope.to(torch.float32).to(torch.bfloat16).contiguous().view(torch.uint8).reshape(*lead, 2 * D_ROPE)
    return torch.cat([codes, scale_bytes, rope_bytes], dim=-1)


def pack_fp8_kvcache(kv_cache: torch.Tensor, scales: str = DEFAULT_SCALES) -> torch.Tensor:
    """kv_cache [num_blocks, page_block_size, 1, 576] (float) -> uint8 [num_blocks, page_block_size, 1, 656].
    NaN-poisoned slots stay poison (NaN codes and a NaN scale): a kernel must never read them."""
    return pack_fp8_rows(kv_cache[..., :D_LATENT], kv_cache[..., D_LATENT:], scales)


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


# ---- MODEL1_FP8Sparse ------------------------------------------------------------------------

def pack_model1_kvcache(kv_cache: torch.Tensor) -> torch.Tensor:
    """kv_cache [num_blocks, P, 1, 512] (448 nope + 64 rope, any float dtype) -> FlashMLA's MODEL1
    tensor: uint8 [num_blocks, P, 1, 584] with strides (model1_page_bytes(P), 584, 584, 1), a view
    of one page buffer per block (tokens' codes and rope, then their scales; padding 0).
    The [.., 584] "rows" of the view are not tokens: token t's bytes are at 576*t and 576*P + 8*t."""
    if kv_cache.dim() != 4 or kv_cache.shape[2] != 1 or kv_cache.shape[3] != MODEL1_NOPE + MODEL1_ROPE:
        raise ValueError(f"pack_model1_kvcache wants [num_blocks, P, 1, {MODEL1_NOPE + MODEL1_ROPE}], got "
                         f"{tuple(kv_cache.shape)}")
    n, p = kv_cache.shape[:2]
    kv = kv_cache[:, :, 0]
    codes, scale = quantize_tiles(kv[..., :MODEL1_NOPE], MODEL1_TILE, "pow2")  # [n, P, 448], [n, P, 7]
    rope = kv[..., MODEL1_NOPE:].to(torch.float32).to(torch.bfloat16).contiguous().view(torch.uint8)  # [n, P, 128]
    # UE8M0 code = the scale's float32 exponent field (a power of two's mantissa bits are 0); NaN -> 255
    exp = ((scale.view(torch.int32) >> 23) & 0xFF).to(torch.uint8)
    scale_codes = torch.zeros(n, p, MODEL1_SCALE_BYTES, dtype=torch.uint8, device=kv.device)
    scale_codes[..., :MODEL1_TILES] = torch.where(torch.isnan(scale), torch.full_like(exp, 255), exp)
    page_bytes = model1_page_bytes(p)
    buf = torch.zeros(n, page_bytes, dtype=torch.uint8, device=kv.device)
    buf[:, :p * MODEL1_DATA_BYTES] = torch.cat([codes, rope], dim=-1).reshape(n, -1)
    buf[:, p * MODEL1_DATA_BYTES:p * MODEL1_TOKEN_BYTES] = scale_codes.reshape(n, -1)
    return buf.as_strided((n, p, 1, MODEL1_TOKEN_BYTES), (page_bytes, MODEL1_TOKEN_BYTES, MODEL1_TOKEN_BYTES, 1))


def unpack_model1_kvcache(packed: torch.Tensor) -> torch.Tensor:
    """FlashMLA's MODEL1 tensor uint8 [num_blocks, P, 1, 584] (page stride = stride(0)) ->
    float32 [num_blocks, P, 1, 512] = [dequantized nope, rope]."""
    if packed.dtype != torch.uint8 or packed.dim() != 4 or packed.shape[2:] != (1, MODEL1_TOKEN_BYTES) \
            or packed.stride()[1:] != (MODEL1_TOKEN_BYTES, MODEL1_TOKEN_BYTES, 1):
        raise ValueError(f"unpack_model1_kvcache wants uint8 [num_blocks, P, 1, {MODEL1_TOKEN_BYTES}] with "
                         f"contiguous pages, got {packed.dtype} {tuple(packed.shape)} strides {packed.stride()}")
    n, p = packed.shape[:2]
    page = packed.as_strided((n, p * MODEL1_TOKEN_BYTES), (packed.stride(0), 1))
    data = page[:, :p * MODEL1_DATA_BYTES].reshape(n, p, MODEL1_DATA_BYTES)
    codes = data[..., :MODEL1_NOPE].contiguous().view(torch.float8_e4m3fn).to(torch.float32)
    rope = data[..., MODEL1_NOPE:].contiguous().view(torch.bfloat16).to(torch.float32)
    e = page[:, p * MODEL1_DATA_BYTES:].reshape(n, p, MODEL1_SCALE_BYTES)[..., :MODEL1_TILES].to(torch.float32)
    scale = torch.where(e == 255, torch.full_like(e, float("nan")), torch.exp2(e - 127))  # [n, P, 7]
    nope = (codes.reshape(n, p, MODEL1_TILES, MODEL1_TILE) * scale[..., None]).reshape(n, p, MODEL1_NOPE)
    return torch.cat([nope, rope], dim=-1)[:, :, None]
