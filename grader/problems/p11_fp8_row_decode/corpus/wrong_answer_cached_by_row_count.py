"""expect: fail
slip: memoises the decoded rows by the number of rows, as if the same cache were decoded every time.
"""
import numpy as np

_decoded = {}


def _e4m3_table():
    c = np.arange(256)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e, m = (c >> 3) & 0xF, c & 7
    v = sign * np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e - 7.0))
    v[(c & 0x7F) == 0x7F] = np.nan
    return v


def fp8_row_decode(rows):
    n = rows.shape[0]
    if n not in _decoded:
        lat = _e4m3_table()[rows[:, :512]].reshape(n, 4, 128)
        scales = np.ascontiguousarray(rows[:, 512:528]).view("<f4").astype(np.float64)
        rope = (np.ascontiguousarray(rows[:, 528:]).view("<u2").astype(np.uint32) << 16).view(np.float32)
        _decoded[n] = np.concatenate([(lat * scales[:, :, None]).reshape(n, 512), rope.astype(np.float64)], axis=1)
    return _decoded[n]
