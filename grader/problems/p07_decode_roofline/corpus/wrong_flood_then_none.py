"""expect: fail
slip: dumps ~30 MB of debug output straight to file descriptor 1 and then forgets to return.
reason: wrong_type
"""
import os

from mlacourse.hardware import GPUS


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    flops = 2 * h_q * s_q * s_k * (576 + 512)
    nbytes = h_q * s_q * 576 * 2 + s_k * (1152 if kv_dtype == "bf16" else 656) + h_q * s_q * 512 * 2
    line = (f"{gpu}: flops={flops} bytes={nbytes} " * 20 + "\n").encode()
    for _ in range(30 * 2**20 // len(line)):
        os.write(1, line)                                # below Python's sys.stdout
    result = {"flops": flops, "bytes": nbytes, "intensity": flops / nbytes}   # noqa: F841
    # slip: no `return result`
