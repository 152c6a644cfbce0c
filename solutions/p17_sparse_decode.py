"""Problem 17 - sparse_decode: model answer."""
import numpy as np


def _e4m3_table():
    """float64 value of each of the 256 e4m3fn codes (0x7F and 0xFF are NaN)."""
    c = np.arange(256)
    exp, man = (c >> 3) & 15, c & 7
    mag = np.where(exp > 0, (1 + man / 8) * 2.0 ** (exp - 7), man / 8 * 2.0 ** -6)
    vals = np.where(c & 0x80, -mag, mag)
    vals[(c & 0x7F) == 0x7F] = np.nan
    return vals


E4M3 = _e4m3_table()


def decode_rows(rows):
    """uint8 [n, 656] -> float64 [n, 576]: 512 dequantized latents, then 64 rope values."""
    rows = np.ascontiguousarray(rows)
    n = rows.shape[0]
    latent = E4M3[rows[:, :512]].reshape(n, 4, 128)                         # e4m3 codes
    scales = rows[:, 512:528].copy().view("<f4").astype(np.float64)         # [n, 4] one per tile
    rope = (rows[:, 528:].copy().view("<u2").astype(np.uint32) << 16).view(np.float32)  # bf16 -> f32
    return np.concatenate([(latent * scales[:, :, None]).reshape(n, 512), rope.astype(np.float64)], axis=1)


def sparse_decode(q, kv_cache, indices, softmax_scale):
    b, s_q, h_q, _ = q.shape
    flat = kv_cache.reshape(-1, kv_cache.shape[-1])                         # [num_blocks * P, 656]
    out = np.zeros((b, s_q, h_q, 512))
    lse = np.full((b, h_q, s_q), -np.inf)
    for i in range(b):
        for j in range(s_q):
            keys = indices[i, j][indices[i, j] != -1]                       # duplicates stay
            if keys.size == 0:
                continue                                                    # no key: out 0, lse -inf
            k = decode_rows(flat[keys])                                     # [n, 576]
            s = softmax_scale * (q[i, j] @ k.T)                             # [h_q, n]
            m = s.max(axis=1, keepdims=True)                                # each row's own max
            row_lse = m[:, 0] + np.log(np.exp(s - m).sum(axis=1))           # [h_q]
            out[i, j] = np.exp(s - row_lse[:, None]) @ k[:, :512]           # V = the latent part
            lse[i, :, j] = row_lse
    return out, lse
