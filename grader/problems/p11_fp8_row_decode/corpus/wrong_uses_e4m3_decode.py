"""expect: fail
slip: slices the row itself but decodes the e4m3 codes and bf16 bits with mlacourse.fp8's helpers.
reason: uses_reference
"""
import numpy as np

from mlacourse.fp8 import bf16_decode, e4m3_decode


def fp8_row_decode(rows):
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    n = rows.shape[0]
    scales = rows[:, 512:528].copy().view("<f4")
    latent = e4m3_decode(rows[:, :512]).reshape(n, 4, 128) * scales[:, :, None]
    rope = bf16_decode(rows[:, 528:].copy().view("<u2"))
    return np.concatenate([latent.reshape(n, 512), np.asarray(rope, dtype=np.float64)], axis=1)
