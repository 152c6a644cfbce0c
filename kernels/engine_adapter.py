"""The engine's decode through the course's Triton kernel (chapter 7), on a copy of the
engine's page pool that lives on the device:

    from kernels.engine_adapter import kernel_backend
    engine = Engine(model, num_pages=..., page_size=64, token_budget=..., decode_backend=kernel_backend())

The engine (mlacourse.engine, plain numpy) knows nothing of kernels/: it takes a factory and
calls it once with its pool's shape; kernel_backend(...) returns one that checks the shape
against the kernel's (dims.py's 512 + 64 and page rule) and makes a DevicePool.

DevicePool keeps every layer's pages on the device, [n_layers, num_pages, P, 1, d_latent +
d_rope] in fp16 or bf16 -- one layer is exactly kernels.mla_decode_with_kvcache's kv_cache,
and a request's block table is its row of block_table. The engine's numpy PagePool tells
it of every change (PagePool's `mirror`):

  write(layer, slots, rows)  the step's new rows, scattered through a slot mapping
                             (slot = page * P + offset, one int64 per row): the only cache
                             bytes that cross to the device, T rows of 576 numbers per layer
  copy(src, dst, n)          copy-on-write of a shared partial page, on the device
  poison(pages)              freed or evicted pages filled with NaN, as in the numpy pool

and decode() sends only the queries, the block tables and the lengths. Copying the whole
pool to the device on every layer call instead would send num_pages * P * 576 * 2 bytes per
layer per step, however few rows had changed (docs/decisions.md). bytes_to_device counts
what crosses, so a test can hold it to the new rows.

torch and triton are imported when a DevicePool is made, never at import time: this module
imports without them, so the shape checks run (and say what is wrong) anywhere.
DevicePool(device="cpu") keeps the pool in host memory through the same torch calls, so the
slot-mapping path is tested without a GPU; decode on a CPU tensor runs the kernel in Triton's
interpreter, which needs TRITON_INTERPRET=1 in the environment before triton is first imported.
`kernels` is the repository's folder (not the PyPI package of that name): the repository
root must be on sys.path.
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np

from .dims import D_K, D_LATENT, D_ROPE, check_page_block_size


def kernel_unavailable_reason() -> str | None:
    """None when the kernel can run here, else a sentence saying why not."""
    missing = [m for m in ("torch", "triton") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{' and '.join(missing)} not installed"
    try:
        from . import mla_decode  # noqa: F401
    except ImportError as e:
        return f"cannot import kernels.mla_decode ({e}); put the repository root first on sys.path"
    import torch
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        return "no CUDA device, and TRITON_INTERPRET=1 was not set before triton was imported"
    return None


def check_kernel_shapes(d_latent: int, d_rope: int, page_size: int) -> None:
    """The engine's cache rows and pages against what the kernel reads (kernels/dims.py)."""
    if (d_latent, d_rope) != (D_LATENT, D_ROPE):
        raise ValueError(f"the decode kernel reads {D_K}-wide rows (d_latent {D_LATENT} + d_rope {D_ROPE}); this "
                         f"model caches d_latent={d_latent} + d_rope={d_rope}: use decode_backend='numpy'")
    check_page_block_size(page_size, "the decode kernel's page size (the engine's page_size)")


def kernel_backend(dtype: str = "float16", device: str | None = None, **kernel_options):
    """The engine's decode_backend for the Triton kernel: a factory the engine calls once with
    its pool's shape (n_layers, num_pages, page_size, d_latent, d_rope), which checks that
    shape against the kernel and returns a DevicePool (its mirror and its decode). dtype and
    device are the device pool's; kernel_options go to mla_decode_with_kvcache on every
    decode (version=..., num_splits=...)."""
    def make(n_layers: int, num_pages: int, page_size: int, d_latent: int, d_rope: int) -> DevicePool:
        check_kernel_shapes(d_latent, d_rope, page_size)
        return DevicePool(n_layers, num_pages, page_size, d_latent + d_rope, dtype=dtype, device=device,
                          **kernel_options)
    return make


def _torch_dtype(torch, dtype: str):
    table = {"float16": torch.float16, "bfloat16": torch.bfloat16}
    if dtype not in table:
        raise ValueError(f"dtype must be one of {sorted(table)}, got {dtype!r}")
    return table[dtype]


class DevicePool:
    """The engine's page pool, on the device: kv [n_layers, num_pages, P, 1, d] (fp16/bf16).

    bytes_to_device  host-to-device bytes sent so far (rows, slot mappings, queries, block
                     tables and lengths), for the cost accounting of chapter 7
    kernel_options   passed to mla_decode_with_kvcache on every decode (version, num_splits, ...)"""

    def __init__(self, n_layers: int, num_pages: int, page_size: int, d_cache: int, dtype: str = "float16",
                 device: str | None = None, **kernel_options):
        reason = kernel_unavailable_reason()
        if reason and importlib.util.find_spec("torch") is None:
            raise RuntimeError(f"a device pool needs torch: {reason}")
        import torch
        self.torch = torch
        self.dtype = _torch_dtype(torch, dtype)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.page_size, self.d_cache = page_size, d_cache
        self.kv = torch.full((n_layers, num_pages, page_size, 1, d_cache), float("nan"), dtype=self.dtype,
                             device=self.device)  # [L, pages, P, 1, d]
        self.bytes_to_device = 0
        self.kernel_options = kernel_options

    def _to_device(self, array, dtype=None):
        t = self.torch.from_numpy(np.ascontiguousarray(array)).to(self.device, dtype)
        self.bytes_to_device += t.numel() * t.element_size()
        return t

    def write(self, layer: int, slots, rows) -> None:
        """kv[layer] viewed as [num_pages * P, d]: rows [n, d] go to the flat slots [n] int64."""
        flat = self.kv[layer].view(-1, self.d_cache)  # [pages * P, d], a view: writes land in kv
        flat[self._to_device(np.asarray(slots, dtype=np.int64))] = self._to_device(rows, self.dtype)

    def copy(self, src: int, dst: int, n_slots: int) -> None:
        """Copy-on-write of the first n_slots rows of page src into page dst, every layer."""
        self.kv[:, dst, :n_slots] = self.kv[:, src, :n_slots]

    def poison(self, pages) -> None:
        self.kv[:, list(pages)] = float("nan")

    def rows(self) -> np.ndarray:
        """The whole pool back on the host as float64 (for tests)."""
        return self.kv.double().cpu().numpy()

    def decode(self, layer: int, q_lat, q_rope, tables, seqlens, softmax_scale: float):
        """Absorbed decode of b requests, one new token each, through the Triton kernel on
        kv[layer]. q_lat [b, H, d_latent], q_rope [b, H, d_rope]; tables: b block tables;
        seqlens: b cached lengths, new token included.
        Returns o_lat [b, H, d_latent] and lse [b, H], float64 numpy arrays."""
        reason = kernel_unavailable_reason()
        if reason:
            raise RuntimeError(f"kernel decode unavailable: {reason}")
        from .mla_decode import mla_decode_with_kvcache

        check_kernel_shapes(q_lat.shape[-1], q_rope.shape[-1], self.page_size)
        b = len(tables)
        q = np.concatenate([q_lat, q_rope], axis=-1)[:, None]  # [b, 1, H, 576]
        max_blocks = max(1, max(len(t) for t in tables))
        bt = np.zeros((b, max_blocks), dtype=np.int32)  # [b, max_blocks]; unused entries are never read
        for i, t in enumerate(tables):
            bt[i, :len(t)] = t
        out, lse = mla_decode_with_kvcache(
            self._to_device(q, self.dtype), self.kv[layer], self._to_device(bt),
            self._to_device(np.asarray(seqlens, dtype=np.int32)),
            head_dim_v=D_LATENT, softmax_scale=float(softmax_scale), causal=False, **self.kernel_options)
        # out [b, 1, H, 512], lse [b, H, 1]
        return out[:, 0].double().cpu().numpy(), lse[:, :, 0].double().cpu().numpy()


def kernel_decode(q_lat, q_rope, kv_pages, tables, seqlens, softmax_scale: float, dtype: str = "float16",
                  device: str | None = None, **options):
    """One-off absorbed decode over a numpy pool layer kv_pages [num_pages, P, 1, 576]:
    copies that layer to a fresh DevicePool (the whole layer: fine for a test, the cost
    the engine avoids) and decodes. Returns o_lat [b, H, d_latent] and lse [b, H]."""
    num_pages, page, _, d = kv_pages.shape
    pool = DevicePool(1, num_pages, page, d, dtype=dtype, device=device, **options)
    pool.kv[0] = pool._to_device(kv_pages, pool.dtype)
    return pool.decode(0, q_lat, q_rope, tables, seqlens, softmax_scale)
