"""Problem 7: FLOPs, bytes and roofline of MLA decode attention (chapter 5)."""
from __future__ import annotations

import numpy as np

from grader.spec import (Case, Edge, Problem, another, another_int, changes_of, compare_choice, compare_dict,
                         compare_scalar, load_mistakes, memo_twins)
from mlacourse.cache import fp8_mla_row_bytes
from mlacourse.flops import decode_bytes, decode_flops
from mlacourse.hardware import GPUS

FN = "decode_roofline"
D_K, D_V = 576, 512  # absorbed MLA: keys are [c; k_rope] (512 + 64), values are c (512)
ROW_BYTES = {"bf16": 2 * D_K, "fp8": fp8_mla_row_bytes(512, 64)}  # 1152 and 656
_GPU_LINES = "\n".join(f"| `{g.name}` | {g.bf16_tflops:g} | {g.hbm_gbps:g} |"
                       for g in GPUS.values())

STATEMENT = rf"""
Write `decode_roofline(h_q, s_q, s_k, kv_dtype, gpu)`: the roofline numbers of one
**absorbed MLA decode attention** call for one sequence (FlashMLA's accounting).

* `h_q` query heads, `s_q` query tokens (1 for plain decode, more with speculative /
  MTP tokens), `s_k` cached tokens.
* The keys are the cached rows `[c; k_rope]`, `d_k = 576`; the values are `c` itself,
  `d_v = 512` (the first 512 dims of the same row).
* `kv_dtype` is `"bf16"` (a row is 576 * 2 = 1152 bytes) or `"fp8"` (FlashMLA's FP8 row:
  512 e4m3 bytes + 4 float32 scales + 64 bf16 rope values = 656 bytes). The query and
  the output are bf16 either way, and the matmuls run at the **dense bf16** peak.
* `gpu` is a key of `mlacourse.hardware.GPUS`:

| gpu | dense bf16 TFLOP/s | HBM GB/s |
|---|---|---|
{_GPU_LINES}

Return a dict with exactly these keys:

| key | value |
|---|---|
| `flops` | 2 FLOPs per multiply-add, QK^T and PV, no causal discount: `2*h_q*s_q*s_k*(d_k + d_v)` |
| `bytes` | what crosses HBM once: read q, read the cache, write out |
| `intensity` | flops / bytes (FLOP/byte) |
| `bound` | `"compute"` if intensity >= the GPU's ridge point (peak FLOP/s / bytes/s), else `"memory"` |
| `attainable_tflops` | `min(peak, intensity * bandwidth)` in TFLOP/s |

Checked against `mlacourse.flops.decode_flops` / `decode_bytes` and
`mlacourse.hardware.GPUS`: flops and bytes exactly (int or float), intensity and
attainable_tflops within 1e-6 relative, bound exactly.
"""

HINTS = [
    "Start from the counts: one (query row, key) pair costs 2*d_k FLOPs for the score and "
    "2*d_v for the weighted value, for each of the h_q*s_q query rows.",
    "bytes = h_q*s_q*576*2 (q) + s_k*row_bytes (cache) + h_q*s_q*512*2 (out), with "
    "row_bytes 1152 for bf16 and 656 for fp8.",
    "g = GPUS[gpu]; ridge = g.bf16_tflops * 1e12 / (g.hbm_gbps * 1e9). The attainable "
    "throughput is min(g.bf16_tflops, intensity * g.hbm_gbps / 1000).",
    "Sanity check: V3 (h_q=128, s_q=1, s_k=4096) with a bf16 cache gives about 228 "
    "FLOP/byte, below the H800's ridge of about 295 (memory bound); the 656-byte fp8 row "
    "lifts it to about 385 (compute bound).",
]


def reference(h_q, s_q, s_k, kv_dtype, gpu):
    flops = decode_flops(h_q, s_q, s_k, D_K, D_V)
    nbytes = decode_bytes(h_q, s_q, s_k, D_K, D_V, kv_row_bytes=ROW_BYTES[kv_dtype], dtype="bf16")
    g = GPUS[gpu]
    intensity = flops / nbytes
    return {"flops": flops, "bytes": nbytes, "intensity": intensity,
            "bound": "compute" if intensity >= g.ridge("bf16") else "memory",
            "attainable_tflops": g.attainable_tflops(intensity, "bf16")}


def _case(name, h_q, s_q, s_k, kv_dtype, gpu, hidden=False, seed=None):
    args = {"h_q": int(h_q), "s_q": int(s_q), "s_k": int(s_k), "kv_dtype": kv_dtype, "gpu": gpu}
    describe = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return Case(name, FN, args, hidden=hidden, seed=seed,
                describe=describe)


def make_cases(seed):
    cases = [
        _case("V3 decode, bf16 cache, H800", 128, 1, 4096, "bf16", "H800"),
        _case("V3 decode, FP8 cache, H800", 128, 1, 4096, "fp8", "H800"),
        _case("16 heads per GPU (TP 8), H20", 16, 1, 8192, "bf16", "H20"),
        _case("2 query tokens (MTP), long context, H100", 128, 2, 32768, "bf16", "H100"),
    ]
    rng = np.random.default_rng(seed)
    # every GPU twice, in a random order: once memory bound (its bandwidth sets the answer)
    # and once compute bound (its peak does), so a wrong number for any GPU fails every seed
    jobs = [(str(g), bound) for g in sorted(GPUS) for bound in ("memory", "compute")]
    for i in rng.permutation(len(jobs)):
        gpu, bound = jobs[i]
        cases.append(_case(f"{gpu}, {bound} bound", *_draw(rng, gpu, bound), gpu, hidden=True, seed=seed))
    fp8_gpus = sorted(n for n, g in GPUS.items() if g.fp8_tflops)
    cases.append(_case("FP8 cache, compute bound", 128, 4, rng.integers(4096, 65537), "fp8",
                       str(rng.choice(fp8_gpus)), hidden=True, seed=seed))
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check)


ROWS = [(16, 1), (32, 1), (64, 1), (128, 1), (16, 2), (32, 2), (128, 2), (16, 4), (64, 4), (128, 4)]


def _draw(rng, gpu, bound):
    """(h_q, s_q, s_k, kv_dtype) of a random call that is `bound` bound on `gpu`."""
    while True:
        h_q, s_q = ROWS[int(rng.integers(len(ROWS)))]
        args = (h_q, s_q, int(rng.integers(256, 131073)), str(rng.choice(["bf16", "fp8"])))
        if reference(*args, gpu)["bound"] == bound:
            return args


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = changes_of(h_q=another([16, 32, 64, 128]), s_q=another([1, 2, 4]), s_k=another_int(256, 131072),
                     kv_dtype=another(["bf16", "fp8"]), gpu=another(sorted(GPUS)))


def check(case, result):
    expected = reference(**case.args)

    def one(label, exp, got):
        if label.endswith("['bound']"):
            return compare_choice(label, exp, got, ["memory", "compute"])
        if label.endswith("['flops']") or label.endswith("['bytes']"):
            return compare_scalar(label, exp, got, rtol=1e-12)  # exact counts
        unit = " TFLOP/s" if "attainable" in label else " FLOP/byte"
        return compare_scalar(label, exp, got, rtol=1e-6, unit=unit)

    return compare_dict(FN, expected, result, one)


MISTAKES = load_mistakes(__file__)

EDGES = [Edge(f"{g}, {bound} bound", lambda a, g=g, bound=bound: a["gpu"] == g and reference(**a)["bound"] == bound,
              kind="limit")
         for g in sorted(GPUS) for bound in ("memory", "compute")]

PROBLEM = Problem(
    number=7, slug="decode_roofline", title="Roofline of MLA decode",
    summary="decode FLOPs, bytes, intensity and the bound on a GPU",
    chapter="notebooks/05_roofline.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: reference}, edges=EDGES,
    may_import={"mlacourse.hardware": ["GPUS"]},
    no_structure={
        "one": "s_q and h_q come from FlashMLA's configurations (s_q 1, 2, 4; h_q 16-128); the plain "
               "decode s_q = 1 is among them, and no size of 1 changes the formula's form",
        "none": "s_k >= 256 and every count is positive: the statement allows no empty call",
        "none first": "closed-form counts: nothing is walked in pieces",
        "order": "no ids, positions or lists: the arguments are sizes and names",
        "spread": "no scores or softmax: counts and ratios",
        "ties": "no call of the hidden sizes lands exactly on a ridge: intensity(s_k) = ridge has no "
                "integer solution s_k for any h_q, s_q, row size and GPU of the table (checked when "
                "this was written); each GPU is drawn on both sides of its ridge instead",
        "largest": "the statement names no largest size; s_k spans 256-131072 among the hidden calls",
    },
)
