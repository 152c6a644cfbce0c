"""Problem 7 - decode_roofline: model answer."""
from mlacourse.hardware import GPUS

D_LATENT, D_ROPE = 512, 64
BF16 = 2  # bytes


def _row_bytes(kv_dtype):
    if kv_dtype == "bf16":
        return (D_LATENT + D_ROPE) * BF16                        # 1152
    if kv_dtype == "fp8":
        n_scales = D_LATENT // 128                               # one float32 per 128 values
        return D_LATENT * 1 + n_scales * 4 + D_ROPE * BF16       # 512 + 16 + 128 = 656
    raise ValueError(f"kv_dtype must be 'bf16' or 'fp8', got {kv_dtype!r}")


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    d_k, d_v = D_LATENT + D_ROPE, D_LATENT                       # 576, 512
    rows = h_q * s_q                                             # query rows sharing the cache
    flops = 2 * rows * s_k * d_k + 2 * rows * s_k * d_v          # QK^T + PV
    nbytes = rows * d_k * BF16 + s_k * _row_bytes(kv_dtype) + rows * d_v * BF16
    intensity = flops / nbytes
    g = GPUS[gpu]
    peak = g.bf16_tflops * 1e12                                  # FLOP/s, dense
    bandwidth = g.hbm_gbps * 1e9                                 # bytes/s
    ridge = peak / bandwidth
    return {
        "flops": flops,
        "bytes": nbytes,
        "intensity": intensity,
        "bound": "compute" if intensity >= ridge else "memory",
        "attainable_tflops": min(peak, intensity * bandwidth) / 1e12,
    }
