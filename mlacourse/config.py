"""Model shapes used throughout the course.

Dimension names follow the course conventions:
  n_heads   query heads (128 in DeepSeek-V2/V3)
  d_latent  the compressed KV latent c (kv_lora_rank, 512)
  d_rope    the decoupled RoPE part of each query/key (qk_rope_head_dim, 64)
  d_nope    the position-free part of each query/key head (qk_nope_head_dim, 128)
  d_v       the value head dimension (v_head_dim, 128)
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class MLAConfig:
    name: str
    n_heads: int
    n_layers: int
    d_model: int
    q_lora_rank: int  # 0 means the query is projected directly from the hidden state
    d_latent: int
    d_nope: int
    d_rope: int
    d_v: int
    rope_theta: float = 10000.0

    @property
    def d_qk(self) -> int:
        """Per-head query/key width in the expand path: d_nope + d_rope (192)."""
        return self.d_nope + self.d_rope

    @property
    def d_cache(self) -> int:
        """Numbers cached per token per layer: d_latent + d_rope (576)."""
        return self.d_latent + self.d_rope

    @property
    def attention_shapes(self) -> dict:
        """The five widths the FLOP formulas take, as keyword arguments:
        n_heads, d_nope, d_rope, d_v, d_latent (mlacourse.flops reads its defaults here)."""
        return dict(n_heads=self.n_heads, d_nope=self.d_nope, d_rope=self.d_rope, d_v=self.d_v,
                    d_latent=self.d_latent)

    @property
    def softmax_scale(self) -> float:
        """1/sqrt(d_nope + d_rope): the dot product runs over the concatenated 192 dims.

        The absorbed path computes the *same* scores (only regrouped), so it uses the
        same scale -- not 1/sqrt(576) and not 1/sqrt(d_latent)."""
        return 1.0 / math.sqrt(self.d_qk)


# DeepSeek-V2 (arXiv:2405.04434): 60 layers, hidden 5120.
DEEPSEEK_V2 = MLAConfig("DeepSeek-V2", n_heads=128, n_layers=60, d_model=5120, q_lora_rank=1536,
                        d_latent=512, d_nope=128, d_rope=64, d_v=128)
# DeepSeek-V3 (arXiv:2412.19437): 61 layers, hidden 7168. The same numbers are in DeepSeek-V3's
# inference/configs/config_671B.json (dim 7168, n_layers 61, n_heads 128, q_lora_rank 1536,
# kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128).
DEEPSEEK_V3 = MLAConfig("DeepSeek-V3", n_heads=128, n_layers=61, d_model=7168, q_lora_rank=1536,
                        d_latent=512, d_nope=128, d_rope=64, d_v=128)
# Small enough to print and to run in a browser; same structure as V3.
TINY = MLAConfig("tiny", n_heads=4, n_layers=2, d_model=64, q_lora_rank=32,
                 d_latent=16, d_nope=8, d_rope=4, d_v=8)
