"""The whole decode step of one MLA layer: the attention weights as well as the cache.

The attention core (chapter 5's roofline) reads each sequence's cached rows. A decode step
also reads every attention weight matrix once, and that read is shared by every sequence in
the batch. Per layer (mlacourse names; DeepSeek's reference names in brackets):

  W_DQ        [d_model, q_lora_rank]             (wq_a)   query down-projection
  q_norm      [q_lora_rank]                      (q_norm) RMSNorm gain
  W_UQ        [q_lora_rank, H * (d_nope+d_rope)] (wq_b)   query up-projection, rope part included
  W_DKV|W_KR  [d_model, d_latent + d_rope]       (wkv_a)  the latent and the shared rope key, one GEMM
  kv_norm     [d_latent]                         (kv_norm) on the latent only
  W_UK|W_UV   [d_latent, H * (d_nope + d_v)]     (wkv_b)  per head: 128 rows of W_UK, then 128 of W_UV
  W_O         [H * d_v, d_model]                 (wo)

Conventions as in flops.py: a multiply-add is 2 FLOPs; bytes are what crosses device memory
once per step. Weight formats:
  'fp8'  the DeepSeek-V3 checkpoint: every matrix e4m3 (1 byte) plus one float32 scale per
         128 x 128 block (weight_scale_inv); the two norm gains in bf16.
  'bf16' every number 2 bytes (the same checkpoint dequantized).
"""
from __future__ import annotations

import math

from .config import MLAConfig
from .flops import decode_bytes, decode_flops

FP8_BLOCK = 128  # DeepSeek-V3's weight quantization block (quantization_config weight_block_size)


def attention_matrices(cfg: MLAConfig) -> dict[str, tuple[int, int]]:
    """The layer's weight matrices as (in_features, out_features)."""
    if not cfg.q_lora_rank:
        q = {"W_Q": (cfg.d_model, cfg.n_heads * cfg.d_qk)}
    else:
        q = {"W_DQ": (cfg.d_model, cfg.q_lora_rank), "W_UQ": (cfg.q_lora_rank, cfg.n_heads * cfg.d_qk)}
    return {**q,
            "W_DKV|W_KR": (cfg.d_model, cfg.d_latent + cfg.d_rope),
            "W_UK|W_UV": (cfg.d_latent, cfg.n_heads * (cfg.d_nope + cfg.d_v)),
            "W_O": (cfg.n_heads * cfg.d_v, cfg.d_model)}


def norm_gains(cfg: MLAConfig) -> dict[str, int]:
    """The RMSNorm gain vectors of the layer (q_norm only with a low-rank query)."""
    return ({"q_norm": cfg.q_lora_rank} if cfg.q_lora_rank else {}) | {"kv_norm": cfg.d_latent}


def attention_params(cfg: MLAConfig) -> int:
    """Parameters of one layer's attention: every matrix element and both norm gains."""
    return sum(i * o for i, o in attention_matrices(cfg).values()) + sum(norm_gains(cfg).values())


def fp8_block_scales(in_features: int, out_features: int, block: int = FP8_BLOCK) -> int:
    """float32 scales of one block-quantized matrix: ceil(out/block) * ceil(in/block)."""
    return math.ceil(out_features / block) * math.ceil(in_features / block)


def attention_weight_bytes(cfg: MLAConfig, fmt: str = "fp8") -> int:
    """Bytes of one layer's attention weights in `fmt` ('fp8' as in the checkpoint, 'bf16')."""
    mats, norms = attention_matrices(cfg), sum(norm_gains(cfg).values())
    elements = sum(i * o for i, o in mats.values())
    if fmt == "bf16":
        return 2 * (elements + norms)
    if fmt == "fp8":
        scales = sum(fp8_block_scales(i, o) for i, o in mats.values())
        return elements + 4 * scales + 2 * norms
    raise ValueError(f"unknown weight format {fmt!r}; known: 'fp8', 'bf16'")


def projection_flops_per_token(cfg: MLAConfig) -> int:
    """FLOPs of every projection for one new token: 2 per matrix element. In the absorbed
    path W_UK and W_UV are applied to the query and the latent output, which costs exactly
    2 * (their elements) too (chapter 4, section 4.2)."""
    return 2 * sum(i * o for i, o in attention_matrices(cfg).values())


def _check(batch, context):
    if int(batch) != batch or batch < 1:
        raise ValueError(f"batch must be a whole number >= 1, got {batch!r}")
    if int(context) != context or context < 1:
        raise ValueError(f"context must be a whole number of cached tokens >= 1, got {context!r}")


def decode_step(cfg: MLAConfig, batch: int, context: int, kv_row_bytes: int | None = None,
                weights: str = "fp8") -> dict:
    """One decode step (s_q = 1) of one layer for `batch` sequences of `context` cached tokens.

    Returns FLOPs and bytes of the attention core alone (FlashMLA's accounting, per sequence
    times batch) and of the whole step (core + every projection + the weights read once).
    kv_row_bytes: bytes of one cached row (default bf16: 2 * (d_latent + d_rope) = 1152)."""
    _check(batch, context)
    d_k, d_v = cfg.d_latent + cfg.d_rope, cfg.d_latent
    row = 2 * d_k if kv_row_bytes is None else kv_row_bytes
    core_flops = batch * decode_flops(cfg.n_heads, 1, context, d_k, d_v)
    core_bytes = batch * decode_bytes(cfg.n_heads, 1, context, d_k, d_v, kv_row_bytes=row)
    w_bytes = attention_weight_bytes(cfg, weights)
    proj_flops = batch * projection_flops_per_token(cfg)
    hidden_io = batch * 2 * cfg.d_model * 2  # the bf16 hidden state in and the layer output out
    return {
        "core_flops": core_flops, "core_bytes": core_bytes,
        "core_intensity": core_flops / core_bytes,
        "kv_bytes": batch * context * row, "weight_bytes": w_bytes,
        "step_flops": core_flops + proj_flops,
        "step_bytes": core_bytes + w_bytes + hidden_io,
        "step_intensity": (core_flops + proj_flops) / (core_bytes + w_bytes + hidden_io),
    }


def replicated_and_split_weight_bytes(cfg: MLAConfig, fmt: str = "fp8") -> tuple[int, int]:
    """Under tensor parallelism by heads (DeepSeek's reference: wq_a and wkv_a are plain
    Linear layers, wq_b and wkv_b column-parallel, wo row-parallel) the down-projections and
    norms are replicated on every GPU and the per-head matrices are split.
    Returns (replicated bytes, split bytes) of one layer; they add up to the layer's bytes."""
    per_head = {"W_UQ", "W_Q", "W_UK|W_UV", "W_O"}
    mats = attention_matrices(cfg)

    def nbytes(names):
        el = sum(mats[n][0] * mats[n][1] for n in names)
        if fmt == "bf16":
            return 2 * el
        if fmt == "fp8":
            return el + 4 * sum(fp8_block_scales(*mats[n]) for n in names)
        raise ValueError(f"unknown weight format {fmt!r}; known: 'fp8', 'bf16'")

    split = nbytes([n for n in mats if n in per_head])
    norms = 2 * sum(norm_gains(cfg).values()) if fmt in ("fp8", "bf16") else 0
    return nbytes([n for n in mats if n not in per_head]) + norms, split


def per_gpu_step_bytes(cfg: MLAConfig, n_gpus: int, mode: str, batch: int, context: int,
                       kv_row_bytes: int | None = None, weights: str = "fp8") -> dict:
    """Bytes one GPU holds and reads per decode step of one layer when `n_gpus` GPUs serve
    `batch` sequences of `context` tokens, with attention split by heads ('tp') or by
    requests ('dp'). TP: every GPU holds the replicated weights, 1/n of the per-head ones,
    and every sequence's whole latent cache (the latent feeds every head). DP: every GPU holds
    all the weights and the cache of its batch/n sequences."""
    _check(batch, context)
    if mode not in ("tp", "dp"):
        raise ValueError(f"mode must be 'tp' or 'dp', got {mode!r}")
    if int(n_gpus) != n_gpus or n_gpus < 1:
        raise ValueError(f"n_gpus must be a whole number >= 1, got {n_gpus!r}")
    if mode == "tp" and cfg.n_heads % n_gpus:
        raise ValueError(f"tensor parallelism splits the {cfg.n_heads} heads: n_gpus={n_gpus} must divide it")
    if mode == "dp" and batch % n_gpus:
        raise ValueError(f"data parallelism splits the batch: batch={batch} must be a multiple of n_gpus={n_gpus}")
    row = 2 * (cfg.d_latent + cfg.d_rope) if kv_row_bytes is None else kv_row_bytes
    rep, split = replicated_and_split_weight_bytes(cfg, weights)
    if mode == "tp":
        w, kv = rep + split / n_gpus, batch * context * row
    else:
        w, kv = rep + split, batch // n_gpus * context * row
    return {"weight_bytes": w, "kv_bytes": kv, "total_bytes": w + kv}
