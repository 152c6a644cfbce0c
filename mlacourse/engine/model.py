"""A tiny decoder with DeepSeek-V3's structure at small sizes, and decoding of one request
alone -- the reference the engine must reproduce.

  embed [vocab, d_model]
  n_layers x:  x = x + MLA(RMSNorm(x))           (mlacourse.layer: latent cache, decoupled RoPE)
               x = x + SwiGLU-MLP(RMSNorm(x))    (V3's dense layers; its MoE layers are left out)
  logits = RMSNorm(x) @ head   head [d_model, vocab]
Weights are random from a seed: no downloads, and the same seed gives the same model.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..config import TINY, MLAConfig
from ..layer import LatentCache, MLAWeights, init_weights, mla_forward, rms_norm
from .sampling import GREEDY, SamplingParams, sample, stop_reason


@dataclass(frozen=True)
class ModelConfig:
    attn: MLAConfig = TINY  # the MLA shapes and n_layers, d_model
    vocab: int = 96
    d_ff: int = 128  # SwiGLU hidden width

    @property
    def n_layers(self) -> int:
        return self.attn.n_layers

    @property
    def d_cache(self) -> int:
        """Numbers cached per token per layer: d_latent + d_rope (576 for V3)."""
        return self.attn.d_cache

    def path_shapes(self) -> dict:
        """Keyword arguments of mlacourse.flops.choose_path for this model."""
        a = self.attn
        return dict(n_heads=a.n_heads, d_nope=a.d_nope, d_rope=a.d_rope, d_v=a.d_v, d_latent=a.d_latent)


@dataclass
class Block:
    attn_norm: np.ndarray  # [d_model]
    mla: MLAWeights
    mlp_norm: np.ndarray  # [d_model]
    w_gate: np.ndarray  # [d_model, d_ff]
    w_up: np.ndarray  # [d_model, d_ff]
    w_down: np.ndarray  # [d_ff, d_model]


@dataclass
class TinyModel:
    cfg: ModelConfig
    embed: np.ndarray  # [vocab, d_model]
    blocks: list = field(default_factory=list)
    final_norm: np.ndarray = None  # [d_model]
    head: np.ndarray = None  # [d_model, vocab]


def init_model(cfg: ModelConfig = ModelConfig(), seed: int = 0) -> TinyModel:
    rng = np.random.default_rng(seed)
    d, f = cfg.attn.d_model, cfg.d_ff

    def norm_gain():
        return 1 + 0.1 * rng.standard_normal(d)

    blocks = [Block(attn_norm=norm_gain(), mla=init_weights(cfg.attn, rng), mlp_norm=norm_gain(),
                    w_gate=rng.standard_normal((d, f)) / np.sqrt(d), w_up=rng.standard_normal((d, f)) / np.sqrt(d),
                    w_down=rng.standard_normal((f, d)) / np.sqrt(f))
              for _ in range(cfg.n_layers)]
    return TinyModel(cfg, embed=rng.standard_normal((cfg.vocab, d)), blocks=blocks, final_norm=norm_gain(),
                     head=rng.standard_normal((d, cfg.vocab)) / np.sqrt(d))


def mlp(block: Block, x):
    """SwiGLU: (silu(x W_gate) * (x W_up)) W_down, x [T, d_model] -> [T, d_model]."""
    g = x @ block.w_gate  # [T, d_ff]
    return (g / (1 + np.exp(-g)) * (x @ block.w_up)) @ block.w_down


def logits_of(model: TinyModel, x_last):
    """x_last [..., d_model] -> logits [..., vocab]."""
    return rms_norm(x_last, model.final_norm) @ model.head


def check_prompt(model: TinyModel, prompt, max_new_tokens: int) -> list[int]:
    prompt = [int(t) for t in prompt]
    if not prompt:
        raise ValueError("a prompt needs at least one token")
    bad = [t for t in prompt if not 0 <= t < model.cfg.vocab]
    if bad:
        raise ValueError(f"token ids must be in 0..{model.cfg.vocab - 1}, got {bad[:5]}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    return prompt


def reference_generate(model: TinyModel, prompt, max_new_tokens: int, path: str = "absorb",
                       sampling: SamplingParams = GREEDY):
    """Decoding of one request alone: unbatched, unpaged, one mla_forward call per layer
    per step (the whole prompt at once, then one token at a time). Greedy by default;
    with `sampling`, tokens are drawn from the request's own seeded generator and
    generation ends early at a stop token or stop string (sampling.stop_reason).
    Returns tokens [n_generated] and logits [n_generated, vocab] (float64), n_generated
    <= max_new_tokens."""
    prompt = check_prompt(model, prompt, max_new_tokens)
    rng = sampling.generator()
    caches: list[LatentCache | None] = [None] * model.cfg.n_layers
    feed, tokens, logits = prompt, [], []
    while stop_reason(tokens, sampling, max_new_tokens) is None:
        x = model.embed[feed]  # [S, d_model]
        for i, blk in enumerate(model.blocks):
            y, caches[i] = mla_forward(model.cfg.attn, blk.mla, rms_norm(x, blk.attn_norm), caches[i], path)
            x = x + y
            x = x + mlp(blk, rms_norm(x, blk.mlp_norm))
        z = logits_of(model, x[-1])  # [vocab]
        logits.append(z)
        tokens.append(sample(z, sampling, rng))
        feed = tokens[-1:]
    return tokens, np.stack(logits)
