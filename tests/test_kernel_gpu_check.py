"""kernels/gpu_check.sh on a CPU: its usage errors, that a failing step fails the run and says
so in the summary, and (slow) the whole dry run -- every step on tiny shapes in Triton's
interpreter -- writing a summary whose bench table is the one BENCHMARKS.md takes."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "kernels" / "gpu_check.sh"


def run(*args, env=None, timeout=600):
    e = {k: v for k, v in os.environ.items() if k not in ("GPU_CHECK_ONLY", "GPU_CHECK_BENCH_ARGS")}
    e.update(env or {})
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=e, timeout=timeout,
                          cwd=ROOT)


def test_usage_errors():
    r = run("--fast")
    assert r.returncode == 2 and "unknown option --fast" in r.stderr and "usage:" in r.stderr
    r = run("a", "b")
    assert r.returncode == 2 and "usage:" in r.stderr


def test_a_failing_step_fails_the_run(tmp_path):
    r = run("--dry-run", str(tmp_path), env=dict(GPU_CHECK_ONLY="bench", GPU_CHECK_BENCH_ARGS="--versions fastest"))
    assert r.returncode == 1, r.stdout + r.stderr
    summary = (tmp_path / "GPU_CHECK.md").read_text()
    assert "| bench | FAILED (exit 2) |" in summary and "**FAILED**" in summary
    assert "unknown version(s) ['fastest']" in summary  # the step's own error, in its row
    assert "| tests | not selected (GPU_CHECK_ONLY) |" in summary and "dry run on a CPU" in summary


def test_a_passing_step_passes(tmp_path):
    r = run("--dry-run", str(tmp_path), env=dict(GPU_CHECK_ONLY="env"))
    assert r.returncode == 0, r.stdout + r.stderr
    summary = (tmp_path / "GPU_CHECK.md").read_text()
    assert "| env | ok |" in summary and "every step passed" in summary and "torch" in summary


@pytest.mark.slow
def test_the_whole_dry_run(tmp_path):
    """Every step in the interpreter (a minute or two on two busy cores)."""
    r = run("--dry-run", str(tmp_path), timeout=900)
    summary = (tmp_path / "GPU_CHECK.md").read_text()
    print(summary)
    assert r.returncode == 0, summary + r.stderr
    for step in ("env", "tests", "seesaw", "bench", "bench-gluon"):
        assert f"| {step} | ok |" in summary, step
    sparse = "ok" if (ROOT / "tests" / "test_kernel_sparse.py").exists() else "skipped"
    assert f"| sparse | {sparse}" in summary
    bench = (tmp_path / "bench_quick.md").read_text()
    assert "| tiled |" in bench and "| planned |" in bench and "CPU smoke run" in bench
    assert "## For kernels/BENCHMARKS.md" in summary and "| cache | mean s_k |" in summary
    assert "Version 6 (seesaw): compiled, not yet run on a GPU" in summary
