"""mistake: q and out bytes left out
message: Your bytes count only the cache; add the query read (h_q*s_q*576*2) and the output
  write (h_q*s_q*512*2).
"""
from mlacourse.hardware import GPUS


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    rows = h_q * s_q
    flops = 2 * rows * s_k * (576 + 512)
    row = 1152 if kv_dtype == "bf16" else 656
    nbytes = s_k * row                                  # slip: no q, no out
    g = GPUS[gpu]
    peak = g.bf16_tflops                 # TFLOP/s
    bw = g.hbm_gbps                      # GB/s
    intensity = flops / nbytes
    ridge = peak * 1e12 / (bw * 1e9)
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": "compute" if intensity >= ridge else "memory",
            "attainable_tflops": min(peak, intensity * bw * 1e9 / 1e12)}
