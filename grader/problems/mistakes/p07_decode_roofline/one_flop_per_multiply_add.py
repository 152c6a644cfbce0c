"""mistake: one FLOP per multiply-add
message: Count 2 FLOPs per multiply-add: flops = 2*h_q*s_q*s_k*(576 + 512).
"""
from mlacourse.hardware import GPUS


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    rows = h_q * s_q
    flops = rows * s_k * (576 + 512)                 # slip: no factor 2
    row = 1152 if kv_dtype == "bf16" else 656
    nbytes = rows * 576 * 2 + s_k * row + rows * 512 * 2
    g = GPUS[gpu]
    peak = g.bf16_tflops                 # TFLOP/s
    bw = g.hbm_gbps                      # GB/s
    intensity = flops / nbytes
    ridge = peak * 1e12 / (bw * 1e9)
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": "compute" if intensity >= ridge else "memory",
            "attainable_tflops": min(peak, intensity * bw * 1e9 / 1e12)}
