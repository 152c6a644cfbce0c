"""Problem 7 - decode_roofline: decode FLOPs, bytes, intensity and the bound on a GPU.

Chapter: notebooks/05_roofline.ipynb
Check your answer: python practice/judge.py 7      (hints: python practice/judge.py 7 --hint)
The whole statement: python practice/judge.py 7 --statement
"""
from mlacourse.hardware import GPUS  # GPUS[name].bf16_tflops (dense), .hbm_gbps


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    """Roofline numbers of one absorbed-MLA decode attention call (one sequence).

    h_q query heads, s_q query tokens, s_k cached tokens; d_k = 576, d_v = 512.
    kv_dtype: "bf16" (1152-byte rows) or "fp8" (656-byte FlashMLA rows); q/out are bf16.
    gpu: a key of GPUS; the matmuls run at the dense bf16 peak.

    Returns {"flops": ..., "bytes": ..., "intensity": ..., "bound": "memory" | "compute",
             "attainable_tflops": ...}
    """
    # TODO(problem 7): count FLOPs (2 per multiply-add) and bytes (q + cache + out), then the roofline.
    raise NotImplementedError("problem 7 (decode_roofline) is not written yet")
