"""mistake: FP8 peak for an FP8 cache
message: For the FP8 cache you used the GPU's FP8 peak; the cache is stored in FP8 but
  dequantized to bf16 before the matmuls (FlashMLA's FP8 kernel), which run at the dense
  bf16 peak -- so the ridge point and the ceiling stay the bf16 ones.
"""
from mlacourse.hardware import GPUS


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    rows = h_q * s_q
    flops = 2 * rows * s_k * (576 + 512)
    row = 1152 if kv_dtype == "bf16" else 656
    nbytes = rows * 576 * 2 + s_k * row + rows * 512 * 2
    g = GPUS[gpu]
    peak = (g.fp8_tflops if kv_dtype == "fp8" else g.bf16_tflops)   # slip
    bw = g.hbm_gbps                      # GB/s
    intensity = flops / nbytes
    ridge = peak * 1e12 / (bw * 1e9)
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": "compute" if intensity >= ridge else "memory",
            "attainable_tflops": min(peak, intensity * bw * 1e9 / 1e12)}
