"""expect: fail
slip: types the GPU table in by hand and gives the H200 the H100's 3.35 TB/s (it has 4.8 TB/s).
"""
TABLE = {  # name: (dense bf16 TFLOP/s, HBM GB/s)
    "A100": (312.0, 2039.0),
    "H100": (989.4, 3350.0),
    "H800": (989.4, 3350.0),
    "H200": (989.4, 3350.0),     # "same chip as the H100"
    "H20": (148.0, 4000.0),
    "B200": (2250.0, 8000.0),
}


def decode_roofline(h_q, s_q, s_k, kv_dtype, gpu):
    rows = h_q * s_q
    flops = 2 * rows * s_k * (576 + 512)
    row_bytes = 1152 if kv_dtype == "bf16" else 656
    nbytes = rows * 576 * 2 + s_k * row_bytes + rows * 512 * 2
    peak, bw = TABLE[gpu]
    intensity = flops / nbytes
    ridge = peak * 1e12 / (bw * 1e9)
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": "compute" if intensity >= ridge else "memory",
            "attainable_tflops": min(peak, intensity * bw / 1e3)}
