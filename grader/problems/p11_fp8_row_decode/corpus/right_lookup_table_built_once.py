"""expect: pass
slip: none -- builds the 256-entry e4m3 table lazily on first use and keeps it (it never changes).
"""
import numpy as np

_TABLE = None


def _table():
    global _TABLE
    if _TABLE is None:
        t = np.empty(256)
        for code in range(256):
            sign = -1.0 if code & 0x80 else 1.0
            exp, man = (code >> 3) & 15, code & 7
            if exp == 15 and man == 7:
                t[code] = np.nan
            elif exp == 0:
                t[code] = sign * man / 8 * 2.0 ** -6
            else:
                t[code] = sign * (1 + man / 8) * 2.0 ** (exp - 7)
        _TABLE = t
    return _TABLE


def fp8_row_decode(rows):
    rows = np.asarray(rows, dtype=np.uint8)
    n = rows.shape[0]
    vals = _table()[rows[:, :512]].reshape(n, 4, 128)
    scales = rows[:, 512:528].copy().view("<f4").reshape(n, 4, 1)
    bits = rows[:, 528:656].copy().view("<u2").astype(np.uint32) << 16
    return np.concatenate([(vals * scales).reshape(n, 512), bits.view(np.float32)], axis=1).astype(np.float64)
