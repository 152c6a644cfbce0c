"""expect: fail
slip: memoises the arithmetic intensity by (h_q, s_q, kv_dtype) -- "it barely depends on the context" -- though s_k moves it.
"""
from mlacourse.hardware import GPUS

_intensity = {}


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    rows = h_q * s_q
    flops = 2 * rows * s_k * 1088
    nbytes = 2 * rows * 1088 + s_k * (1152 if kv_dtype == "bf16" else 656)
    key = (h_q, s_q, kv_dtype)
    if key not in _intensity:
        _intensity[key] = flops / nbytes
    intensity = _intensity[key]
    g = GPUS[gpu]
    ridge = g.bf16_tflops * 1e3 / g.hbm_gbps
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": "memory" if intensity < ridge else "compute",
            "attainable_tflops": min(g.bf16_tflops, intensity * g.hbm_gbps / 1e3)}
