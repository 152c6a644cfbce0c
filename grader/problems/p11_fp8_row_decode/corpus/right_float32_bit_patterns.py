"""expect: pass
slip: none -- rebuilds each e4m3 normal as a float32 bit pattern (exponent rebias 7 -> 127); subnormals by hand; float32 arithmetic.
"""
import numpy as np


def fp8_row_decode(rows):
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    n = rows.shape[0]
    c = rows[:, :512].astype(np.uint32)
    sign, e, m = (c >> 7) & 1, (c >> 3) & 0xF, c & 0x7
    bits = (sign << 31) | ((e + 120) << 23) | (m << 20)                    # normals as float32
    val = bits.view(np.float32)
    sub = np.where(sign == 1, -1.0, 1.0).astype(np.float32) * m.astype(np.float32) * np.float32(2.0 ** -9)
    val = np.where(e == 0, sub, val)
    val = np.where((c & 0x7F) == 0x7F, np.float32(np.nan), val)
    scales = rows[:, 512:528].copy().view(np.float32)                      # [n, 4]
    latent = (val.reshape(n, 4, 128) * scales[:, :, None]).reshape(n, 512)
    rope = (rows[:, 528:].copy().view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return np.concatenate([latent, rope], axis=1)                          # float32 [n, 576]
