"""kernels/gpu_check.sh on a CPU: its usage errors; a failing step fails the run, says so in the
summary and does not stop the next step; a run cut short leaves the finished steps' numbers on
disk; the budget's arithmetic (tests/gpu_check.py budget) on fabricated measurements; and
(slow) the whole dry run -- the sm_90 compiles of every specialization the GPU run needs,
timed, every test step on shrunk cases in Triton's interpreter, and a projected one-H200
budget under 8 minutes."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import gpu_check as G
from tests import gpu_check_prefill as P

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "kernels" / "gpu_check.sh"


def _env(extra=None):
    e = {k: v for k, v in os.environ.items() if k not in ("GPU_CHECK_ONLY", "GPU_CHECK_BENCH_ARGS", "PYTHON")}
    e.update(extra or {})
    return e


def run(*args, env=None, timeout=600):
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=_env(env), timeout=timeout,
                          cwd=ROOT)


def test_usage_errors():
    r = run("--fast")
    assert r.returncode == 2 and "unknown option --fast" in r.stderr and "usage:" in r.stderr
    r = run("a", "b")
    assert r.returncode == 2 and "usage:" in r.stderr


def test_a_failing_step_fails_the_run_and_the_next_step_runs(tmp_path):
    r = run("--dry-run", str(tmp_path), env=dict(GPU_CHECK_ONLY="bench,bench-gluon",
                                                 GPU_CHECK_BENCH_ARGS="--versions fastest"))
    assert r.returncode == 1, r.stdout + r.stderr
    summary = (tmp_path / "GPU_CHECK.md").read_text()
    assert "| bench | FAILED (exit 2) |" in summary and "**FAILED**" in summary
    assert "unknown version(s) ['fastest']" in summary  # the step's own error, in its row
    assert "| bench-gluon | ok |" in summary  # no -x: the step after a failure still runs
    assert "| tests | not selected (GPU_CHECK_ONLY) |" in summary and "dry run on a CPU" in summary
    rows = (tmp_path / "steps.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["step", "status", "seconds", "limit_h200", "compiled"]
    assert [r.split("\t")[:2] for r in rows[1:]] == [["bench", "FAILED (exit 2)"], ["bench-gluon", "ok"]]


def test_a_passing_step_passes(tmp_path):
    r = run("--dry-run", str(tmp_path), env=dict(GPU_CHECK_ONLY="env"))
    assert r.returncode == 0, r.stdout + r.stderr
    summary = (tmp_path / "GPU_CHECK.md").read_text()
    assert "| env | ok |" in summary and "every step passed" in summary and "torch" in summary


def test_a_run_cut_short_leaves_every_finished_step_on_disk(tmp_path):
    """The bench step hangs (a python that sleeps for kernels/bench.py); the run is killed while
    it hangs -- as a lease running out would kill it. The env step's row is on disk."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\ncase \"$*\" in *kernels/bench.py*) exec sleep 600 ;; esac\n"
                    f"exec {sys.executable} \"$@\"\n")
    fake.chmod(0o755)
    out = tmp_path / "out"
    proc = subprocess.Popen(["bash", str(SCRIPT), "--dry-run", str(out)], cwd=ROOT, start_new_session=True,
                            env=_env(dict(GPU_CHECK_ONLY="env,bench", PYTHON=str(fake))),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 300
        while time.time() < deadline and "env\tok" not in ((out / "steps.tsv").read_text()
                                                           if (out / "steps.tsv").exists() else ""):
            time.sleep(0.5)
        time.sleep(2)  # the bench step has started and hangs
        assert proc.poll() is None, "the run ended before it could be cut"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    summary = (out / "GPU_CHECK.md").read_text()
    assert "| env | ok |" in summary and "still running or cut short" in summary and "| bench |" not in summary


def _fabricated(tmp_path, compile_seconds, pytest_start=5.0, reference=2.0):
    (tmp_path / "steps.tsv").write_text("step\tstatus\tseconds\tlimit_h200\tcompiled\n"
                                        "env\tok\t4\t20\t0\nsparse-bench\tskipped\t0\t35\t\n")
    rows = [dict(index=i, label="k", steps=["dense"], pid=100 + i % 2, ready_s=3.0 if i < 2 else 50.0, build_s=0.0,
                 seconds=s) for i, s in enumerate(compile_seconds)]
    (tmp_path / "compile.json").write_text(json.dumps(dict(dry_run=True, jobs=2, specializations=len(rows),
                                                           enumerate_s=1.0, rows=rows, errors=[], triton="3.6.0")))
    steps = {step: [dict(inputs="x", build_s=1.0, reference_s=reference, bytes=10**6)] for step in (*G.STEPS, "prefill")}
    (tmp_path / "host.json").write_text(json.dumps(dict(steps=steps, pytest_startup_s=pytest_start,
                                                        batch_invariance_build_s=0.5)))


def test_the_budget_is_the_measurements_plus_stated_assumptions(tmp_path):
    """Compile: the measured compile times scheduled longest first on the H200's 16 cores, plus a
    worker's start and the enumeration; each test step (the prefill one too): its measured start
    and host work plus the assumed CUDA start, kernel loads and kernels; the prefill bench: python
    and CUDA start plus its model; over 480 s the budget fails."""
    _fabricated(tmp_path, [10.0] * 16 + [20.0])
    G.budget(str(tmp_path))
    b = json.loads((tmp_path / "budget.json").read_text())
    rows = {r["step"]: r for r in b["rows"]}
    # 17 jobs on 16 cores, longest first: the 20 s job alone, one core gets two 10 s jobs -> 20 s
    assert rows["compile"]["compile_s"] == pytest.approx(1.0 + 3.0 + 20.0)
    dense = rows["tests"]["run_s"]
    assert dense == pytest.approx(5.0 + G.CUDA_INIT_S + 17 * G.LOAD_S + 3.0 + 0.5
                                  + sum(G._kernel_estimate(c) for c in G.cases("dense")) + 1e6 / G.H2D_BYTES, abs=0.01)
    prefill = rows["prefill"]["run_s"]
    assert prefill == pytest.approx(5.0 + G.CUDA_INIT_S + 3.0 + sum(G._prefill_kernel_estimate(c) for c in P.cases())
                                    + 1e6 / G.H2D_BYTES, abs=0.01)
    assert 0 < sum(G._prefill_kernel_estimate(c) for c in P.cases()) < 1  # small cases: well under a second on a GPU
    est, how = G._prefill_bench_estimate()
    assert rows["prefill-bench"]["run_s"] == pytest.approx(5.0 + G.CUDA_INIT_S + est, abs=0.01)
    assert "do_bench" in how and "not installed there" in rows["prefill-bench"]["how"]
    assert rows["sparse-bench"]["run_s"] == 35 and "prefill (future)" not in rows
    assert b["total_s"] == pytest.approx(sum(r["compile_s"] + r["run_s"] for r in b["rows"]), abs=0.2)
    assert b["total_s"] < G.BUDGET_S and "OVER BUDGET" not in (tmp_path / "budget.md").read_text()
    assert G.main(["budget", str(tmp_path)]) == 0
    _fabricated(tmp_path, [300.0] * 20)  # 6,000 s of compiles: 600 s on 16 cores (two jobs on four of them)
    assert G.main(["budget", str(tmp_path)]) == 1 and "OVER BUDGET" in (tmp_path / "budget.md").read_text()


def test_the_specializations_include_every_case_and_the_bench():
    """The compile step's list holds every launch the matrix's cases make and the benches'; each
    needed by the steps that launch it; the sparse kernel with one top-k piece and with several,
    and the combine after it."""
    specs, errors = G.specializations("cpu")
    assert not errors, errors
    keys = {s[0] for s in specs}
    assert len(keys) == len(specs)
    for case in G.cases():
        assert {G.spec_key(lc) for lc in G.case_launches(case)} <= keys, case.id
    for case in P.cases():
        assert {G.spec_key(lc) for lc in P.case_launches(case)} <= keys, case.id
    assert {G.spec_key(lc) for lc in G.sparse_bench_launches()} <= keys
    assert {G.spec_key(lc) for lc in P.bench_launches()} <= keys
    steps = {st for s in specs for st in s[3]}
    assert steps == {"dense", "hopper", "sparse", "prefill", "bench", "bench-gluon", "sparse-bench", "prefill-bench"}
    sparse = [s for s in specs if s[1].startswith("sparse")]
    pieces = {s[2].args["num_splits"] for s in sparse}
    assert 1 in pieces and max(pieces) > 1, pieces
    assert any(s[1] == "combine" and {"sparse", "sparse-bench"} & s[3] for s in specs)
    for step in ("sparse", "sparse-bench"):  # each sparse step has both paths compiled
        assert {s[2].args["num_splits"] == 1 for s in sparse if step in s[3]} == {True, False}, step


def test_the_sparse_bench_launches_specialize_as_its_own_inputs():
    """sparse_bench_launches builds bench_sparse.py's launches on zero tensors of its shapes; on
    the tensors bench_sparse.build_case really makes (its smoke shapes, small enough for a CPU)
    they specialize the same."""
    import numpy as np
    import torch

    from kernels import bench_sparse
    from kernels import sparse_decode
    rng = np.random.default_rng(0)
    for b, s_q, h_q, topk, mean_sk in bench_sparse.bench_cases(smoke=True):
        q, cache, idx, _, _ = bench_sparse.build_case(torch, rng, b, s_q, h_q, topk, mean_sk, "cpu")
        for t in ((q, cache, idx), G.sparse_bench_inputs(b, s_q, h_q, topk)):
            assert t[1].shape[1:] == cache.shape[1:] and t[2].dtype == idx.dtype
        real, zero = ([G.spec_key(lc) for lc in sparse_decode.prepare(*t, softmax_scale=bench_sparse.SCALE, gpu=True,
                                                                        check_indices=False)[0]]
                      for t in ((q, cache, idx), G.sparse_bench_inputs(b, s_q, h_q, topk)))
        assert real == zero, (b, s_q, h_q, topk)


def test_zero_tensors_of_the_test_shapes_specialize_as_the_test_inputs():
    """The compile step builds each case's launches on zeros of its shapes; the test runs it on
    NaN-poisoned caches and random q. Same dtypes, alignment, table width and integers: the same
    specializations (one case per shape and cache; the prefill cases' too)."""
    seen = set()
    for case, launches in [(c, G.case_launches) for c in G.cases()] + [(c, P.case_launches) for c in P.cases()]:
        if (case.shape, case.cache) in seen:
            continue
        seen.add((case.shape, case.cache))
        real = [G.spec_key(lc) for lc in launches(case, contents=True)]
        assert real == [G.spec_key(lc) for lc in launches(case, contents=False)], case.id


def test_the_prefill_bench_launches_are_the_benchs_own():
    """P.bench_launches builds what `kernels/bench_prefill.py --quick` launches without running it:
    on the bench's own smoke inputs (bench_prefill.build_*), its implementations of ours launch
    exactly what P.bench_case_launches builds (recorded, not run: in the interpreter, where the
    bench runs them), and the stand-ins P.bench_inputs specialize as the bench's inputs do (the
    launches a GPU ships)."""
    import torch

    from kernels import bench_prefill as B
    from kernels.launch import Launch
    gen = torch.Generator().manual_seed(0)
    builders = {"expand": B.build_expand, "prefix": B.build_prefix, "sparse": B.build_sparse}
    recorded = []
    real_call = Launch.__call__
    Launch.__call__ = lambda self: recorded.append(self)
    try:
        for c in B.bench_cases(smoke=True):
            data = builders[c["kind"]](torch, gen, c, "cpu")
            recorded.clear()
            for name, make in B.implementations(c["kind"]).items():
                if name not in B.OTHERS[c["kind"]]:
                    make(data, c)()
            assert [G.spec_key(lc) for lc in recorded] == [G.spec_key(lc) for lc in P.bench_case_launches(c, data, False)]
            stand_in = P.bench_inputs(c)
            assert [(t.shape, t.dtype) for t in stand_in] == [(t.shape, t.dtype) for t in data], c
            assert ([G.spec_key(lc) for lc in P.bench_case_launches(c, data)]
                    == [G.spec_key(lc) for lc in P.bench_case_launches(c, stand_in)]), c
    finally:
        Launch.__call__ = real_call
    assert len(P.bench_launches()) >= len(B.bench_cases(quick=True))


@pytest.mark.slow
def test_the_whole_dry_run(tmp_path):
    """Every step of the dry run on a CPU (minutes on two busy cores: the sm_90 compiles are real):
    the compile list compiles, the host work is timed, the budget is projected under 8 minutes,
    the bench steps' gates pass in the interpreter (the prefill bench's too). The four test steps
    only collect here
    (GPU_CHECK_PYTEST_ARGS=--collect-only): each selects exactly the case matrix of its step,
    and CI runs those same tests itself (tests/test_kernel_gpu_matrix.py, the gpu_check test of
    tests/test_kernel_batch_invariant.py), so running them twice would only double their time.
    `bash kernels/gpu_check.sh --dry-run` runs them too."""
    from tests.test_kernel_batch_invariant import GPU_CHECK_VERSIONS
    r = run("--dry-run", str(tmp_path), env=dict(GPU_CHECK_PYTEST_ARGS="--collect-only"), timeout=2400)
    summary = (tmp_path / "GPU_CHECK.md").read_text()
    print(summary)
    assert r.returncode == 0, summary + r.stderr
    for step in ("env", "compile", "host", "tests", "hopper", "sparse", "prefill", "bench", "bench-gluon",
                 "sparse-bench", "prefill-bench", "budget"):
        assert f"| {step} | ok |" in summary, step
    for step, want in (("tests", len(G.cases("dense")) + len(GPU_CHECK_VERSIONS)), ("hopper", len(G.cases("hopper"))),
                       ("sparse", len(G.cases("sparse"))), ("prefill", len(P.cases()))):
        found = re.search(r"(\d+)(?:/\d+)? tests? collected", (tmp_path / f"{step}.log").read_text())
        assert found and int(found.group(1)) == want, (step, want, found and found.group(0))
    compiled = json.loads((tmp_path / "compile.json").read_text())
    assert compiled["dry_run"] and compiled["specializations"] == len(G.specializations("cpu")[0])
    # every core compiles (nproc, which one OpenMP thread per process must not shrink to 1 job)
    assert compiled["jobs"] == min(len(os.sched_getaffinity(0)), compiled["specializations"])
    assert not any(r.get("error") for r in compiled["rows"]) and not compiled["errors"]
    budget = json.loads((tmp_path / "budget.json").read_text())
    assert budget["total_s"] < 480 and budget["limits_s"] == 480
    assert re.search(r"Projected total \*\*\d+ s\*\* of the 480 s budget", summary)
    bench = (tmp_path / "bench_quick.md").read_text()
    assert "| tiled |" in bench and "| planned |" in bench and "CPU smoke run" in bench
    assert "## For kernels/BENCHMARKS.md" in summary and "| cache | mean s_k |" in summary
    assert "Version 6 (seesaw): compiled, not yet run on a GPU" in summary
    sparse_bench = (tmp_path / "bench_sparse.md").read_text()
    assert "kernels/bench_sparse.py --smoke" in sparse_bench and "every checked row passed" in sparse_bench
    assert "### Sparse decode" in summary
    prefill_bench = (tmp_path / "bench_prefill.md").read_text()
    assert "--smoke" in prefill_bench and "every checked row passed" in prefill_bench and "### Prefill" in summary
    rows = {r["step"]: r for r in budget["rows"]}
    assert {"prefill", "prefill-bench"} <= set(rows) and all(rows[s]["limit"] > 0 for s in ("prefill", "prefill-bench"))
