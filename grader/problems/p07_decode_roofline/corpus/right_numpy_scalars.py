"""expect: pass
slip: none -- numpy scalars throughout, np.minimum for the roof.
"""
import numpy as np

from mlacourse.hardware import GPUS


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    rows = np.int64(h_q) * s_q
    flops = rows * s_k * 2 * (576 + 512)
    nbytes = rows * 2 * (576 + 512) + np.int64(s_k) * (1152 if kv_dtype == "bf16" else 656)
    g = GPUS[gpu]
    intensity = np.float64(flops) / nbytes
    ridge = np.float64(g.bf16_tflops) * 1e3 / g.hbm_gbps
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": str(np.where(intensity >= ridge, "compute", "memory")),
            "attainable_tflops": np.minimum(g.bf16_tflops, intensity * g.hbm_gbps / 1e3)}
