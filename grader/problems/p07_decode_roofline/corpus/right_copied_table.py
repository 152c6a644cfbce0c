"""expect: pass
slip: none -- copies the peak numbers from the statement's table into its own dict.
"""
PEAKS = {  # gpu: (dense bf16 TFLOP/s, HBM GB/s), from the problem statement
    "A100": (312.0, 2039.0), "H100": (989.4, 3350.0), "H800": (989.4, 3350.0),
    "H200": (989.4, 4800.0), "H20": (148.0, 4000.0), "B200": (2250.0, 8000.0),
}


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    d_k, d_v = 576, 512
    flops = 2 * h_q * s_q * s_k * (d_k + d_v)
    kv_row = 2 * d_k if kv_dtype == "bf16" else 656
    nbytes = 2 * h_q * s_q * (d_k + d_v) + s_k * kv_row
    tflops, gbps = PEAKS[gpu]
    intensity = flops / nbytes
    ridge = tflops * 1000.0 / gbps
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": "memory" if intensity < ridge else "compute",
            "attainable_tflops": min(tflops, intensity * gbps / 1000.0)}
