"""Compile every shipped kernel configuration for sm_90 (Hopper) without a GPU and
report shared memory, registers and spills.

  python -m kernels.compile_report                  (from the repository root; ~1.5 min on 2 cores)
  python -m kernels.compile_report --only splitkv   (the default version and its combine kernel)

Uses the ptxas that ships inside the triton wheel. Must run without TRITON_INTERPRET
(the interpreter replaces @triton.jit functions); tests run it in a subprocess."""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import time

SMEM_LIMIT_SM90 = 232_448  # bytes of shared memory one block may use on H100/H200 (227 KiB)


def shipped_configs():
    """(label, kernel name, signature types, constexprs, num_warps, num_stages) for what
    mla_decode_with_kvcache launches by default on a GPU, per version, dtype and cache."""
    from . import mla_decode as md
    import triton.language as tl

    cfgs = []
    for is_fp8 in (False, True):
        kv = "*u8" if is_fp8 else "*bf16"
        base = {"q_ptr": "*bf16", "kv_ptr": kv, "bt_ptr": "*i32", "seqlens_ptr": "*i32",
                "h_q": "i32", "s_q": "i32", "stride_bt": "i32", "stride_row": "i32", "qk_scale_log2": "fp32"}
        tag = "fp8" if is_fp8 else "bf16"
        sig = dict(base, out_ptr="*bf16", lse_ptr="*fp32")
        cfgs.append((f"naive {tag}", md._naive_kernel, sig,
                     dict(BLOCK_N=16, PAGE=64, CAUSAL=False, IS_FP8=is_fp8), 4, 1))
        for rows in (16, 32, 64):  # s_q*h_q; 64 stands for every larger count (BLOCK_M caps at 64)
            bm = md.default_block_m(1, rows)
            bn, warps, stages = md.default_launch(bm, is_fp8)
            ce = dict(BLOCK_M=bm, BLOCK_N=bn, PAGE=64, CAUSAL=False, IS_FP8=is_fp8, DTYPE=tl.bfloat16,
                      KV_STAGES=stages)
            cfgs.append((f"tiled {tag} BLOCK_M={bm}", md._tiled_kernel, sig, ce, warps, stages))
            sig_s = dict(base, o_part_ptr="*fp32", lse_part_ptr="*fp32", num_splits="i32")
            cfgs.append((f"splitkv {tag} BLOCK_M={bm}", md._splitkv_kernel, sig_s, dict(ce, CAUSAL=True),
                         warps, stages))
    cfgs.append(("combine", md._combine_kernel,
                 {"o_part_ptr": "*fp32", "lse_part_ptr": "*fp32", "out_ptr": "*bf16", "lse_ptr": "*fp32",
                  "h_q": "i32", "s_q": "i32", "num_splits": "i32"}, dict(SPLITS_P2=64), 4, 1))
    return cfgs


def compile_one(fn, sig, constexprs, num_warps, num_stages):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    full_sig = dict(sig)
    for k in constexprs:
        full_sig[k] = "constexpr"
    order = {n: i for i, n in enumerate(fn.arg_names)}
    full_sig = dict(sorted(full_sig.items(), key=lambda kv: order[kv[0]]))
    # What triton's launcher specializes at run time: 16-byte aligned pointers (torch
    # allocations) and integer arguments divisible by 16 (row stride 576 or 656 elements/bytes,
    # h_q of 16, 64, 128). Without these the compiler must assume unaligned rows.
    aligned = [n for n, t in full_sig.items() if t.startswith("*") or n in ("stride_row", "h_q")]
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in aligned}
    src = ASTSource(fn=fn, signature=full_sig, constexprs=constexprs, attrs=attrs)
    triton.knobs.nvidia.dump_ptxas_log = True  # ptxas -v's resource report, printed by triton
    triton.knobs.compilation.always_compile = True  # a cached kernel would skip ptxas and its report
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": num_warps, "num_stages": num_stages})
    text = log.getvalue()
    regs = re.findall(r"Used (\d+) registers", text)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    stack = re.findall(r"(\d+) bytes stack frame", text)
    return {"shared": int(k.metadata.shared), "regs": int(regs[-1]) if regs else None,
            "spill_stores": int(spills[-1][0]) if spills else None,
            "spill_loads": int(spills[-1][1]) if spills else None,
            "stack": int(stack[-1]) if stack else None, "num_warps": num_warps, "num_stages": num_stages,
            "wgmma": "wgmma" in k.asm.get("ptx", "")}


def _compile_index(i):
    label, fn, sig, ce, warps, stages = shipped_configs()[i]
    t = time.time()
    r = compile_one(fn, sig, ce, warps, stages)
    r.update(label=label, seconds=round(time.time() - t, 1), block_n=ce.get("BLOCK_N"))
    return r


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    as_json = "--json" in argv
    only = argv[argv.index("--only") + 1] if "--only" in argv else None  # e.g. --only splitkv
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else (os.cpu_count() or 1)
    if os.environ.get("TRITON_INTERPRET") == "1":
        sys.exit("compile_report: unset TRITON_INTERPRET (the interpreter cannot compile for a GPU)")
    picked = [i for i, c in enumerate(shipped_configs())
              if not only or c[0].startswith(only) or c[0] == "combine"]
    if jobs > 1:
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(min(jobs, len(picked))) as pool:
            rows = pool.map(_compile_index, picked)
    else:
        rows = [_compile_index(i) for i in picked]
    if as_json:
        print(json.dumps(rows))
    else:
        print(format_table(rows))
    return rows


def format_table(rows):
    lines = ["| kernel | BLOCK_N | warps | stages | shared memory (B) | registers/thread | spill stores/loads (B) | wgmma |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['label']} | {r['block_n'] or '-'} | {r['num_warps']} | {r['num_stages']} | {r['shared']} "
                     f"| {r['regs']} | {r['spill_stores']}/{r['spill_loads']} | {'yes' if r['wgmma'] else 'no'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
