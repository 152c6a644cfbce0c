"""Attention primitives shared by both MLA paths: masks, a stable softmax attention
that also returns the log-sum-exp, and the LSE merge of partial results.

Conventions: scores are natural-log domain; lse is log(sum_j exp(score_j)) over the
visible keys, -inf for a query row that sees no key (its output is 0)."""
from __future__ import annotations

import numpy as np


def causal_mask(n_new: int, n_ctx: int) -> np.ndarray:
    """Bottom-right aligned causal mask [n_new, n_ctx], True = visible.

    The n_new queries are the last n_new of the n_ctx tokens: query row i (0-based)
    sees keys 0 .. n_ctx - n_new + i. With n_new == n_ctx it is the usual tril."""
    if not 0 <= n_new <= n_ctx:
        raise ValueError(f"need 0 <= n_new <= n_ctx, got n_new={n_new}, n_ctx={n_ctx}")
    rows = np.arange(n_new)[:, None]
    cols = np.arange(n_ctx)[None, :]
    return cols <= rows + (n_ctx - n_new)


def attention(q, k, v, scale: float, mask=None):
    """Softmax attention with log-sum-exp.

    q [..., s_q, d], k [..., s_k, d], v [..., s_k, d_v]; mask broadcastable to
    [..., s_q, s_k] (True = visible) or None.
    Returns out [..., s_q, d_v] and lse [..., s_q]."""
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * scale  # [..., s_q, s_k]
    return attention_from_scores(scores, v, mask)


def attention_from_scores(scores, v, mask=None):
    """softmax(scores) @ v with lse; rows with nothing visible give out 0, lse -inf."""
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    row_max = np.max(scores, axis=-1, keepdims=True) if scores.shape[-1] else \
        np.full(scores.shape[:-1] + (1,), -np.inf)
    safe_max = np.where(np.isfinite(row_max), row_max, 0.0)  # empty rows: avoid inf - inf
    p = np.exp(scores - safe_max)  # [..., s_q, s_k], masked entries exp(-inf) = 0
    denom = p.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.matmul(p, v) / np.where(denom > 0, denom, 1.0)
        lse = np.where(denom[..., 0] > 0, np.log(denom[..., 0]) + safe_max[..., 0], -np.inf)
    return out, lse


def merge_attention(outs, lses):
    """Combine attention results computed over disjoint key sets.

    outs: sequence of [..., s_q, d_v]; lses: matching sequence of [..., s_q].
    Each part is re-weighted by exp(lse_i - lse_total); parts that saw no key
    (lse -inf) get weight 0. The result equals one attention over the union."""
    lses = np.stack([np.asarray(x, dtype=np.float64) for x in lses])  # [n, ..., s_q]
    outs = np.stack([np.asarray(x) for x in outs])  # [n, ..., s_q, d_v]
    m = lses.max(axis=0)
    safe_m = np.where(np.isfinite(m), m, 0.0)
    w = np.exp(lses - safe_m)  # [n, ..., s_q]
    total = w.sum(axis=0)
    with np.errstate(divide="ignore"):
        lse = np.where(total > 0, np.log(total) + safe_m, -np.inf)
    w = w / np.where(total > 0, total, 1.0)
    return (w[..., None] * outs).sum(axis=0), lse


def split_kv_attention(q, k, v, scale: float, n_splits: int, mask=None):
    """Flash-decoding in numpy: attention over n_splits contiguous key ranges, then
    merge_attention. Empty ranges are allowed (they contribute nothing)."""
    s_k = k.shape[-2]
    bounds = np.linspace(0, s_k, n_splits + 1).round().astype(int)
    outs, lses = [], []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        part_mask = None if mask is None else np.asarray(mask)[..., lo:hi]
        o, l = attention(q, k[..., lo:hi, :], v[..., lo:hi, :], scale, part_mask)
        outs.append(o)
        lses.append(l)
    return merge_attention(outs, lses)
