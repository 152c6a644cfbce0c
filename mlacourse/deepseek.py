"""DeepSeek's own code beside ours: names, weight layouts, FP8 weights, the reference forward.

Two public implementations of V3's attention, both read for this module (nothing copied):
  * DeepSeek-V3's reference inference code, inference/model.py, class MLA (attn_impl
    "absorb" by default): wq_a, q_norm, wq_b, wkv_a, kv_norm, wkv_b, wo, softmax_scale.
  * Hugging Face transformers, models/deepseek_v3/modeling_deepseek_v3.py, class
    DeepseekV3Attention: q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa,
    kv_a_layernorm, kv_b_proj, o_proj. DeepSeek's inference/convert.py maps these names to
    the reference ones (and "weight_scale_inv" to "scale").
Both store a Linear weight as [out_features, in_features] (y = x W^T); mlacourse stores
[in, out] (y = x @ w). Everything here is plain numpy.
"""
from __future__ import annotations

import numpy as np

from .config import MLAConfig
from .fp8 import E4M3_MAX, e4m3_decode, e4m3_encode
from .layer import MLAWeights, rms_norm
from .rope import apply_rope

# mlacourse name, DeepSeek reference (MLA), Hugging Face (DeepseekV3Attention), what it is
NAME_MAP = [
    ("w_dq", "wq_a", "q_a_proj", "query down-projection d_model -> q_lora_rank (1536)"),
    ("q_norm", "q_norm", "q_a_layernorm", "RMSNorm on the 1536-dim query latent"),
    ("w_uq", "wq_b", "q_b_proj", "query up-projection 1536 -> H x (128 nope + 64 rope)"),
    ("w_dkv | w_kr", "wkv_a", "kv_a_proj_with_mqa", "one GEMM: d_model -> 512 latent + 64 rope key"),
    ("kv_norm", "kv_norm", "kv_a_layernorm", "RMSNorm on the 512-dim latent only, not on the rope key"),
    ("w_uk | w_uv", "wkv_b", "kv_b_proj", "512 -> H x (128 W_UK rows + 128 W_UV rows), per head"),
    ("w_o", "wo", "o_proj", "output projection H x 128 -> d_model"),
    ("(block scales)", "<name>.scale", "<name>.weight_scale_inv", "float32 per 128x128 block of an FP8 weight"),
    ("cfg.softmax_scale", "softmax_scale", "scaling", "192**-0.5, times mscale**2 (YaRN) at every position when served past 4K"),
    ("LatentCache.c_kv / k_rope", "kv_cache / pe_cache", "(expanded K and V)", "what each caches"),
]


def to_deepseek(cfg: MLAConfig, w: MLAWeights) -> dict[str, np.ndarray]:
    """mlacourse weights -> DeepSeek's reference state dict ([out, in] Linear weights)."""
    if not cfg.q_lora_rank:
        raise ValueError("this mapping covers the low-rank query path (q_lora_rank > 0), as in V2/V3")
    h, dn, dv = cfg.n_heads, cfg.d_nope, cfg.d_v
    wkv_b = np.concatenate([w.w_uk.transpose(0, 2, 1),   # [H, d_nope, d_latent]: W_UK_i
                            w.w_uv.transpose(0, 2, 1)],  # [H, d_v, d_latent]:    W_UV_i
                           axis=1).reshape(h * (dn + dv), cfg.d_latent)
    return {
        "wq_a.weight": w.w_dq.T.copy(),                                   # [q_lora_rank, d_model]
        "q_norm.weight": w.q_norm.copy(),                                 # [q_lora_rank]
        "wq_b.weight": w.w_uq.T.copy(),                                   # [H*d_qk, q_lora_rank]
        "wkv_a.weight": np.concatenate([w.w_dkv, w.w_kr], axis=1).T.copy(),  # [d_latent+d_rope, d_model]
        "kv_norm.weight": w.kv_norm.copy(),                               # [d_latent]
        "wkv_b.weight": wkv_b,                                            # [H*(d_nope+d_v), d_latent]
        "wo.weight": w.w_o.T.copy(),                                      # [d_model, H*d_v]
    }


def from_deepseek(cfg: MLAConfig, state: dict[str, np.ndarray]) -> MLAWeights:
    """DeepSeek's reference state dict -> mlacourse weights (the inverse of to_deepseek).
    Shapes are checked, so a transposed or mis-split tensor is an error, not a wrong model."""
    h, dn, dv, dc, dr = cfg.n_heads, cfg.d_nope, cfg.d_v, cfg.d_latent, cfg.d_rope
    want = {"wq_a.weight": (cfg.q_lora_rank, cfg.d_model), "q_norm.weight": (cfg.q_lora_rank,),
            "wq_b.weight": (h * cfg.d_qk, cfg.q_lora_rank), "wkv_a.weight": (dc + dr, cfg.d_model),
            "kv_norm.weight": (dc,), "wkv_b.weight": (h * (dn + dv), dc), "wo.weight": (cfg.d_model, h * dv)}
    for name, shape in want.items():
        if name not in state:
            raise KeyError(f"state dict has no {name!r}; expected keys: {sorted(want)}")
        if tuple(state[name].shape) != shape:
            raise ValueError(f"{name} has shape {tuple(state[name].shape)}, expected {shape} ([out, in])")
    wkv_b = state["wkv_b.weight"].reshape(h, dn + dv, dc)                 # [H, 256, 512]
    wkv_a = state["wkv_a.weight"].T                                       # [d_model, 576]
    return MLAWeights(w_dq=state["wq_a.weight"].T, q_norm=state["q_norm.weight"],
                      w_uq=state["wq_b.weight"].T, w_dkv=wkv_a[:, :dc], kv_norm=state["kv_norm.weight"],
                      w_kr=wkv_a[:, dc:], w_uk=wkv_b[:, :dn].transpose(0, 2, 1),
                      w_uv=wkv_b[:, dn:].transpose(0, 2, 1), w_o=state["wo.weight"].T)


def reference_absorb_forward(cfg: MLAConfig, state: dict[str, np.ndarray], h, scale: float | None = None,
                             rope=apply_rope):
    """A prefill of h [T, d_model] from an empty cache, step for step as the reference MLA's
    absorb branch computes it, on the reference's tensors. Returns y [T, d_model] and the
    two caches (kv_cache [T, d_latent], pe_cache [T, d_rope]). `rope` lets a caller swap in a
    different RoPE layout to see what a mismatch does."""
    T, H, dn, dc, dv = h.shape[0], cfg.n_heads, cfg.d_nope, cfg.d_latent, cfg.d_v
    scale = cfg.softmax_scale if scale is None else scale
    pos = np.arange(T)
    q = rms_norm(h @ state["wq_a.weight"].T, state["q_norm.weight"]) @ state["wq_b.weight"].T
    q = q.reshape(T, H, cfg.d_qk)                                         # [T, H, 192]
    q_nope, q_pe = q[..., :dn], rope(q[..., dn:], pos[:, None], cfg.rope_theta)
    kv = h @ state["wkv_a.weight"].T                                      # [T, 576]: one GEMM
    kv, k_pe = kv[:, :dc], rope(kv[:, dc:], pos, cfg.rope_theta)          # split, rotate the key
    wkv_b = state["wkv_b.weight"].reshape(H, dn + dv, dc)                 # [H, 256, 512]
    q_nope = np.einsum("shd,hdc->shc", q_nope, wkv_b[:, :dn])             # W_UK absorbed: [T, H, 512]
    kv_cache = rms_norm(kv, state["kv_norm.weight"])                      # norm on the latent only
    scores = (np.einsum("shc,tc->sht", q_nope, kv_cache)
              + np.einsum("shr,tr->sht", q_pe, k_pe)) * scale             # [T, H, T]
    scores = np.where(np.tril(np.ones((T, T), bool))[:, None, :], scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    x = np.einsum("sht,tc->shc", p, kv_cache)                             # latent output [T, H, 512]
    x = np.einsum("shc,hdc->shd", x, wkv_b[:, -dv:])                      # W_UV: [T, H, 128]
    return x.reshape(T, H * dv) @ state["wo.weight"].T, kv_cache, k_pe


# ---- FP8 weights: 128 x 128 blocks, one float32 scale each -----------------------------

def quantize_weight(w, block: int = 128):
    """w [out, in] float -> (codes uint8 e4m3 [out, in], scale float32 [ceil(out/block),
    ceil(in/block)]) with scale = amax(block) / 448, so that w ~ decode(codes) * scale.
    This is the layout of the V3 checkpoint (weight + weight_scale_inv)."""
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 2:
        raise ValueError(f"expected a 2-D [out, in] weight, got shape {w.shape}")
    n_out, n_in = -(-w.shape[0] // block), -(-w.shape[1] // block)
    pad = np.zeros((n_out * block, n_in * block))
    pad[:w.shape[0], :w.shape[1]] = w
    blocks = pad.reshape(n_out, block, n_in, block)
    amax = np.abs(blocks).max(axis=(1, 3))                                # [n_out, n_in]
    scale = np.where(amax > 0, amax / E4M3_MAX, 1.0).astype(np.float32)
    codes = e4m3_encode(blocks / scale[:, None, :, None].astype(np.float64)).reshape(pad.shape)
    return codes[:w.shape[0], :w.shape[1]], scale


def weight_dequant(codes, scale, block: int = 128) -> np.ndarray:
    """The inverse, as DeepSeek's kernel.weight_dequant computes it: each 128 x 128 block of
    e4m3 values times its float32 scale. codes [out, in], scale [ceil(out/128), ceil(in/128)]."""
    codes = np.asarray(codes, dtype=np.uint8)
    n_out, n_in = -(-codes.shape[0] // block), -(-codes.shape[1] // block)
    if tuple(np.shape(scale)) != (n_out, n_in):
        raise ValueError(f"scale has shape {np.shape(scale)}, expected {(n_out, n_in)} for a "
                         f"{codes.shape} weight in {block}x{block} blocks")
    full = np.repeat(np.repeat(np.asarray(scale, dtype=np.float64), block, 0), block, 1)
    return e4m3_decode(codes) * full[:codes.shape[0], :codes.shape[1]]
