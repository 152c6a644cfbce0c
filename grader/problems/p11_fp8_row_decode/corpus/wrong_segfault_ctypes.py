"""expect: fail
slip: "fast" byte access through ctypes with a bad address (an offset used as a pointer) -- the process segfaults.
reason: crash
"""
import ctypes

import numpy as np


def fp8_row_decode(rows):
    offset = 16                                                  # meant: rows.ctypes.data + 16
    scales = ctypes.string_at(offset, 16)                        # slip: reads address 16 -> SIGSEGV
    latent = np.zeros((rows.shape[0], 576))
    latent[:, :4] = np.frombuffer(scales, dtype="<f4")
    return latent
