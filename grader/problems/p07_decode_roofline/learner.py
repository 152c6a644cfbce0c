"""A right answer to problem 7, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
"""
from mlacourse.hardware import GPUS


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    rows = h_q * s_q
    flops = 2 * rows * s_k * (576 + 512)
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
