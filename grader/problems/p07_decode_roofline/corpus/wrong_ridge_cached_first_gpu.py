"""expect: fail
slip: computes the ridge point on the first call and keeps it in a global ("the GPU does not change").
"""
from mlacourse.hardware import GPUS

RIDGE = None


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    global RIDGE
    g = GPUS[gpu]
    if RIDGE is None:
        RIDGE = g.bf16_tflops * 1e12 / (g.hbm_gbps * 1e9)
    flops = 2 * h_q * s_q * s_k * (576 + 512)
    nbytes = h_q * s_q * 2 * (576 + 512) + s_k * (2 * 576 if kv_dtype == "bf16" else 656)
    intensity = flops / nbytes
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": "compute" if intensity >= RIDGE else "memory",
            "attainable_tflops": min(g.bf16_tflops, intensity * g.hbm_gbps / 1000)}
