"""A small table of GPU peaks for roofline arithmetic.

Values are *dense* (no 2:4 sparsity) tensor-core peaks and HBM bandwidth as the vendor
lists them; real kernels reach less (clocks drop under load: FlashMLA's blog uses
~865 TFLOPS for a throttled H800 instead of the listed 989)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GPU:
    name: str
    bf16_tflops: float  # dense
    fp8_tflops: float | None  # dense; None where the chip has no FP8 tensor cores
    hbm_gbps: float  # GB/s (1e9 bytes)
    source: str

    def ridge(self, precision: str = "bf16") -> float:
        """FLOP/byte where compute time equals memory time: peak FLOP/s / bytes/s."""
        peak = self.bf16_tflops if precision == "bf16" else self.fp8_tflops
        if peak is None:
            raise ValueError(f"{self.name} has no {precision} tensor-core peak")
        return peak * 1e12 / (self.hbm_gbps * 1e9)

    def attainable_tflops(self, intensity: float, precision: str = "bf16") -> float:
        """Roofline: min(peak, intensity * bandwidth), in TFLOP/s."""
        peak = self.bf16_tflops if precision == "bf16" else self.fp8_tflops
        return min(peak, intensity * self.hbm_gbps * 1e9 / 1e12)


GPUS = {g.name: g for g in [
    GPU("A100", 312.0, None, 2039.0,
        "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB): BF16 312 TFLOPS dense, HBM2e 2,039 GB/s"),
    GPU("H100", 989.4, 1978.9, 3350.0,
        "NVIDIA H100 Tensor Core GPU datasheet (SXM5): BF16 1,979 / FP8 3,958 TFLOPS with sparsity "
        "(half dense), HBM3 3.35 TB/s"),
    GPU("H800", 989.4, 1978.9, 3350.0,
        "NVIDIA H800 SXM5 (export variant of H100 SXM5: same tensor-core peaks, HBM3 3.35 TB/s, "
        "reduced NVLink); the FlashMLA blog and DeepSeek-V3 report use 3.35 TB/s"),
    GPU("H200", 989.4, 1978.9, 4800.0,
        "NVIDIA H200 Tensor Core GPU datasheet (SXM): BF16 1,979 / FP8 3,958 TFLOPS with sparsity "
        "(half dense), HBM3e 4.8 TB/s"),
    GPU("H20", 148.0, 296.0, 4000.0,
        "NVIDIA H20 product specification: BF16 148 TFLOPS, FP8 296 TFLOPS dense, HBM3 4.0 TB/s"),
    GPU("B200", 2250.0, 4500.0, 8000.0,
        "NVIDIA HGX B200 datasheet (per GPU): BF16 4.5 / FP8 9 PFLOPS with sparsity "
        "(half dense), HBM3e 8 TB/s"),
]}
