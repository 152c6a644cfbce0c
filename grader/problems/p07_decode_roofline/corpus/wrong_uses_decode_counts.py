"""expect: fail
slip: takes flops and bytes from mlacourse.flops.decode_flops / decode_bytes (the graded counts).
reason: uses_reference
"""
from mlacourse.cache import fp8_mla_row_bytes
from mlacourse.flops import decode_bytes, decode_flops
from mlacourse.hardware import GPUS


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    row = 1152 if kv_dtype == "bf16" else fp8_mla_row_bytes()
    flops = decode_flops(h_q, s_q, s_k, 576, 512)
    nbytes = decode_bytes(h_q, s_q, s_k, 576, 512, kv_row_bytes=row)
    g = GPUS[gpu]
    intensity = flops / nbytes
    ridge = g.bf16_tflops * 1e3 / g.hbm_gbps
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": "compute" if intensity >= ridge else "memory",
            "attainable_tflops": min(g.bf16_tflops, intensity * g.hbm_gbps / 1e3)}
