"""expect: pass
slip: none -- row by row with struct.unpack for the scales and the bf16 bits, a loop over codes.
"""
import math
import struct

import numpy as np


def _e4m3(code):
    sign = -1.0 if code & 0x80 else 1.0
    e, m = (code >> 3) & 0xF, code & 0x7
    if e == 0xF and m == 0x7:
        return math.nan                                   # 0x7F / 0xFF
    if e == 0:
        return sign * (m / 8) * 2.0 ** -6                 # subnormal
    return sign * (1 + m / 8) * 2.0 ** (e - 7)


def fp8_row_decode(rows):
    out = np.empty((len(rows), 576))
    for i, row in enumerate(rows):
        raw = bytes(bytearray(int(b) for b in row))
        scales = struct.unpack("<4f", raw[512:528])
        for k in range(512):
            out[i, k] = _e4m3(raw[k]) * scales[k // 128]
        for j, bits in enumerate(struct.unpack("<64H", raw[528:656])):
            out[i, 512 + j] = struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    return out
