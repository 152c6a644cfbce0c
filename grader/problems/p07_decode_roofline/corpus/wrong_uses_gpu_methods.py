"""expect: fail
slip: calls GPU.ridge() and GPU.attainable_tflops() from the course instead of computing the roofline (reading the peak numbers is allowed; these methods are the reference).
reason: uses_reference
"""
from mlacourse.hardware import GPUS


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    flops = 2 * h_q * s_q * s_k * (576 + 512)
    nbytes = h_q * s_q * 576 * 2 + s_k * (1152 if kv_dtype == "bf16" else 656) + h_q * s_q * 512 * 2
    g = GPUS[gpu]
    intensity = flops / nbytes
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": "compute" if intensity >= g.ridge("bf16") else "memory",
            "attainable_tflops": g.attainable_tflops(intensity, "bf16")}
