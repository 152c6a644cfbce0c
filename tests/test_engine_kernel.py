"""The engine's decode through the course's Triton kernel, on the engine's own page pool
(kernels.engine_adapter, handed to the engine as its decode_backend). Without CUDA the kernel
runs in Triton's interpreter (conftest sets TRITON_INTERPRET=1); skipped where torch or
triton is not installed."""
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from mlacourse.config import MLAConfig  # noqa: E402
from mlacourse.engine import Engine, ModelConfig, init_model, reference_generate  # noqa: E402
from kernels.engine_adapter import DevicePool, kernel_backend, kernel_decode, kernel_unavailable_reason  # noqa: E402
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
    eng = Engine(model, num_pages=8, page_size=16, token_budget=32,
                 decode_backend=kernel_backend(dtype=dtype, device=device))
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
        Engine(init_model(V3_WIDTH, seed=0), num_pages=8, page_size=8, token_budget=8, decode_backend=kernel_backend())


def test_kernel_options_reach_the_kernel():
    """kernel_backend(version=...) is passed to every decode: a version that cannot read the
    pool's fp16 rows is refused by the kernel's own check, naming the version."""
    eng = Engine(init_model(V3_WIDTH, seed=0), num_pages=8, page_size=64, token_budget=32,
                 decode_backend=kernel_backend(version="gluon", device="cpu"))
    eng.add_request(list(range(5)), 2)
    with pytest.raises(TypeError, match="version 'gluon' needs bfloat16"):
        eng.run()


# ---- the device pool: written through a slot mapping, never copied whole ----------------------

def run_device_pool(mutate_write=None, steps_check=True):
    """A small stream with sharing, copy-on-write and the prefix cache, decoded through the
    kernel on a CPU-device pool; after every step the device pool equals the numpy pool
    (in fp16) on every page a request holds. Returns the engine and its error vs alone."""
    import torch
    model = init_model(V3_WIDTH, seed=3)
    if mutate_write is not None:
        DevicePool.write, saved = mutate_write, DevicePool.write
    try:
        eng = Engine(model, num_pages=10, page_size=16, token_budget=48, decode_backend=kernel_backend(device="cpu"),
                     prefix_cache=True)
        rng = np.random.default_rng(1)
        system = [int(t) for t in rng.integers(0, 64, 21)]
        reqs = [(system + [1, 2], 4, 0), (system + [3], 3, 1), (system + [5, 6, 7], 3, 9)]
        for p, n, a in reqs:
            eng.add_request(p, n, arrival=a)
        sent = []
        while (rec := eng.step()) is not None:
            decodes = sum(c.kind == "decode" for c in rec.chunks)
            sent.append((eng.device_pool.bytes_to_device, rec.tokens, decodes))
            if steps_check:
                dev = eng.device_pool.rows()  # [L, pages, P, 1, 576]
                for table in rec.tables.values():
                    for p in table:
                        want = torch.from_numpy(eng.pool.data[:, p]).to(torch.float16).double().numpy()
                        live = np.isfinite(want)
                        assert np.array_equal(dev[:, p][live], want[live]), (rec.step, p)
        errs = []
        for rid, (p, n, _) in zip(eng.requests, reqs):
            tokens, logits = reference_generate(model, p, n)
            errs.append((eng.results()[rid].tokens == tokens, np.abs(eng.results()[rid].logits - logits).max()))
        return eng, sent, errs
    finally:
        if mutate_write is not None:
            DevicePool.write = saved


def test_device_pool_is_written_through_a_slot_mapping():
    eng, sent, errs = run_device_pool()
    assert all(same and err < 2e-2 for same, err in errs), errs
    assert any(r.copies for r in eng.trace) and any(r.hits for r in eng.trace)
    # per step and layer, what crosses: the new rows (576 fp16 numbers and one int64 slot each),
    # and for each decode its query (H x 576 fp16), block-table row (int32) and length -- never the pool
    L, H, max_blocks = V3_WIDTH.n_layers, V3_WIDTH.attn.n_heads, 10
    pool_bytes = eng.device_pool.kv.numel() * 2
    before = 0
    for total, tokens, decodes in sent:
        rows = L * tokens * (576 * 2 + 8)
        queries = L * decodes * H * 576 * 2
        assert rows + queries <= total - before <= rows + queries + L * decodes * (max_blocks + 1) * 4
        before = total
    assert sent[-1][0] < pool_bytes  # the whole run sent less than one copy of the pool


def test_mutation_a_slot_mapping_one_page_off_is_caught():
    def shifted(self, layer, slots, rows):
        flat = self.kv[layer].view(-1, self.d_cache)
        flat[self._to_device((np.asarray(slots) + self.page_size) % flat.shape[0])] = self._to_device(rows, self.dtype)
    with pytest.raises(AssertionError):
        run_device_pool(mutate_write=shifted)
    _, _, errs = run_device_pool(mutate_write=shifted, steps_check=False)
    assert not all(same and err < 2e-2 for same, err in errs)  # the kernel reads the wrong rows: tokens change
