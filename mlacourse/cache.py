"""KV-cache sizes: numbers per token per layer for each attention variant, and bytes.

All "elements" counts are per token per layer; multiply by layers, tokens, batch and
bytes per element for a total (cache_bytes)."""
from __future__ import annotations

from .config import DEEPSEEK_V3 as _V3

BYTES_PER_ELEMENT = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}

# FlashMLA's FP8 cache row: 512 e4m3 latents + 4 float32 scales + 64 bf16 rope values.
FP8_TILE = 128  # latent values that share one float32 scale


def mha_elements(n_heads: int, head_dim: int) -> int:
    """Every head caches its own K and V: 2 * n_heads * head_dim."""
    return 2 * n_heads * head_dim


def gqa_elements(n_kv_heads: int, head_dim: int) -> int:
    """Groups of query heads share one K/V head: 2 * n_kv_heads * head_dim."""
    return 2 * n_kv_heads * head_dim


def mqa_elements(head_dim: int) -> int:
    """All query heads share a single K/V head: 2 * head_dim."""
    return 2 * head_dim


def mla_elements(d_latent: int, d_rope: int) -> int:
    """The latent c plus the shared rope key: d_latent + d_rope (576 for V2/V3)."""
    return d_latent + d_rope


def mla_expanded_elements(n_heads: int, d_nope: int, d_rope: int, d_v: int) -> int:
    """DeepSeek's 'naive' mode caches the up-projected per-head K (192) and V (128)."""
    return n_heads * (d_nope + d_rope + d_v)


def fp8_mla_row_bytes(d_latent: int = _V3.d_latent, d_rope: int = _V3.d_rope) -> int:
    """Bytes of one token in FlashMLA's FP8 layout: d_latent fp8 + scales + bf16 rope."""
    if d_latent % FP8_TILE:
        raise ValueError(f"d_latent must be a multiple of {FP8_TILE}, got {d_latent}")
    return d_latent * 1 + (d_latent // FP8_TILE) * 4 + d_rope * 2


def cache_bytes(elements_per_token_layer: int, n_layers: int = 1, n_tokens: int = 1,
                dtype: str = "bf16", batch: int = 1) -> int:
    """Total bytes: elements * layers * tokens * batch * bytes per element."""
    if dtype not in BYTES_PER_ELEMENT:
        raise ValueError(f"unknown dtype {dtype!r}; known: {sorted(BYTES_PER_ELEMENT)}")
    return elements_per_token_layer * n_layers * n_tokens * batch * BYTES_PER_ELEMENT[dtype]


def per_token_elements(cfg, kind: str, n_kv_heads: int = 8, head_dim: int | None = None) -> int:
    """Elements per token per layer for a config's head count under a given variant.

    kind: 'mha' | 'gqa' | 'mqa' | 'mla' | 'mla_expanded'. head_dim defaults to the
    config's d_nope (the 128 the papers compare against)."""
    hd = head_dim or cfg.d_nope
    table = {
        "mha": lambda: mha_elements(cfg.n_heads, hd),
        "gqa": lambda: gqa_elements(n_kv_heads, hd),
        "mqa": lambda: mqa_elements(hd),
        "mla": lambda: mla_elements(cfg.d_latent, cfg.d_rope),
        "mla_expanded": lambda: mla_expanded_elements(cfg.n_heads, cfg.d_nope, cfg.d_rope, cfg.d_v),
    }
    if kind not in table:
        raise ValueError(f"unknown kind {kind!r}; known: {sorted(table)}")
    return table[kind]()
