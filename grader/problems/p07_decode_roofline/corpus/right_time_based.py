"""expect: pass
slip: none -- decides the bound by comparing compute time with memory time instead of a ridge point.
"""
from mlacourse.hardware import GPUS


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    rows = h_q * s_q
    flops = 2 * rows * s_k * 576 + 2 * rows * s_k * 512
    row = {"bf16": 576 * 2, "fp8": 512 + 4 * 4 + 64 * 2}[kv_dtype]
    nbytes = 2 * rows * 576 + s_k * row + 2 * rows * 512
    g = GPUS[gpu]
    t_compute = flops / (g.bf16_tflops * 1e12)          # seconds at the dense peak
    t_memory = nbytes / (g.hbm_gbps * 1e9)              # seconds to move the bytes
    return {"flops": flops, "bytes": nbytes, "intensity": flops / nbytes,
            "bound": "compute" if t_compute >= t_memory else "memory",
            "attainable_tflops": flops / max(t_compute, t_memory) / 1e12}
