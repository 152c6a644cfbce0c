"""expect: pass
slip: none -- torch reinterprets the bytes as float8_e4m3fn and bfloat16, computes in float64.
"""
import numpy as np
import torch


def sparse_decode(q, kv_cache, indices, softmax_scale):
    flat = torch.from_numpy(np.ascontiguousarray(kv_cache)).reshape(-1, 656)
    qt = torch.from_numpy(np.asarray(q, dtype=np.float64))
    b, s_q, h_q, _ = qt.shape
    out = torch.zeros(b, s_q, h_q, 512, dtype=torch.float64)
    lse = torch.full((b, h_q, s_q), float("-inf"), dtype=torch.float64)
    idx = torch.as_tensor(np.asarray(indices)).long()
    for i in range(b):
        for j in range(s_q):
            keys = idx[i, j][idx[i, j] != -1]
            if keys.numel() == 0:
                continue
            r = flat[keys]
            lat = r[:, :512].contiguous().view(torch.float8_e4m3fn).double().reshape(-1, 4, 128)
            scale = r[:, 512:528].contiguous().view(torch.float32).double()
            rope = r[:, 528:].contiguous().view(torch.bfloat16).double()
            k = torch.cat([(lat * scale[:, :, None]).reshape(-1, 512), rope], dim=1)
            s = softmax_scale * qt[i, j] @ k.T
            row_lse = torch.logsumexp(s, dim=1)
            out[i, j] = torch.exp(s - row_lse[:, None]) @ k[:, :512]
            lse[i, :, j] = row_lse
    return out, lse
