"""A full MLA attention layer with decoupled RoPE, computed by two equivalent paths.

  expand: up-project every cached latent c into per-head keys [k_nope; k_rope] and
          values, then run ordinary multi-head attention (head dims 192 / 128).
  absorb: fold W_UK into the query (q_lat = W_UK q_nope, 512 dims per head), score
          against the cached rows [c; k_rope] (576 dims, shared by all heads), sum the
          latents with the attention weights, apply W_UV last.

Both return the same out [n_new, n_heads, d_v] (up to rounding). Weight shapes:
  w_dq  [d_model, q_lora_rank]            w_uq [q_lora_rank, n_heads*(d_nope+d_rope)]
  w_dkv [d_model, d_latent]               w_kr [d_model, d_rope]
  w_uk  [n_heads, d_latent, d_nope]       w_uv [n_heads, d_latent, d_v]
  w_o   [n_heads*d_v, d_model]
The latent gets an RMSNorm before it is cached, as in DeepSeek's reference code.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .attention import attention, attention_from_scores, causal_mask, merge_attention
from .config import MLAConfig
from .rope import apply_rope


@dataclass
class MLAWeights:
    w_dq: np.ndarray
    q_norm: np.ndarray
    w_uq: np.ndarray
    w_dkv: np.ndarray
    kv_norm: np.ndarray
    w_kr: np.ndarray
    w_uk: np.ndarray
    w_uv: np.ndarray
    w_o: np.ndarray


def init_weights(cfg: MLAConfig, rng: np.random.Generator, dtype=np.float64) -> MLAWeights:
    """Random weights scaled by 1/sqrt(fan_in) so activations stay O(1)."""
    def dense(fan_in, *shape):
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(dtype)

    h, q_rank = cfg.n_heads, cfg.q_lora_rank or cfg.d_model
    return MLAWeights(
        w_dq=dense(cfg.d_model, cfg.d_model, q_rank) if cfg.q_lora_rank else np.eye(cfg.d_model, dtype=dtype),
        q_norm=(1 + 0.1 * rng.standard_normal(q_rank)).astype(dtype),
        w_uq=dense(q_rank, q_rank, h * cfg.d_qk),
        w_dkv=dense(cfg.d_model, cfg.d_model, cfg.d_latent),
        kv_norm=(1 + 0.1 * rng.standard_normal(cfg.d_latent)).astype(dtype),
        w_kr=dense(cfg.d_model, cfg.d_model, cfg.d_rope),
        w_uk=dense(cfg.d_latent, h, cfg.d_latent, cfg.d_nope),
        w_uv=dense(cfg.d_latent, h, cfg.d_latent, cfg.d_v),
        w_o=dense(h * cfg.d_v, h * cfg.d_v, cfg.d_model),
    )


def rms_norm(x, gamma, eps: float = 1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gamma


def project_queries(cfg: MLAConfig, w: MLAWeights, h, positions):
    """h [T, d_model] -> q_nope [T, H, d_nope], q_rope [T, H, d_rope] (rotated)."""
    c_q = h @ w.w_dq
    if cfg.q_lora_rank:
        c_q = rms_norm(c_q, w.q_norm)
    q = (c_q @ w.w_uq).reshape(h.shape[0], cfg.n_heads, cfg.d_qk)
    q_nope, q_rope = q[..., :cfg.d_nope], q[..., cfg.d_nope:]
    return q_nope, apply_rope(q_rope, np.asarray(positions)[:, None], cfg.rope_theta)


def project_kv_latent(cfg: MLAConfig, w: MLAWeights, h, positions):
    """h [T, d_model] -> what the cache stores: c_kv [T, d_latent], k_rope [T, d_rope]."""
    c_kv = rms_norm(h @ w.w_dkv, w.kv_norm)
    k_rope = apply_rope(h @ w.w_kr, positions, cfg.rope_theta)
    return c_kv, k_rope


def expand_kv(c_kv, k_rope, w_uk, w_uv):
    """Up-project cached rows: c_kv [T, d_latent] -> k [H, T, d_nope+d_rope], v [H, T, d_v]."""
    # matmul broadcasts c_kv over heads and runs on BLAS (a plain np.einsum would not)
    k_nope = np.matmul(c_kv, w_uk)  # [T, d_latent] @ [H, d_latent, d_nope] -> [H, T, d_nope]
    v = np.matmul(c_kv, w_uv)  # [H, T, d_v]
    k_rope_h = np.broadcast_to(k_rope, (w_uk.shape[0],) + k_rope.shape)  # shared by heads
    return np.concatenate([k_nope, k_rope_h], axis=-1), v


def attend_expand(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, mask=None):
    """Path 1. q_* [S, H, d], cache rows c_kv [T, d_latent], k_rope [T, d_rope],
    mask [S, T] or None. Returns out [S, H, d_v], lse [H, S]."""
    k, v = expand_kv(c_kv, k_rope, w_uk, w_uv)  # [H, T, 192], [H, T, d_v]
    q = np.concatenate([q_nope, q_rope], axis=-1).transpose(1, 0, 2)  # [H, S, 192]
    out, lse = attention(q, k, v, scale, mask)  # [H, S, d_v], [H, S]
    return out.transpose(1, 0, 2), lse


def absorb_query(q_nope, w_uk):
    """q_nope [S, H, d_nope] -> q_lat [S, H, d_latent]: W_UK folded into the query."""
    q_lat = np.matmul(q_nope.transpose(1, 0, 2), w_uk.transpose(0, 2, 1))  # [H, S, d_latent]
    return q_lat.transpose(1, 0, 2)


def absorbed_scores(q_nope, q_rope, c_kv, k_rope, w_uk, scale):
    """Every (head, query, key) score, before any mask: [H, S, T]. The keys are the cached
    rows [c; k_rope] (576 dims), the query has W_UK folded in."""
    q_lat = absorb_query(q_nope, w_uk)  # [S, H, d_latent]
    q_full = np.concatenate([q_lat, q_rope], axis=-1).transpose(1, 0, 2)  # [H, S, 576]
    kv_rows = np.concatenate([c_kv, k_rope], axis=-1)  # [T, 576]
    return np.matmul(q_full, kv_rows.T) * scale  # [H, S, T]


def attend_absorb(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, mask=None):
    """Path 2: attention in the latent space; the keys are the cached rows [c; k_rope]
    (576 dims) and the values are c itself (512 dims), shared by every head -- an MQA.
    Same arguments and results as attend_expand."""
    scores = absorbed_scores(q_nope, q_rope, c_kv, k_rope, w_uk, scale)  # [H, S, T]
    o_lat, lse = attention_from_scores(scores, c_kv, mask)  # [H, S, d_latent]
    out = np.matmul(o_lat, w_uv).transpose(1, 0, 2)  # W_UV applied last: [S, H, d_v]
    return out, lse


ATTEND = {"expand": attend_expand, "absorb": attend_absorb}


def attend_chunked_prefix(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk: int):
    """Extend after a cached prefix without expanding the whole prefix at once.

    The S new tokens are the last S rows of the T cached rows. The prefix (rows
    0 .. T-S-1, visible to every new token) is expanded `chunk` rows at a time; the
    new rows attend causally among themselves; all parts merge by log-sum-exp.
    Peak extra memory is one chunk of per-head K/V instead of T rows of them."""
    s, t = q_nope.shape[0], c_kv.shape[0]
    n_prefix = t - s
    outs, lses = [], []
    for lo in range(0, n_prefix, chunk):
        hi = min(lo + chunk, n_prefix)
        o, l = attend_expand(q_nope, q_rope, c_kv[lo:hi], k_rope[lo:hi], w_uk, w_uv, scale)
        outs.append(o.transpose(1, 0, 2))  # [H, S, d_v] so lse [H, S] lines up
        lses.append(l)
    o, l = attend_expand(q_nope, q_rope, c_kv[n_prefix:], k_rope[n_prefix:], w_uk, w_uv, scale,
                         causal_mask(s, s))
    outs.append(o.transpose(1, 0, 2))
    lses.append(l)
    out, lse = merge_attention(outs, lses)
    return out.transpose(1, 0, 2), lse


@dataclass
class LatentCache:
    """The MLA cache of one layer for one sequence: 576 numbers per token."""
    c_kv: np.ndarray  # [T, d_latent]
    k_rope: np.ndarray  # [T, d_rope]

    @classmethod
    def empty(cls, cfg: MLAConfig, dtype=np.float64):
        return cls(np.zeros((0, cfg.d_latent), dtype), np.zeros((0, cfg.d_rope), dtype))

    def __len__(self):
        return self.c_kv.shape[0]


def mla_forward(cfg: MLAConfig, w: MLAWeights, h_new, cache: LatentCache | None = None,
                path: str = "absorb"):
    """One MLA layer on new tokens h_new [S, d_model] appended after `cache`.

    Covers prefill (empty cache), decode (S = 1) and extend (S > 1 after a prefix).
    Returns y [S, d_model] and the grown cache."""
    cache = cache or LatentCache.empty(cfg, h_new.dtype)
    s, start = h_new.shape[0], len(cache)
    positions = np.arange(start, start + s)
    c_new, kr_new = project_kv_latent(cfg, w, h_new, positions)
    cache = LatentCache(np.concatenate([cache.c_kv, c_new]), np.concatenate([cache.k_rope, kr_new]))
    q_nope, q_rope = project_queries(cfg, w, h_new, positions)
    mask = causal_mask(s, len(cache))
    out, _ = ATTEND[path](q_nope, q_rope, cache.c_kv, cache.k_rope, w.w_uk, w.w_uv,
                          cfg.softmax_scale, mask)  # [S, H, d_v]
    return out.reshape(s, cfg.n_heads * cfg.d_v) @ w.w_o, cache
