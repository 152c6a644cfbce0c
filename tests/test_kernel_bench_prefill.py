"""kernels/bench_prefill.py without a GPU: arguments, shapes and FlashAttention's FLOP count, the
batched device references against the CPU ones, the libraries' adapters on fakes, the target
line, the report -- and the whole run on tiny shapes in Triton's interpreter, where it times
nothing, and a failing row that is not timed."""
import math
import sys
import types

import numpy as np
import pytest
import torch

from kernels import bench_prefill as B
from kernels import reference as R
from mlacourse.prefill import fa_flops

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_args_and_the_matrix():
    a = B.parse_args(["--quick", "--out", "/tmp/x/P.md"])
    assert a.quick and not a.smoke and a.out == "/tmp/x/P.md"
    with pytest.raises(SystemExit):
        B.parse_args(["--quick", "--smoke"])
    with pytest.raises(SystemExit):
        B.parse_args(["--out", B.BENCHMARKS_MD])
    assert B.parse_args([]).out.startswith("bench-prefill-")
    quick = B.bench_cases(quick=True)
    assert quick[0] == B.TARGET == dict(kind="expand", b=1, s_q=8192, s_k=8192, h=128)
    assert {c["kind"] for c in quick} == {"expand", "prefix", "sparse"}
    full = B.bench_cases()
    fresh = [(c["b"], c["s_q"]) for c in full if c["kind"] == "expand" and c["s_q"] == c["s_k"]]
    assert (8, 2048) in fresh and (1, 16384) in fresh and all(b * s in (8192, 16384) for b, s in fresh)
    sparse = [c for c in full if c["kind"] == "sparse"]
    assert {c["topk"] for c in sparse} == {2048} and {c["h"] for c in sparse} == {64, 128}
    assert {c["s_q"] for c in sparse} == {4096}  # FlashMLA's performance cases


def test_flop_counts():
    assert B.case_flop(B.TARGET) == fa_flops(1, 128, 8192, 8192, 192, 128) == 128 * 2 * 8192 * 4096 * 320
    ext = dict(kind="expand", b=1, s_q=2048, s_k=32768, h=128)
    assert B.case_flop(ext) == 128 * 2 * 2048 * ((30720 + 32768) / 2) * 320
    pre = dict(ext, kind="prefix")
    assert B.case_flop(pre) == B.case_flop(ext) + 32768 * 2 * 512 * 128 * 256
    sp = dict(kind="sparse", b=1, s_q=4096, s_k=32768, h=128, topk=2048)
    assert B.case_flop(sp) == 2 * 128 * 4096 * 2048 * 1088  # FlashMLA's get_flop


def test_floors():
    text = B.floors_md("H200")
    assert "predictions, not measurements" in text and "| b=1, 8192 queries over 8192 keys, h=128 | 2748.8 |" in text
    r = B.floors("H200")[0]
    assert r["bound"] == "compute" and r["floor_ms"] == pytest.approx(2748.78e9 / 989.4e12 * 1e3, rel=1e-4)
    assert text in open(B.BENCHMARKS_MD).read(), "kernels/BENCHMARKS.md's prefill floors are not what floors_md() prints"


def test_the_batched_references_equal_the_cpu_ones():
    gen = torch.Generator().manual_seed(1)
    c = dict(kind="expand", b=2, s_q=9, s_k=30, h=3)
    q, k, v, cu_q, cu_k = B.build_expand(torch, gen, c, "cpu")
    for mode in ("float64", "gpu"):
        got = R.reference_prefill_batched(q, k, v, cu_q, cu_k, B.SCALE, mode=mode, max_bytes=2000)  # 1 head a step
        want = R.reference_prefill(q, k, v, cu_q, cu_k, B.SCALE, mode=mode)
        torch.testing.assert_close(got[0].double(), want[0].double(), rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(got[1].double(), want[1].double(), rtol=1e-9, atol=1e-9)
    data = B.build_prefix(torch, gen, dict(kind="prefix", b=2, s_q=5, s_k=70, h=2), "cpu")
    for ws in (None, torch.bfloat16):
        got = R.reference_prefix_prefill_batched(*data, B.SCALE, workspace_dtype=ws)
        want = R.reference_prefix_prefill(*data, B.SCALE, workspace_dtype=ws)
        torch.testing.assert_close(got[0], want[0], rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(got[1], want[1], rtol=1e-9, atol=1e-9)
    # the GPU-like one over the whole context against the chunked one: the same roundings but the
    # partial results' float32 steps
    got = R.reference_prefix_prefill_batched(*data, B.SCALE, mode="gpu")
    want = R.reference_prefix_prefill(*data, B.SCALE, mode="gpu", chunk_tokens=128)
    assert R.compare("out", got[0], want[0], atol=1e-2, rtol=1e-2).ok
    assert R.compare("lse", got[1], want[1], atol=1e-5, rtol=1e-5).ok
    q, kv, idx = B.build_sparse(torch, gen, dict(kind="sparse", b=1, s_q=5, s_k=50, h=16, topk=64), "cpu")
    assert (idx[:, 0, 50:] == -1).all()  # top-k beyond the rows: -1
    from mlacourse import sparse as S
    fp8 = torch.from_numpy(S.random_fp8_cache(np.random.default_rng(2), 1, 50, np.arange(50))[0])
    for rows in (kv, fp8):
        for mode in ("float64", "gpu"):
            got = R.reference_sparse_prefill_batched(q, rows, idx, B.SCALE, mode=mode, max_bytes=10**6)
            want = R.reference_sparse_prefill(q, rows, idx, B.SCALE, mode=mode)
            torch.testing.assert_close(got[0].double(), want[0].double(), rtol=1e-9, atol=1e-9)
            torch.testing.assert_close(got[1].double(), want[1].double(), rtol=1e-9, atol=1e-9)


def test_the_smoke_run_checks_and_times_nothing_without_a_gpu(tmp_path):
    args = B.parse_args(["--smoke", "--out", str(tmp_path / "P.md")])
    rows = B.run(args, device=DEVICE, timer=lambda fn: 1.0, kernel_timer=lambda fn: 0.5)
    assert not any(r.get("failed") for r in rows), [r.get("note") for r in rows]
    ran = {(r["case"]["kind"], r["impl"]) for r in rows if "does not import" not in r.get("note", "")}
    assert {("expand", "prefill_tiled"), ("expand", "prefill_causal"), ("expand", "sdpa"),
            ("prefix", "prefix_chunks"), ("sparse", "prefill_sparse")} <= ran
    text = (tmp_path / "P.md").read_text()
    assert "every checked row passed" in text
    if DEVICE == "cpu":
        assert all(r["ms"] is None for r in rows) and "none: no GPU in this run" in text
        assert "prefill_causal was not timed" in text and " ms (" not in text


def test_a_failing_row_is_not_timed_and_the_run_fails(tmp_path, monkeypatch):
    real = B.implementations

    def broken(kind):
        impls = dict(real(kind))
        if kind == "expand":
            good = impls["prefill_causal"]

            def make(data, c):
                fn = good(data, c)

                def wrong():
                    out, lse = fn()
                    return out * 1.1, lse  # out 10% too large
                return wrong
            impls["prefill_causal"] = make
        return impls
    monkeypatch.setattr(B, "implementations", broken)
    timed = []
    args = B.parse_args(["--smoke", "--out", str(tmp_path / "P.md")])
    rows = B.run(args, device=DEVICE, timer=lambda fn: timed.append(1) or 1.0, kernel_timer=lambda fn: 0.5,
                 cases=[dict(kind="expand", b=1, s_q=20, s_k=20, h=2)])
    row = next(r for r in rows if r["impl"] == "prefill_causal")
    assert row["failed"] and row["ms"] is None and "MISMATCH" in row["note"]
    assert not any(r.get("failed") for r in rows if r["impl"] != "prefill_causal")
    assert "FAILED and were not timed" in (tmp_path / "P.md").read_text()
    monkeypatch.setattr(B, "run", lambda a: rows)
    assert B.main(["--smoke", "--out", str(tmp_path / "Q.md")]) == 1


def test_a_library_that_takes_no_such_shape_fails_nothing(tmp_path, monkeypatch):
    def refuses(*args, **kwargs):
        raise RuntimeError("FlashAttention only supports head dimension of v equal to q")
    _fake_module(monkeypatch, "flash_attn", flash_attn_varlen_func=refuses)
    args = B.parse_args(["--smoke", "--out", str(tmp_path / "P.md")])
    rows = B.run(args, device=DEVICE, timer=lambda fn: 1.0, kernel_timer=lambda fn: 0.5,
                 cases=[dict(kind="expand", b=1, s_q=20, s_k=20, h=2)])
    fa2 = next(r for r in rows if r["impl"] == "fa2")
    assert not fa2.get("failed") and fa2["note"].startswith("did not run: RuntimeError: FlashAttention only")
    assert not any(r.get("failed") for r in rows)


def _fake_module(monkeypatch, name, **attrs):
    mod = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(mod, k, v)
    monkeypatch.setitem(sys.modules, name, mod)
    return mod


def test_the_libraries_adapters(monkeypatch):
    """FlashAttention 3 (varlen, bottom-right causal, lse [h, total_q]), FlashInfer (ragged, 192/128,
    lse [total_q, h] in base 2) and FlashMLA's sparse prefill (lse +inf for no key), on fakes that
    record their arguments and answer with the reference."""
    gen = torch.Generator().manual_seed(3)
    c = dict(kind="expand", b=2, s_q=6, s_k=10, h=2)
    data = B.build_expand(torch, gen, c, "cpu")
    q, k, v, cu_q, cu_k = data
    ref_o, ref_l = R.reference_prefill(q, k, v, cu_q, cu_k, B.SCALE)
    seen = {}

    def fa3(q_, k_, v_, cq, ck, mq, mk, softmax_scale=None, causal=False, return_attn_probs=False):
        seen.update(fa3=(mq, mk, softmax_scale, causal, return_attn_probs))
        return ref_o.to(q_.dtype), ref_l.float()
    _fake_module(monkeypatch, "flash_attn_interface", flash_attn_varlen_func=fa3)
    out, lse = B.fa3_fn(data, c)()
    assert seen["fa3"] == (6, 10, B.SCALE, True, True) and lse.shape == (2, 12)

    class Wrapper:
        def __init__(self, ws, layout):
            assert layout == "NHD"

        def plan(self, qo, kv, hq, hk, d_qk, head_dim_vo, causal, sm_scale, q_data_type):
            seen.update(fi=(qo.tolist(), kv.tolist(), hq, hk, d_qk, head_dim_vo, causal, sm_scale))

        def run(self, q_, k_, v_, return_lse):
            return ref_o.to(q_.dtype), (ref_l.transpose(0, 1) / math.log(2)).float()
    prefill = types.SimpleNamespace(BatchPrefillWithRaggedKVCacheWrapper=Wrapper)
    _fake_module(monkeypatch, "flashinfer", prefill=prefill)
    out, lse = B.flashinfer_fn(data, c)()
    assert seen["fi"] == ([0, 6, 12], [0, 10, 20], 2, 2, 192, 128, True, B.SCALE)
    torch.testing.assert_close(lse.double(), ref_l, rtol=1e-6, atol=1e-6)  # back in natural log, [h, total_q]

    def sparse_fwd(q_, kv_, idx_, sm_scale):
        lse = torch.tensor([[float("inf"), 1.0]])
        return torch.zeros(1, 2, 512), torch.zeros(1, 2), lse
    _fake_module(monkeypatch, "flash_mla", flash_mla_sparse_fwd=sparse_fwd)
    out, lse = B.flashmla_sparse_fn((None, None, None), None)()
    assert lse[0, 0] == float("-inf") and lse[0, 1] == 1.0


def test_sdpa_is_bottom_right_causal_for_an_extend():
    gen = torch.Generator().manual_seed(4)
    c = dict(kind="expand", b=2, s_q=5, s_k=12, h=2)
    data = B.build_expand(torch, gen, c, "cpu")
    out, lse = B.sdpa_fn(data, c)()
    ref = R.reference_prefill(*data, B.SCALE)
    assert lse is None and R.compare("sdpa out", out, ref[0], atol=1e-2, rtol=1e-2).ok


def test_the_target_line():
    case = dict(B.TARGET)

    def row(impl, tflops, note=""):
        return dict(case=case, impl=impl, tflops=tflops, note=note)
    assert "= 0.75x: met." in B.target_line([row("prefill_causal", 450.0), row("fa3", 600.0)])
    assert "NOT met." in B.target_line([row("prefill_causal", 400.0), row("fa3", 600.0)])
    assert "FlashAttention 3 was not timed (does not import" in B.target_line(
        [row("prefill_causal", 400.0), row("fa3", None, "does not import (flash_attn_3)")])
    assert "prefill_causal was not timed" in B.target_line([])


def test_the_report_with_fake_timings():
    flop = B.case_flop(B.TARGET)
    rows = [dict(case=B.TARGET, impl="prefill_causal", flop=flop, ms=8.0, kernel_ms=5.0, tflops_call=flop / 8e9,
                 tflops=flop / 5e9, check="ok: max abs 1.0e-03, cos 1.0e-06"),
            dict(case=B.TARGET, impl="fa3", flop=flop, ms=None, note="does not import (flash_attn_3)")]
    meta = dict(date="2000-01-01 00:00", gpu="FAKE GPU", driver="0", torch="t", triton="t", python="3",
                command="python kernels/bench_prefill.py --quick", on_gpu=True, libraries={"flash_attn": "2.8"})
    md = B.render_markdown(meta, rows)
    # 2,748.8 GFLOP in 8 ms of call = 343.6 TFLOPS, in 5 ms of kernels 549.8
    assert "| expand | b=1 x 8192 tokens, h=128 | prefill_causal | 2748.8 | 8.000 | 5.000 | 343.6 | 549.8 |" in md, md
    assert "| fa3 | 2748.8 | not timed |" in md and "medians on the GPU above" in md and "flash_attn 2.8" in md
