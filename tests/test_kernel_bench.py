"""The parts of kernels/bench.py that need no GPU: arguments, the case matrix, the
FLOP/byte accounting, the correctness gate (FlashMLA's rule; a failing version is not timed
and the run exits 1), FlashMLA's two interfaces, the markdown writer and the roofline plot
(fake timings, tmp dir), and the whole pipeline in Triton's interpreter."""
import numpy as np
import pytest

from kernels import bench


def test_args_and_cases():
    a = bench.parse_args(["--quick", "--versions", "tiled,splitkv", "--out", "/tmp/x/B.md"])
    assert a.quick and a.versions == ["tiled", "splitkv"] and a.png == "/tmp/x/B_roofline.png"
    with pytest.raises(SystemExit):
        bench.parse_args(["--versions", "fastest"])
    with pytest.raises(SystemExit):
        bench.parse_args(["--quick", "--smoke"])
    assert set(bench.parse_args([]).versions) == set(bench.versions()) | {"torch", "flashmla"}
    assert bench.parse_args(["--smoke"]).b == 3 and bench.parse_args([]).b == 128
    # group words from the table's rows: hopper_only versions, and the rest, each once
    hopper = [n for n, v in bench.table().items() if v.hopper_only]
    portable = [n for n, v in bench.table().items() if not v.hopper_only]
    assert hopper and portable and set(hopper + portable) == set(bench.versions())
    assert bench.parse_args(["--versions", "hopper,torch"]).versions == hopper + ["torch"]
    assert bench.parse_args(["--versions", f"{portable[0]},portable"]).versions == portable
    full = bench.bench_cases(False)
    assert len(full) == 2 * 4 * 2 * 3  # cache x s_k x s_q x h_q
    assert {c[1] for c in full} == {4096, 8192, 16384, 32768} and {c[3] for c in full} == {16, 64, 128}
    assert all(c[1] == 8192 and c[2] == 1 for c in bench.bench_cases(True))


def test_work_matches_flashmla_formula():
    lens = np.array([4000, 8192, 12000])
    b, s_q, h_q = len(lens), 2, 128
    flop, nbytes = bench.work(lens, s_q, h_q, "bf16")
    # FlashMLA: FLOP = b*h_q*s_q*2*mean_sk*(576+512); bytes = b*2*(s_q*h_q*576 + mean_sk*576 + s_q*h_q*512)
    mean = lens.mean()
    assert flop == pytest.approx(b * h_q * s_q * 2 * mean * (576 + 512), rel=1e-12)
    assert nbytes == pytest.approx(b * 2 * (s_q * h_q * 576 + mean * 576 + s_q * h_q * 512), rel=1e-12)
    _, nbytes8 = bench.work(lens, s_q, h_q, "fp8")
    assert nbytes - nbytes8 == (1152 - 656) * lens.sum()


def test_lengths_flashmla_unclipped_and_clipped():
    lens = bench.draw_lengths(np.random.default_rng(0), 4096, 8192, 2)  # FlashMLA's draw, the default
    assert lens.min() >= 2 and lens.max() > 2 * 8192 and len(set(lens.tolist())) > 1000
    assert abs(lens.mean() - 8192) < 300
    clipped = bench.draw_lengths(np.random.default_rng(0), 128, 8192, 2, "clipped")
    assert clipped.min() >= 2 and clipped.max() <= 2 * 8192 and len(set(clipped.tolist())) > 100
    assert bench.parse_args([]).lengths == "flashmla"


def test_kernel_time_from_the_profiler_on_cpu():
    """The profiler path runs (on a GPU it sums CUDA kernel times; here CPU operator times)."""
    import torch
    a = torch.randn(256, 256)
    ms = bench.kernel_time_ms(lambda: a @ a, reps=3, device="cpu")
    assert 0 < ms < 1000


def test_markdown_and_roofline_with_fake_timings(tmp_path):
    rows = []
    for v, ms in (("tiled", 2.0), ("splitkv", 1.0), ("naive", None)):
        flop, nbytes = bench.work([8192] * 128, 1, 128, "bf16")
        r = dict(cache="bf16", s_k_mean=8192.0, s_k_max=16000, s_q=1, h_q=128, version=v, flop=flop, bytes=nbytes,
                 ms=ms)
        if ms is not None:  # the kernels take half the call
            r.update(kernel_ms=ms / 2, tflops_call=flop / ms / 1e9, tflops=flop / (ms / 2) / 1e9,
                     tbs=nbytes / (ms / 2) / 1e9, check="ok: max abs 1.0e-03, cos 1.0e-06")
        else:
            r["note"] = "skipped (use --all)"
        rows.append(r)
    meta = dict(date="2000-01-01 00:00", gpu="FAKE GPU", driver="0", torch="t", triton="t", python="3",
                command="python kernels/bench.py --quick")
    md = bench.render_markdown(meta, rows)
    # 2*128*8192*128*1088 FLOP = 292.06e9 FLOP: in 1 ms of call 292.1 TFLOPS, in 0.5 ms of kernels 584.1
    assert "| bf16 | 8192 | 16000 | 1 | 128 | splitkv | 1.000 | 0.500 | 292.1 | 584.1 |" in md, md
    assert "| naive | not timed |" in md and "FAKE GPU" in md and "Targets (not results)" in md
    assert "every timed version passed" in md and "whole-call do_bench" in md
    failed = rows + [dict(rows[2], version="planned", failed=True, note="FAILED planned out: MISMATCH ...")]
    md = bench.render_markdown(meta, failed)
    assert "1 version(s) FAILED and were not timed" in md and "## Failed the correctness gate" in md
    png = tmp_path / "roof.png"
    bench.plot_roofline(rows, bench.gpu_key("NVIDIA H200"), str(png))
    assert png.stat().st_size > 1000
    assert bench.gpu_key("NVIDIA H100 80GB HBM3") == "H100" and bench.gpu_key("Tesla T4") is None


def test_never_benchmarks_md_unless_asked(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(["--out", bench.BENCHMARKS_MD])
    assert "holds the recorded results" in capsys.readouterr().err
    assert bench.parse_args(["--out", bench.BENCHMARKS_MD, "--update-benchmarks-md"]).out == bench.BENCHMARKS_MD
    default = bench.parse_args([]).out
    assert default.startswith("bench-") and default.endswith(".md") and "BENCHMARKS" not in default


def test_the_gate_uses_flashmlas_rule_and_cosine():
    import torch
    from kernels.reference import FLASHMLA_OUT_TOL, compare
    ref = torch.full((1000,), 0.5, dtype=torch.float64)
    near = ref + 5e-3  # abs 5e-3 > 8e-4, but rel 1e-2 < 2.01/128: passes FlashMLA's either-rule
    assert compare("x", near, ref, **FLASHMLA_OUT_TOL).n_ok == 1000
    far = ref.clone()
    far[3] = 0.6  # abs 0.1, rel 0.2: fails both
    c = compare("x", far, ref, **FLASHMLA_OUT_TOL)
    assert not c.ok and c.n_ok == 999 and c.where == (3,) and "abs or rel" in c.message
    # every element within tolerance, the cosine difference over 5e-6: still a failure
    rng = np.random.default_rng(0)
    r = torch.from_numpy(rng.standard_normal(10000))
    g = r * (1 + torch.from_numpy(rng.uniform(-0.0155, 0.0155, 10000)))
    c = compare("x", g, r, **FLASHMLA_OUT_TOL)
    assert c.n_ok == c.n and c.cos_diff > 5e-6 and not c.ok
    z_out, z_lse = torch.zeros(2, 1, 2, 3), torch.zeros(2, 2, 1)
    ref = (z_out + 1, z_lse)
    ok, text = bench.gate("v", z_out, z_lse, ref, ref)
    assert not ok and text.startswith("FAILED out (GPU) vs float64 v"), text
    ok, text = bench.gate("v", z_out + 1, z_lse, ref, ref)
    assert ok and text.startswith("ok: max abs 0.0e+00"), text
    # a GPU-like reference outside the GPU's tolerances of float64 fails the gate before the version
    ok, text = bench.gate("v", z_out + 1, z_lse, ref, (z_out + 1.1, z_lse))
    assert not ok and text.startswith("FAILED GPU-like reference out vs float64 v"), text
    # FlashMLA's abs figure is in units of V: rms 1 allows ten times FlashMLA's 8e-4 (its V has rms 0.1)
    one_zero = torch.ones(2, 1, 2, 3)
    one_zero[0, 0, 0, 0] = 0.0  # an output near 0: only the abs rule can pass an error there
    off = one_zero.clone()
    off[0, 0, 0, 0] = 5e-3
    assert bench.gate("v", off, z_lse, (one_zero, z_lse), (one_zero, z_lse), v_rms=1.0)[0]
    assert not bench.gate("v", off, z_lse, (one_zero, z_lse), (one_zero, z_lse), v_rms=0.1)[0]


def test_flashmla_interfaces():
    """Old and new get_mla_metadata, lse +inf (FlashMLA's "no key") read as -inf (ours)."""
    import torch

    class Old:
        calls = []

        @staticmethod
        def get_mla_metadata(cache_seqlens, heads, h_kv):
            Old.calls.append((heads, h_kv))
            return "meta", "splits"

        @staticmethod
        def flash_mla_with_kvcache(q, kv, bt, sl, dv, meta, splits, softmax_scale, causal):
            assert (meta, splits, dv, causal) == ("meta", "splits", 512, True)
            return torch.zeros(q.shape[:3] + (dv,)), torch.tensor([[[float("inf")]], [[1.0]]])

    class New(Old):
        @staticmethod
        def get_mla_metadata(*args, **kwargs):  # arguments ignored since 2025-09
            return "meta", None

        @staticmethod
        def flash_mla_with_kvcache(q, kv, bt, sl, dv, meta, splits, softmax_scale, causal):
            assert splits is None
            return torch.zeros(q.shape[:3] + (dv,)), torch.tensor([[[float("inf")]], [[1.0]]])

    q = torch.zeros(2, 1, 16, 576)
    for mod in (Old, New):
        out, lse = bench.flashmla_fn(mod, q, None, None, torch.tensor([0, 5]), 0.1)()
        assert out.shape == (2, 1, 16, 512) and lse[0, 0, 0] == float("-inf") and lse[1, 0, 0] == 1.0
    assert Old.calls == [(16, 1)]


def test_a_failing_version_is_not_timed_and_the_run_fails(tmp_path, monkeypatch):
    import torch
    from kernels import mla_decode
    real = mla_decode.mla_decode_with_kvcache

    def broken(*a, **kw):  # the tiled version comes back 10% too large
        out, lse = real(*a, **kw)
        if kw.get("version") == "tiled":
            out = out * 1.1
        return out, lse

    monkeypatch.setattr(mla_decode, "mla_decode_with_kvcache", broken)
    timed = []
    args = bench.parse_args(["--b", "2", "--versions", "tiled,planned", "--out", str(tmp_path / "B.md")])
    rows = bench.run(args, device="cuda" if torch.cuda.is_available() else "cpu",
                     timer=lambda fn: timed.append(1) or 1.0, kernel_timer=lambda fn: 0.5,
                     cases=[("bf16", 40, 1, 16)])
    tiled = next(r for r in rows if r["version"] == "tiled")
    planned = next(r for r in rows if r["version"] == "planned")
    assert tiled["failed"] and tiled["ms"] is None and "MISMATCH" in tiled["note"]
    assert planned["ms"] == 1.0 and not planned.get("failed") and len(timed) == 1
    text = (tmp_path / "B.md").read_text()
    assert "FAILED and were not timed" in text and "| tiled | not timed |" in text
    monkeypatch.setattr(bench, "run", lambda a: rows)
    assert bench.main(["--out", str(tmp_path / "C.md")]) == 1


def test_bench_refuses_without_gpu(tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    out = tmp_path / "B.md"
    with pytest.raises(SystemExit, match="needs a CUDA GPU"):
        bench.run(bench.parse_args(["--quick", "--out", str(out)]))
    assert not out.exists()


def test_build_cache_and_fp8_packing_on_cpu():
    """bench.build_cache lays sequences on shuffled pages, poisons what they do not use (NaN
    slots, out-of-range table entries); the references read only what is used."""
    import torch
    from kernels.reference import gather_sequence, reference_decode, reference_decode_padded
    rng = np.random.default_rng(1)
    lens = np.array([1, 64, 130])
    kv, bt, sl = bench.build_cache(torch, rng, lens, torch.bfloat16, "cpu")
    assert kv.shape == (1 + 1 + 3, 64, 1, 576) and bt.dtype == torch.int32 and sl.tolist() == [1, 64, 130]
    used = torch.cat([bt[0, :1], bt[1, :1], bt[2, :3]])
    assert sorted(used.tolist()) == list(range(5)), "every page used exactly once"
    assert gather_sequence(kv, bt, sl, 2).shape == (130, 576)
    assert torch.isnan(kv[bt[0, 0], 1:]).all() and not torch.isnan(kv[bt[1, 0]]).any()  # tails poisoned
    assert bt[0, 1:].tolist() == [2**31 - 1] * 2, "unused table entries are out of range"
    q = torch.randn(3, 1, 4, 576, dtype=torch.bfloat16)
    ref_o, ref_l = reference_decode(q, kv, bt, sl, 512, 0.05, True)
    pad_o, pad_l = reference_decode_padded(q, kv, bt, sl, 512, 0.05, True, dtype=torch.float64, exact=True)
    assert pad_o.dtype == torch.float64 and torch.isfinite(pad_o).all()
    assert torch.allclose(pad_o, ref_o, atol=1e-12) and torch.allclose(pad_l, ref_l, atol=1e-12)
    kv8 = bench.pack_fp8_chunked(torch, kv, chunk=2)
    assert kv8.shape == (5, 64, 1, 656) and kv8.dtype == torch.uint8
    from kernels.fp8 import pack_fp8_kvcache
    assert torch.equal(kv8, pack_fp8_kvcache(kv)), "chunked packing must equal one-shot packing"


def test_run_smoke_on_cpu(tmp_path, monkeypatch):
    """The whole run() pipeline on CPU in Triton's interpreter: tiny cases, a fake timer
    (1 ms), output into tmp_path. Checks plumbing, not speed."""
    args = bench.parse_args(["--b", "2", "--out", str(tmp_path / "B.md")])
    calls, kernel_calls = [], []

    def fake_timer(fn):
        fn()
        calls.append(1)
        return 1.0

    def fake_kernel_timer(fn):
        kernel_calls.append(1)
        return 0.5

    monkeypatch.setattr(bench, "SLOW_FROM_SK", 100)  # stands in for 16K: skip naive/torch from mean s_k 100
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"  # CPU: Triton's interpreter (conftest)
    rows = bench.run(args, device=device, timer=fake_timer, kernel_timer=fake_kernel_timer,
                     cases=[("bf16", 40, 1, 16), ("fp8", 40, 1, 16), ("bf16", 120, 2, 16)])
    # the versions that run in the interpreter and torch side by side on two cases, then without the
    # one-row-per-program ones and torch; the Hopper-only versions and flashmla are not timed on a CPU
    here = [n for n, v in bench.table().items() if v.runs_on(device)]
    slow = [n for n in here if bench.table()[n].block_m == (1,)]
    assert here and slow, "the smoke run needs a version with one program per row to skip"
    expected = sum(1 + sum(cache in bench.table()[n].caches for n in here) for cache in ("bf16", "fp8")) \
        + len(here) - len(slow)  # the last case (mean s_k 120 >= 100): neither torch nor the slow ones
    assert len(calls) == len(kernel_calls) == expected
    assert {r["version"] for r in rows} == set(bench.versions()) | {"torch", "flashmla"}
    assert all(r["ms"] is None for r in rows if r["version"] not in here + ["torch"])
    assert all(r["tflops"] == r["flop"] / 0.5 / 1e9 for r in rows if r["ms"]), "kernel rates from the kernel time"
    assert all(r["tflops_call"] == r["flop"] / 1.0 / 1e9 for r in rows if r["ms"]), "call rates from the call"
    timed = [r for r in rows if r["ms"] is not None]
    assert not any(r.get("failed") for r in rows), [r.get("note") for r in rows if r.get("failed")]
    assert all(r["check"].startswith("ok") for r in timed), [r["check"] for r in timed]
    text = (tmp_path / "B.md").read_text()
    assert ("CPU (smoke test, not a benchmark)" in text or device == "cuda") and "skipped (use --all)" in text
    assert (tmp_path / "B_roofline.png").exists()


def test_floors_from_datasheet():
    rows = {r[0]: r for r in bench.floors("H200")}
    # h_q=128: 128*128*2*8192*1088 FLOP at 989.4e12 FLOP/s
    assert rows[128][3] == pytest.approx(128 * 128 * 2 * 8192 * 1088 / 989.4e12 * 1e3, rel=1e-12)
    # h_q=16: 128*2*(16*576 + 8192*576 + 16*512) bytes at 4.8e12 B/s
    assert rows[16][4] == pytest.approx(128 * 2 * (16 * 576 + 8192 * 576 + 16 * 512) / 4.8e12 * 1e3, rel=1e-12)
    assert rows[128][6] == "compute" and rows[16][6] == "memory"
    assert "| 128 |" in bench.floors_md() and "predictions, not measurements" in bench.floors_md()
