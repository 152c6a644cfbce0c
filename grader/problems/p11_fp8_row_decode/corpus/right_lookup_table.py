"""expect: pass
slip: none -- builds a 256-entry table with math.ldexp once, then indexes it.
"""
import math

import numpy as np

TABLE = np.empty(256)
for _c in range(256):
    _e, _m = (_c >> 3) & 15, _c & 7
    _mag = math.ldexp(_m, -9) if _e == 0 else math.ldexp(8 + _m, _e - 10)   # (m/8)2^-6 or (1+m/8)2^(e-7)
    TABLE[_c] = math.nan if (_c & 0x7F) == 0x7F else (-_mag if _c & 0x80 else _mag)


def fp8_row_decode(rows):
    rows = np.asarray(rows, dtype=np.uint8)
    latent = TABLE[rows[:, :512]]                                            # [n, 512]
    scales = np.frombuffer(rows[:, 512:528].tobytes(), dtype="<f4").reshape(-1, 4)
    latent = latent * np.repeat(scales, 128, axis=1)
    rope_bits = np.frombuffer(rows[:, 528:].tobytes(), dtype="<u2").reshape(-1, 64)
    rope = np.frombuffer((rope_bits.astype("<u4") << 16).tobytes(), dtype="<f4").reshape(-1, 64)
    return np.hstack([latent, rope.astype(np.float64)])
