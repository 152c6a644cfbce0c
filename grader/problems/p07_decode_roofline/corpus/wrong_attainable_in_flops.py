"""expect: fail
slip: returns attainable throughput in FLOP/s instead of TFLOP/s.
"""
from mlacourse.hardware import GPUS


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    flops = 2 * h_q * s_q * s_k * (576 + 512)
    nbytes = h_q * s_q * 576 * 2 + s_k * (1152 if kv_dtype == "bf16" else 656) + h_q * s_q * 512 * 2
    g = GPUS[gpu]
    peak, bw = g.bf16_tflops * 1e12, g.hbm_gbps * 1e9
    intensity = flops / nbytes
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": "compute" if intensity >= peak / bw else "memory",
            "attainable_tflops": min(peak, intensity * bw)}      # slip: not / 1e12
