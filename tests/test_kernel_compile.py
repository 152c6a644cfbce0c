"""Compile every shipped kernel configuration for sm_90 (H100/H200) on this machine, no
GPU needed: triton's own ptxas assembles the code, and its resource report gives
shared memory, registers and spill bytes. Printed with -s (pytest -s) and on failure."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from kernels.compile_report import SMEM_LIMIT_SM90  # 232,448 bytes per block on Hopper


def _ptxas():
    import triton
    path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    return path if os.path.exists(path) else shutil.which("ptxas")


@pytest.mark.slow
def test_sm90_compile_report():
    if _ptxas() is None:
        pytest.skip("no ptxas: the triton wheel ships one in triton/backends/nvidia/bin; this install lacks it")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # the interpreter cannot compile
    proc = subprocess.run([sys.executable, "-m", "kernels.compile_report", "--json", "--jobs", "2"],
                          capture_output=True, text=True, env=env, timeout=600,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    from kernels.compile_report import format_table
    table = format_table(rows)
    print("\n" + table)
    labels = {r["label"] for r in rows}
    for version in ("naive", "tiled", "splitkv"):
        for cache in ("bf16", "fp8"):
            assert any(lbl.startswith(f"{version} {cache}") for lbl in labels), f"{version} {cache} not compiled"
    assert "combine" in labels
    for r in rows:
        assert 0 < r["shared"] <= SMEM_LIMIT_SM90, f"{r['label']}: {r['shared']} B shared memory > {SMEM_LIMIT_SM90}\n{table}"
        assert r["regs"] is not None and r["regs"] <= 255, f"{r['label']}: no register count from ptxas\n{table}"
    # the 64-row tiles are the ones meant for Hopper's warpgroup MMA
    assert all(r["wgmma"] for r in rows if "BLOCK_M=64" in r["label"]), table
