"""The engine's decode through the course's Triton kernel, on the engine's own page pool
(mlacourse.engine.gpu). Without CUDA the kernel runs in Triton's interpreter (conftest
sets TRITON_INTERPRET=1); skipped where torch or triton is not installed."""
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from mlacourse.config import MLAConfig  # noqa: E402
from mlacourse.engine import Engine, ModelConfig, init_model, reference_generate  # noqa: E402
from mlacourse.engine.gpu import kernel_decode, kernel_unavailable_reason  # noqa: E402
from mlacourse.paged import gather_paged, make_paged_cache  # noqa: E402

# V3's cache row (512 + 64) -- what the kernel is built for -- with few heads and a small model
V3_WIDTH = ModelConfig(MLAConfig("v3-width", n_heads=4, n_layers=2, d_model=32, q_lora_rank=16,
                                 d_latent=512, d_nope=8, d_rope=64, d_v=8), vocab=64, d_ff=64)


def test_kernel_is_usable_here():
    assert kernel_unavailable_reason() is None


@pytest.mark.parametrize("page", [16, 64])
def test_kernel_decode_matches_numpy_on_a_shuffled_pool(page):
    rng = np.random.default_rng(page)
    lens = [1, 37, 70]
    seqs = [rng.standard_normal((n, 1, 576)) for n in lens]
    kv, bt, seqlens = make_paged_cache(seqs, page, rng)  # shuffled pages, NaN in unused slots
    tables = [list(bt[i, :-(-n // page)]) for i, n in enumerate(lens)]
    q = rng.standard_normal((3, 4, 576))
    scale = 192 ** -0.5
    o_lat, lse = kernel_decode(q[..., :512], q[..., 512:], kv, tables, lens, scale)
    for i in range(3):
        rows = gather_paged(kv, bt, seqlens, i)[:, 0]  # [n, 576]
        s = q[i] @ rows.T * scale  # [H, n]
        m = s.max(-1, keepdims=True)
        p = np.exp(s - m)
        want = p @ rows[:, :512] / p.sum(-1, keepdims=True)
        want_lse = np.log(p.sum(-1)) + m[:, 0]
        # fp16 operands: about 3 significant digits
        assert np.abs(o_lat[i] - want).max() < 5e-3 * max(1.0, np.abs(want).max()), i
        assert np.abs(lse[i] - want_lse).max() < 5e-3 * max(1.0, np.abs(want_lse).max()), i


def run_with_kernel(dtype, device=None):
    model = init_model(V3_WIDTH, seed=3)
    rng = np.random.default_rng(0)
    reqs = [([int(t) for t in rng.integers(0, 64, 20)], 4), ([int(t) for t in rng.integers(0, 64, 9)], 5)]
    eng = Engine(model, num_pages=8, page_size=16, token_budget=32, decode_backend="kernel",
                 kernel_options=dict(dtype=dtype, device=device))
    for p, n in reqs:
        eng.add_request(p, n)
    res = eng.run()
    assert any(c.kind == "decode" for r in eng.trace for c in r.chunks)
    for rid, (p, n) in zip(res, reqs):
        tokens, logits = reference_generate(model, p, n)
        err = np.abs(res[rid].logits - logits).max()
        top2 = np.sort(logits, axis=-1)[:, -2:]
        margin = (top2[:, 1] - top2[:, 0]).min()
        assert err < 2e-2, (rid, err)
        assert margin > 5 * err, f"{rid}: margin {margin} too close to the error {err} to compare tokens"
        assert res[rid].tokens == tokens, rid


def test_engine_decodes_through_the_kernel_fp16():
    """Same tokens as each request alone; logits to fp16 precision (the kernel reads fp16 rows)."""
    run_with_kernel("float16")


@pytest.mark.gpu
def test_engine_decodes_through_the_kernel_on_gpu_bf16():
    import torch
    assert torch.cuda.is_available()
    run_with_kernel("bfloat16", "cuda")


def test_kernel_backend_refuses_other_shapes():
    with pytest.raises(ValueError, match="power of two in 16..256"):
        Engine(init_model(V3_WIDTH, seed=0), num_pages=8, page_size=8, token_budget=8, decode_backend="kernel")
