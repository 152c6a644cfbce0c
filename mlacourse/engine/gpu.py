"""Decode through the course's Triton kernel, on the engine's own page pool.

One layer of the pool, data[layer] [num_pages, P, 1, d_latent + d_rope], is already the
kernel's kv_cache layout, and a request's block table is its row of block_table. So the
engine's absorbed decode can hand its queries to kernels.mla_decode_with_kvcache
unchanged -- only the dtype changes (the kernel reads bf16/fp16 rows) and the model
must have V3's cache width (d_latent 512, d_rope 64), which the kernel is built for.

torch and triton are imported when kernel_decode is first called, never at import time:
the rest of the engine runs where they do not exist (the browser). On a machine without
CUDA the kernel runs in Triton's interpreter, which needs TRITON_INTERPRET=1 in the
environment before triton is first imported. `kernels` is the repository's folder (not
the PyPI package of that name): the repository root must be on sys.path.
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np

KERNEL_D_LATENT, KERNEL_D_ROPE = 512, 64


def kernel_unavailable_reason() -> str | None:
    """None when kernel_decode can run here, else a sentence saying why not."""
    missing = [m for m in ("torch", "triton") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{' and '.join(missing)} not installed"
    try:
        from kernels import mla_decode  # noqa: F401
    except ImportError as e:
        return f"cannot import kernels.mla_decode ({e}); put the repository root first on sys.path"
    import torch
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        return "no CUDA device, and TRITON_INTERPRET=1 was not set before triton was imported"
    return None


def check_kernel_shapes(d_latent: int, d_rope: int, page_size: int) -> None:
    if (d_latent, d_rope) != (KERNEL_D_LATENT, KERNEL_D_ROPE):
        raise ValueError(f"the decode kernel reads 576-wide rows (d_latent 512 + d_rope 64); this model caches "
                         f"d_latent={d_latent} + d_rope={d_rope}: use decode_backend='numpy'")
    if page_size < 16 or page_size > 256 or page_size & (page_size - 1):
        raise ValueError(f"the decode kernel needs a page size that is a power of two in 16..256, got {page_size}")


def kernel_decode(q_lat, q_rope, kv_pages, tables, seqlens, softmax_scale: float, dtype: str = "float16",
                  device: str | None = None, **options):
    """Absorbed decode of b requests, one new token each, through the Triton kernel.

    q_lat [b, H, d_latent], q_rope [b, H, d_rope]: the absorbed queries (any float dtype)
    kv_pages [num_pages, P, 1, d_latent + d_rope]: one layer of the engine's pool
    tables: b block tables (lists of page ids); seqlens: b cached lengths, new token included
    options: passed on to mla_decode_with_kvcache (version, num_splits, ...).
    Returns o_lat [b, H, d_latent] and lse [b, H], float64 numpy arrays."""
    reason = kernel_unavailable_reason()
    if reason:
        raise RuntimeError(f"kernel decode unavailable: {reason}")
    import torch
    from kernels.mla_decode import mla_decode_with_kvcache

    num_pages, page, _, d = kv_pages.shape
    check_kernel_shapes(q_lat.shape[-1], q_rope.shape[-1], page)
    b = len(tables)
    tdt = {"float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    dev = device or ("cuda" if torch.cuda.is_available() else "cpu")
    q = np.concatenate([q_lat, q_rope], axis=-1)[:, None]  # [b, 1, H, 576]
    max_blocks = max(1, max(len(t) for t in tables))
    bt = np.zeros((b, max_blocks), dtype=np.int32)  # [b, max_blocks]; unused entries are never read
    for i, t in enumerate(tables):
        bt[i, :len(t)] = t
    out, lse = mla_decode_with_kvcache(
        torch.from_numpy(np.ascontiguousarray(q)).to(dev, tdt),
        torch.from_numpy(np.ascontiguousarray(kv_pages)).to(dev, tdt),
        torch.from_numpy(bt).to(dev),
        torch.tensor(list(seqlens), dtype=torch.int32, device=dev),
        head_dim_v=KERNEL_D_LATENT, softmax_scale=float(softmax_scale), causal=False, **options)
    # out [b, 1, H, 512], lse [b, H, 1]
    return out[:, 0].double().cpu().numpy(), lse[:, :, 0].double().cpu().numpy()
