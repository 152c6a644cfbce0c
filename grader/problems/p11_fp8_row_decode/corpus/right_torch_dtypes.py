"""expect: pass
slip: none -- lets torch reinterpret the bytes as float8_e4m3fn and bfloat16.
"""
import numpy as np
import torch


def fp8_row_decode(rows):
    r = torch.from_numpy(np.ascontiguousarray(rows, dtype=np.uint8))      # [n, 656]
    n = r.shape[0]
    latent = r[:, :512].contiguous().view(torch.float8_e4m3fn).to(torch.float64)   # [n, 512]
    scales = r[:, 512:528].contiguous().view(torch.float32).to(torch.float64)      # [n, 4]
    rope = r[:, 528:].contiguous().view(torch.bfloat16).to(torch.float64)          # [n, 64]
    latent = (latent.reshape(n, 4, 128) * scales[:, :, None]).reshape(n, 512)
    return torch.cat([latent, rope], dim=1).numpy()
