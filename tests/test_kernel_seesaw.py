"""Version 6 (the seesaw, Gluon, Hopper only): what can be checked without a GPU.

Gluon has no CPU interpreter. Here: the input contract, the label, an sm_90 compile of this
one kernel (slow). Its GPU cases are the GPU check's (tests/gpu_check.py, run by
tests/test_kernel_gpu_matrix.py::test_hopper): on a Hopper GPU against both references at
FlashMLA's tolerances, elsewhere in emulation (the GPU-like reference within the GPU's
tolerances of float64). Its step order is checked on the CPU by tests/test_seesaw.py, which runs
mlacourse.seesaw.seesaw_decode (exactly the kernel's order, in numpy) against float64."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernels.mla_decode import VERSION_TABLE, mla_decode_with_kvcache, prepare
from kernels.plan import mla_decode_plan
from tests.test_kernels import make_case

ROOT = Path(__file__).resolve().parent.parent
LABEL = "compiled, not yet run on a GPU"


def test_seesaw_is_labelled_everywhere():
    assert VERSION_TABLE["seesaw"].status == LABEL and VERSION_TABLE["seesaw"].number == 6
    for doc in ("kernels/README.md", "kernels/BENCHMARKS.md"):
        text = (ROOT / doc).read_text()
        assert "seesaw" in text and LABEL in text, f"{doc} must say the seesaw version is {LABEL!r}"


@pytest.mark.parametrize("change, match", [
    (dict(fp8=True), "bf16 caches only"),
    (dict(page=32), "page_block_size >= 64"),
    (dict(dtype=torch.float16), "bfloat16"),
])
def test_seesaw_input_contract(change, match):
    kw = dict(page=64, fp8=False, dtype=torch.bfloat16)
    kw.update(change)
    q, cache, bt, sl = make_case([5, 70], page=kw["page"], h_q=16, fp8=kw["fp8"], dtype=kw["dtype"])
    with pytest.raises((ValueError, TypeError), match=match):
        prepare(q, cache, bt, sl, 512, is_fp8_kvcache=kw["fp8"], gpu=True, version="seesaw")


def test_seesaw_launch_shape():
    q, cache, bt, sl = make_case([5, 70, 200], page=64, h_q=16)
    plan = mla_decode_plan(sl, 16, 1, num_sms=3, block_m=64)
    _, launches, _, _ = prepare(q, cache, bt, sl, 512, gpu=True, version="seesaw", plan=plan)
    assert launches[0].grid == (1, 3) and launches[0].num_warps == 4  # + 4 warps of the worker partition
    assert launches[0].label == "seesaw BLOCK_M=64"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU path")
def test_seesaw_says_it_needs_a_gpu():
    q, cache, bt, sl = make_case([5, 70], page=64, h_q=16)
    with pytest.raises(RuntimeError, match="Hopper GPU"):
        mla_decode_with_kvcache(q, cache, bt, sl, 512, version="seesaw")


@pytest.mark.slow
def test_seesaw_compiles_for_sm90():
    """One compile (the full report is tests/test_kernel_compile.py): shared memory within the
    227 KB a block may use, each partition's loop one tile's worth of MMAs (1.00)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    proc = subprocess.run([sys.executable, "-m", "kernels.compile_report", "--only", "seesaw", "--json", "--jobs", "1"],
                          capture_output=True, text=True, env=env, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    row = next(r for r in rows if r["label"].startswith("seesaw"))
    assert not row.get("error"), row
    assert row["shared"] <= 232_448 and row["wgmma"] and row["ratio"] == 1.0, row


def test_a_latent_chunk_is_its_8_kb_of_the_buffer():
    """_scores views a [64, 512] NVMMA buffer (128-byte swizzle) as [8, 64, 64] and takes chunk c
    with .index(c): right only if the [64, 512] layout stores column block c (columns 64c..64c+63)
    as the c-th 4,096 elements, each laid out as a [64, 64] buffer is. Read from triton's own
    layouts: the offset bits below 4,096 map as the [64, 64] layout's, the three above pick the
    column block."""
    gluon_ir = pytest.importorskip("triton._C.libtriton.gluon_ir")
    from triton._C.libtriton import ir
    from triton.experimental.gluon import language as gl

    ctx = ir.context()
    ir.load_dialects(ctx)
    builder = gluon_ir.GluonOpBuilder(ctx)
    if not hasattr(builder, "to_linear_layout"):
        pytest.skip("this triton's builder has no to_linear_layout")
    layout = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    whole = builder.to_linear_layout(layout._to_ir(builder), [64, 512]).offset_bases
    chunk = builder.to_linear_layout(layout._to_ir(builder), [64, 64]).offset_bases
    assert len(chunk) == 12 and whole[:12] == chunk  # offsets 0..4095: one [64, 64] chunk
    assert whole[12:] == [[0, 64], [0, 128], [0, 256]]  # offset 4096 * c: column block c


def test_the_16_row_question_is_reported():
    """At h_q*s_q = 16 a wgmma-only kernel computes 64 rows for 16: the report says 4.00."""
    from kernels.compile_report import format_table
    row = dict(label="seesaw bf16 BLOCK_M=64", block_m=64, block_n=64, num_warps=4, num_stages=1, shared=1,
               regs=255, spill_stores=0, spill_loads=0, mma=44, mma_shapes=["HGMMA.64x64x16"], ratio=1.0,
               instructions=10, in_flight_at_mma=None, overlap=None, worker_warps=[4], version="seesaw", tiles=[64])
    table = format_table([row])
    assert "| 4+4 |" in table and "seesaw bf16 BLOCK_M=64, at h_q*s_q=16 (derived) |" in table
    assert "| 4.00 |" in table
    bench_md = (ROOT / "kernels" / "BENCHMARKS.md").read_text()
    assert bench_md.count("at h_q*s_q=16 (derived)") == 4 and "planned bf16 BLOCK_M=16" in bench_md
