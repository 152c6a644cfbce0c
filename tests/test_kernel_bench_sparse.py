"""kernels/bench_sparse.py without a GPU: arguments, FlashMLA's shapes and accounting, the
batch it builds, the correctness gate against both references (a failing row is not timed and
the run exits 1), FlashMLA's interface, the report -- and the whole run on tiny shapes in
Triton's interpreter, where it times nothing."""
import numpy as np
import pytest
import torch

from kernels import bench_sparse as B

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_args_and_flashmlas_shapes():
    a = B.parse_args(["--quick", "--out", "/tmp/x/S.md"])
    assert a.quick and not a.smoke and a.out == "/tmp/x/S.md"
    with pytest.raises(SystemExit):
        B.parse_args(["--quick", "--smoke"])
    with pytest.raises(SystemExit):
        B.parse_args(["--out", B.BENCHMARKS_MD])
    assert B.parse_args(["--out", B.BENCHMARKS_MD, "--update-benchmarks-md"]).out == B.BENCHMARKS_MD
    assert B.parse_args([]).out.startswith("bench-sparse-")
    full = B.bench_cases()
    # FlashMLA's sparse decode test: h_q 64/128, top-k 2048, s_q 1/2, b from its V3.2 production list
    assert {c[2] for c in full} == {64, 128} and {c[1] for c in full} == {1, 2} and {c[3] for c in full} == {2048}
    assert {c[0] for c in full} == {2, 64, 74, 128} and len(full) == 16
    assert all(c[3] == 2048 and c[1] == 2 for c in B.bench_cases(quick=True))
    assert {c[0] for c in B.bench_cases(quick=True)} == {2, 128}


def test_work_is_flashmlas_count():
    """FLOP = 2*h_q*b*s_q*topk*(576+512), -1 entries included; bytes = q + unique values * 656 + out,
    with indices.unique() counting a -1 once (FlashMLA tests/lib.py count_flop_and_mem_vol_for_decode)."""
    idx = torch.tensor([[[5, 7, -1, 5]], [[9, 7, 11, -1]]], dtype=torch.int32)  # b=2, s_q=1, topk=4
    flop, nbytes = B.work(idx, 64)
    assert flop == 2 * 64 * (2 * 1 * 4) * (576 + 512)
    unique = 5  # {-1, 5, 7, 9, 11}
    assert nbytes == 2 * 2 * 1 * 64 * 576 + unique * 656 + 2 * 2 * 1 * 64 * 512


def test_the_batch_it_builds():
    rng = np.random.default_rng(3)
    q, cache, idx, lens, v_rms = B.build_case(torch, rng, 3, 2, 4, 64, 100, "cpu")
    assert q.shape == (3, 2, 4, 576) and q.dtype == torch.bfloat16 and idx.dtype == torch.int32
    assert cache.shape[1:] == (64, 1, 656) and 0.8 < v_rms < 1.2
    flat = cache.reshape(-1, 656)
    for i in range(3):
        for j in range(2):
            row = idx[i, j]
            valid = row[row >= 0]
            assert valid.numel() == min(64, int(lens[i])), "every position of a short sequence, top-k of a long one"
            assert valid.unique().numel() == valid.numel(), "distinct positions"
            assert (row[valid.numel():] == -1).all() or valid.numel() == 64
    used = torch.zeros(flat.shape[0], dtype=torch.bool)
    used[idx[idx >= 0].long()] = True
    assert (flat[~used] == 0xFF).all(), "every row no index names is poison"
    from kernels.fp8 import unpack_fp8_rows
    assert torch.isfinite(unpack_fp8_rows(flat[used])).all()
    pages = (idx[idx >= 0].long() // 64).unique()
    assert pages.numel() <= sum(-(-int(n) // 64) for n in lens)


def test_refuses_without_a_gpu(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    out = tmp_path / "S.md"
    with pytest.raises(SystemExit, match="needs a CUDA GPU"):
        B.run(B.parse_args(["--quick", "--out", str(out)]))
    assert not out.exists()


def test_the_smoke_run_checks_and_times_nothing_without_a_gpu(tmp_path):
    """The whole pipeline on tiny shapes (Triton's interpreter on a CPU). A GPU run of this test
    times with fake timers."""
    args = B.parse_args(["--smoke", "--out", str(tmp_path / "S.md")])
    rows = B.run(args, device=DEVICE, timer=lambda fn: 1.0, kernel_timer=lambda fn: 0.5)
    ours = [r for r in rows if r["version"] == "sparse"]
    assert len(ours) == 2 and not any(r.get("failed") for r in rows), [r.get("note") for r in rows]
    assert ours[0]["splits"] > 1 and ours[1]["splits"] == 1, "the first smoke case cuts its lists"
    text = (tmp_path / "S.md").read_text()
    assert "every checked row passed" in text and "| sparse |" in text
    if DEVICE == "cpu":
        assert all(r["ms"] is None for r in rows) and "none: no GPU in this run" in text
        assert "not timed: no GPU" in text and " ms (" not in text


def test_a_failing_row_is_not_timed_and_the_run_fails(tmp_path, monkeypatch):
    import dataclasses

    from kernels import sparse_decode
    real = B.sparse_versions()["sparse"]

    def broken(call):  # the real launches, then out made 10% too large
        return sparse_decode.launches(call) + [lambda: call.out.mul_(1.1)]

    monkeypatch.setattr(B, "sparse_versions", lambda: {"sparse": dataclasses.replace(real, launch=broken)})
    timed = []
    args = B.parse_args(["--smoke", "--out", str(tmp_path / "S.md")])
    rows = B.run(args, device=DEVICE, timer=lambda fn: timed.append(1) or 1.0, kernel_timer=lambda fn: 0.5,
                 cases=[(2, 1, 16, 64, 80)])
    row = next(r for r in rows if r["version"] == "sparse")
    assert row["failed"] and row["ms"] is None and "MISMATCH" in row["note"] and not timed
    assert "FAILED and were not timed" in (tmp_path / "S.md").read_text()
    monkeypatch.setattr(B, "run", lambda a: rows)
    assert B.main(["--smoke", "--out", str(tmp_path / "T.md")]) == 1


def test_flashmlas_interface_and_its_plus_inf():
    class Fake:
        seen = {}

        @staticmethod
        def get_mla_metadata(*args, **kwargs):
            assert not args and not kwargs  # the current interface: the metadata is made on the first call
            return "meta", None

        @staticmethod
        def flash_mla_with_kvcache(q, kv, bt, sl, dv, meta, splits, softmax_scale, causal, is_fp8_kvcache, indices):
            Fake.seen.update(bt=bt, sl=sl, dv=dv, meta=meta, causal=causal, fp8=is_fp8_kvcache, idx=indices)
            return torch.zeros(q.shape[:3] + (dv,)), torch.tensor([[[float("inf")]], [[2.0]]])

    idx = torch.zeros(2, 1, 64, dtype=torch.int32)
    out, lse = B.flashmla_sparse_fn(Fake, torch.zeros(2, 1, 64, 576), None, idx, 0.1)()
    assert lse[0, 0, 0] == float("-inf") and lse[1, 0, 0] == 2.0 and out.shape == (2, 1, 64, 512)
    assert Fake.seen["bt"] is None and Fake.seen["sl"] is None and Fake.seen["idx"] is idx
    assert Fake.seen["fp8"] and not Fake.seen["causal"] and Fake.seen["dv"] == 512


def test_report_with_fake_timings():
    flop, nbytes = 2 * 128 * 128 * 2 * 2048 * 1088, 10**9
    rows = [dict(b=128, s_q=2, h_q=128, topk=2048, s_k_mean=32768.0, version="sparse", splits=1, flop=flop,
                 bytes=nbytes, ms=2.0, kernel_ms=1.0, tflops_call=flop / 2.0 / 1e9, tflops=flop / 1.0 / 1e9,
                 tbs=nbytes / 1.0 / 1e9, check="ok: max abs 1.0e-03, cos 1.0e-06"),
            dict(b=128, s_q=2, h_q=128, topk=2048, s_k_mean=32768.0, version="flashmla", ms=None,
                 note="flash_mla does not import")]
    meta = dict(date="2000-01-01 00:00", gpu="FAKE GPU", driver="0", torch="t", triton="t", python="3",
                command="python kernels/bench_sparse.py --quick", on_gpu=True)
    md = B.render_markdown(meta, rows)
    # 2*128*(128*2*2048)*1088 FLOP = 146.0e9: in 2 ms of call 73.0 TFLOPS, in 1 ms of kernels 146.0
    assert "| 128 | 2 | 128 | 2048 | 32768 | sparse | 1 | 2.000 | 1.000 | 73.0 | 146.0 | 1.00 |" in md, md
    assert "| flashmla | - | not timed |" in md and "medians on the GPU above" in md


@pytest.mark.slow
def test_the_dequantization_census_matches_the_tile():
    """bench_sparse --census compiles the kernel for sm_90 (a subprocess: the interpreter cannot
    compile) and counts the KV loop's conversions; each must convert exactly one tile's latents,
    BLOCK_N * 512 values over the block's threads (e4m3 unpacks two per instruction)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    code = "import json; from kernels.bench_sparse import dequant_census; print(json.dumps(dequant_census()))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900,
                          cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    c = json.loads(proc.stdout.strip().splitlines()[-1])
    values = c["block_n"] * 512 // c["threads"]  # latents per thread per tile
    assert c["conversions"]["F2FP.F16.E4M3.UNPACK_B"] * 2 == values
    assert c["conversions"]["HADD2.F32"] == values
    assert c["conversions"]["F2FP.BF16.F32.PACK_AB"] * 2 >= values and c["fmul"] >= values
    assert c["hgmma"] > 0 and c["heads_programs"] == 2
    # the figures kernels/BENCHMARKS.md records (and chapter 8 prints from it) are this census's
    import re

    import triton
    bench = (root / "kernels" / "BENCHMARKS.md").read_text()
    m = re.search(r"triton ([\d.]+), no GPU\)\s+counts the KV loop .*? (\d+) SASS\s+instructions per thread per tile, of "
                  r"which (\d+) are conversions \((\d+) F2FP\.F16\.E4M3\.UNPACK_B,\s+(\d+) HADD2\.F32, (\d+) "
                  r"F2FP\.BF16\.F32\.PACK_AB.*?and (\d+) are the scale's\s+FMULs", bench, re.S)
    assert m, "kernels/BENCHMARKS.md has no census paragraph"
    if m.group(1) == triton.__version__:
        recorded = [int(g) for g in m.groups()[1:]]
        conv = c["conversions"]
        assert recorded == [c["instructions"], sum(conv.values()), conv["F2FP.F16.E4M3.UNPACK_B"], conv["HADD2.F32"],
                            conv["F2FP.BF16.F32.PACK_AB"], values], (recorded, c)
