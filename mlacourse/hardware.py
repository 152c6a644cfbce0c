"""A small table of GPUs for roofline and capacity arithmetic.

Peaks are *dense* (no 2:4 sparsity) tensor-core peaks and HBM bandwidth as the vendor
lists them; real kernels reach less (clocks drop under load: FlashMLA's deep-dive uses
~865 TFLOPS for a throttled H800 instead of the listed 989).

Memory capacity is what the card reports, not its marketing name. An "80GB" H100 reports
81,559 MiB = 85.5e9 bytes in nvidia-smi (`memory.total`), a "141GB" H200 143,771 MiB.
`hbm_mib` holds the reported figure; `hbm_bytes` converts it (1 MiB = 2**20 bytes).
Sources for each capacity are in the comments of the table below: nvidia-smi output
printed in public logs (GitHub issues and READMEs), which shows `used / total MiB`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIB = 2**20
PRECISIONS = ("bf16", "fp8")


@dataclass(frozen=True)
class GPU:
    name: str
    bf16_tflops: float  # dense
    fp8_tflops: float | None  # dense; None where the chip has no FP8 tensor cores
    hbm_gbps: float  # GB/s (1e9 bytes)
    source: str
    hbm_mib: int  # memory.total as nvidia-smi reports it, in MiB (2**20 bytes)
    marketed_gb: int  # the capacity in the product name ("80GB"), for the record only

    @property
    def hbm_bytes(self) -> int:
        """Device memory in bytes, from the reported MiB: what an allocator can count on
        at most (the driver and CUDA context take a little of it)."""
        return self.hbm_mib * MIB

    def peak_tflops(self, precision: str = "bf16") -> float:
        """Dense tensor-core peak in TFLOP/s for 'bf16' or 'fp8'. A precision the chip has
        no tensor cores for (FP8 on an A100) is a ValueError that says so."""
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; known: {', '.join(PRECISIONS)}")
        peak = self.bf16_tflops if precision == "bf16" else self.fp8_tflops
        if peak is None:
            have = [p for p in PRECISIONS if (self.bf16_tflops if p == "bf16" else self.fp8_tflops)]
            raise ValueError(f"{self.name} has no {precision} tensor-core peak (its peaks: "
                             f"{', '.join(have)}); use precision='bf16' or another GPU")
        return peak

    def ridge(self, precision: str = "bf16") -> float:
        """FLOP/byte where compute time equals memory time: peak FLOP/s / bytes/s."""
        return self.peak_tflops(precision) * 1e12 / (self.hbm_gbps * 1e9)

    def attainable_tflops(self, intensity, precision: str = "bf16"):
        """Roofline: min(peak, intensity * bandwidth), in TFLOP/s. `intensity` (FLOP/byte)
        may be a number or an array; it must be >= 0."""
        peak = self.peak_tflops(precision)
        x = np.asarray(intensity, dtype=float)
        if np.any(~np.isfinite(x)) or np.any(x < 0):
            raise ValueError(f"intensity must be a finite number >= 0 FLOP/byte, got {intensity!r}")
        out = np.minimum(peak, x * self.hbm_gbps * 1e9 / 1e12)
        return float(out) if out.ndim == 0 else out


# Capacity sources (nvidia-smi `memory.total`, as printed in public logs):
#   A100-SXM4-80GB   81920MiB   e.g. "NVIDIA A100-SXM4-80GB ... 4MiB / 81920MiB" in many GitHub issues
#   H100 80GB HBM3   81559MiB   e.g. "NVIDIA H100 80GB HBM3 ... 0MiB / 81559MiB"
#   H800             81559MiB   e.g. "NVIDIA H800 ... 1MiB / 81559MiB" (same 80GB HBM3 board as the H100 SXM5)
#   H200             143771MiB  e.g. "NVIDIA H200 ... 0MiB / 143771MiB"
#   H20              97871MiB   e.g. "NVIDIA H20 ... 4MiB / 97871MiB" (96 GB HBM3)
#   B200             183359MiB  e.g. "NVIDIA B200 ... 0MiB / 183359MiB" (HGX B200, "180GB")
GPUS = {g.name: g for g in [
    GPU("A100", 312.0, None, 2039.0,
        "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB): BF16 312 TFLOPS dense, HBM2e 2,039 GB/s",
        hbm_mib=81920, marketed_gb=80),
    GPU("H100", 989.4, 1978.9, 3350.0,
        "NVIDIA H100 Tensor Core GPU datasheet (SXM5): BF16 1,979 / FP8 3,958 TFLOPS with sparsity "
        "(half dense), HBM3 3.35 TB/s",
        hbm_mib=81559, marketed_gb=80),
    GPU("H800", 989.4, 1978.9, 3350.0,
        "NVIDIA H800 SXM5 (export variant of H100 SXM5: same tensor-core peaks, HBM3 3.35 TB/s, "
        "reduced NVLink); the FlashMLA blog and DeepSeek-V3 report use 3.35 TB/s",
        hbm_mib=81559, marketed_gb=80),
    GPU("H200", 989.4, 1978.9, 4800.0,
        "NVIDIA H200 Tensor Core GPU datasheet (SXM): BF16 1,979 / FP8 3,958 TFLOPS with sparsity "
        "(half dense), HBM3e 4.8 TB/s",
        hbm_mib=143771, marketed_gb=141),
    GPU("H20", 148.0, 296.0, 4000.0,
        "NVIDIA H20 product specification: BF16 148 TFLOPS, FP8 296 TFLOPS dense, HBM3 4.0 TB/s",
        hbm_mib=97871, marketed_gb=96),
    GPU("B200", 2250.0, 4500.0, 8000.0,
        "NVIDIA HGX B200 datasheet (per GPU): BF16 4.5 / FP8 9 PFLOPS with sparsity "
        "(half dense), HBM3e 8 TB/s",
        hbm_mib=183359, marketed_gb=180),
]}


def get(name: str) -> GPU:
    """GPUS[name] with an error that lists the known names."""
    if name not in GPUS:
        raise ValueError(f"unknown GPU {name!r}; known: {', '.join(GPUS)}")
    return GPUS[name]


def tokens_that_fit(bytes_per_token: float, gpu: GPU | str, reserved_bytes: float = 0.0) -> int:
    """How many tokens of `bytes_per_token` fit in a GPU's reported memory after
    `reserved_bytes` (weights, activations, ...) are taken. 0 if nothing fits."""
    g = get(gpu) if isinstance(gpu, str) else gpu
    if not bytes_per_token > 0:
        raise ValueError(f"bytes_per_token must be > 0, got {bytes_per_token!r}")
    free = g.hbm_bytes - reserved_bytes
    return max(0, math.floor(free / bytes_per_token))
