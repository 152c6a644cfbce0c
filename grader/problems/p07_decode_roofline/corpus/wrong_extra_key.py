"""expect: fail
slip: adds a "ridge" key to the dict; the statement asks for exactly five keys.
reason: wrong_type
"""
from mlacourse.hardware import GPUS


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    flops = 2 * h_q * s_q * s_k * (576 + 512)
    nbytes = h_q * s_q * 576 * 2 + s_k * (1152 if kv_dtype == "bf16" else 656) + h_q * s_q * 512 * 2
    g = GPUS[gpu]
    intensity = flops / nbytes
    ridge = g.bf16_tflops * 1e3 / g.hbm_gbps
    return {"flops": flops, "bytes": nbytes, "intensity": intensity, "ridge": ridge,   # slip
            "bound": "compute" if intensity >= ridge else "memory",
            "attainable_tflops": min(g.bf16_tflops, intensity * g.hbm_gbps / 1e3)}
