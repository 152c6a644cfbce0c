"""expect: pass
slip: none -- reads only the peak fields of mlacourse.hardware.GPUS (allowed) and does the roofline itself.
"""
from mlacourse import hardware


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    spec = hardware.GPUS[gpu]
    peak, bw = spec.bf16_tflops * 1e12, spec.hbm_gbps * 1e9       # FLOP/s, byte/s
    q_bytes = h_q * s_q * (512 + 64) * 2
    out_bytes = h_q * s_q * 512 * 2
    if kv_dtype == "fp8":
        row = 512 * 1 + (512 // 128) * 4 + 64 * 2                  # e4m3 + scales + bf16 rope
    else:
        row = (512 + 64) * 2
    nbytes = q_bytes + s_k * row + out_bytes
    flops = 2.0 * h_q * s_q * s_k * (576 + 512)
    intensity = flops / nbytes
    return {"flops": flops, "bytes": float(nbytes), "intensity": intensity,
            "bound": "compute" if intensity * bw >= peak else "memory",
            "attainable_tflops": min(peak, intensity * bw) / 1e12}
