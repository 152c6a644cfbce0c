"""mistake: intensity ~ 2 h_q s_q
message: You used the shorthand intensity ~ 2*h_q*s_q; compute flops / bytes exactly (the
  shorthand ignores the 576 vs 512 widths, the fp8 row size and the q/out traffic).
"""
from mlacourse.hardware import GPUS


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    flops = 2 * h_q * s_q * s_k * (576 + 512)
    nbytes = h_q * s_q * 576 * 2 + s_k * (1152 if kv_dtype == "bf16" else 656) + h_q * s_q * 512 * 2
    intensity = 2 * h_q * s_q                          # slip: the back-of-envelope figure
    g = GPUS[gpu]
    ridge = g.bf16_tflops * 1e12 / (g.hbm_gbps * 1e9)
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": "compute" if intensity >= ridge else "memory",
            "attainable_tflops": min(g.bf16_tflops, intensity * g.hbm_gbps / 1e3)}
