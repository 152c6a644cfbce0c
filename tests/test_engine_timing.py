"""The step-time model (mlacourse.engine.timing): one source of truth with chapter 5's
decode step, the knee, the clock of run_timed, and mutations that these checks catch."""
import pytest

from mlacourse import hardware
from mlacourse import step as step_model
from mlacourse.config import DEEPSEEK_V3 as V3
from mlacourse.engine import Chunk, Engine, ModelConfig
from mlacourse.engine import timing as timing_mod
from mlacourse.engine.timing import chunk_cost, decode_batch, decode_step_time, knee_batch, run_timed, step_time
from mlacourse.flops import V3_SHAPES

CFG = ModelConfig()


def agrees_with_chapter_5(batch, context, gpu="H800"):
    """A step of `batch` decodes is decode_step's step, times 61 layers, at the roofline."""
    d = step_model.decode_step(V3, batch, context)
    t = step_time(decode_batch(batch, context), gpu)
    g = hardware.get(gpu)
    assert t.flops == d["step_flops"] * V3.n_layers
    assert t.bytes == d["step_bytes"] * V3.n_layers
    assert t.seconds == max(t.flops / (g.bf16_tflops * 1e12), t.bytes / (g.hbm_gbps * 1e9))
    return t


@pytest.mark.parametrize("gpu", sorted(hardware.GPUS))
def test_a_decode_step_is_chapter_5s_decode_step(gpu):
    for batch, context in ((1, 1), (1, 4096), (64, 4096), (256, 32768)):
        t = agrees_with_chapter_5(batch, context, gpu)
        assert decode_step_time(batch, context, gpu) == t


def test_expand_counts_the_keys_and_values_it_builds():
    f_a, b_a = chunk_cost(V3, 512, 8192, "absorb")
    f_e, b_e = chunk_cost(V3, 512, 8192, "expand")
    built = 2 * 2 * 128 * 8192 * (192 + 128)  # K and V per head, bf16, written and read
    q_out = 2 * 512 * 128 * (192 + 128)  # expand's queries and outputs, bf16
    assert b_e == 8192 * 1152 + q_out + built + 512 * 7168 * 4
    assert f_e < f_a  # a long chunk: expand is cheaper in FLOPs (chapter 4) ...
    assert b_e > b_a  # ... and reads and writes more bytes
    with pytest.raises(ValueError, match="path"):
        chunk_cost(V3, 1, 1, "fastest")


def test_an_empty_step_costs_nothing_and_weights_are_read_once_per_step():
    assert step_time([], "H200").seconds == 0
    one, two = step_time(decode_batch(1, 4096), "H200"), step_time(decode_batch(2, 4096), "H200")
    w = step_model.attention_weight_bytes(V3) * V3.n_layers
    assert two.bytes - one.bytes == one.bytes - w  # the second sequence adds its own bytes, not the weights


def test_the_knee():
    for gpu in ("H800", "H200", "A100"):
        k = knee_batch(4096, gpu)
        assert step_time(decode_batch(k, 4096), gpu).compute_bound
        assert not step_time(decode_batch(k - 1, 4096), gpu).compute_bound
    # chapter 5: the core's 242 FLOP/byte sits below the H800's bf16 ridge (295): at long
    # contexts the cache dominates and no batch is compute-bound; the H200's ridge is 206
    assert knee_batch(32768, "H800") is None and knee_batch(32768, "H200") is not None
    with pytest.raises(ValueError, match="no fp8"):
        step_time(decode_batch(1, 16), "A100", precision="fp8")


def test_run_timed_clock():
    """One request alone: its TTFT is the sum of its prefill steps' times, its TPOT the mean of
    its decode steps'; a second request arriving later waits for the clock."""
    eng = Engine(CFG, num_pages=400, page_size=64, token_budget=512, compute=False, path_shapes=V3_SHAPES)
    timed, steps = run_timed(eng, [("a", list(range(96)) * 10, 5, 0.0), ("b", [1, 2, 3], 2, 10.0)], "H800")
    prefill = [Chunk("a", 0, 512, "prefill", "expand"), Chunk("a", 512, 448, "prefill", "expand")]
    t_prefill = sum(step_time([c], "H800").seconds for c in prefill)
    assert timed["a"].ttft == pytest.approx(t_prefill, rel=1e-12)
    decode = [step_time([Chunk("a", 960 + i, 1, "decode", "absorb")], "H800").seconds for i in range(4)]
    assert timed["a"].tpot == pytest.approx(sum(decode) / 4, rel=1e-12)
    assert timed["a"].gaps == pytest.approx(decode, rel=1e-12)
    assert steps[-2][1] == 10.0 and timed["b"].arrival == 10.0  # the clock jumped to b's arrival
    assert timed["b"].ttft == pytest.approx(step_time([Chunk("b", 0, 3, "prefill", "expand")], "H800").seconds)


def test_chunked_prefill_trades_the_long_prompts_ttft_for_the_decoders_gaps():
    def run(budget):
        eng = Engine(CFG, num_pages=4000, page_size=64, token_budget=budget, compute=False, record_tables=False,
                     path_shapes=V3_SHAPES)
        stream = [(f"d{i}", [i] * 100, 60, 0.0) for i in range(16)] + [("long", [7] * 16384, 2, 0.002)]
        timed, _ = run_timed(eng, stream, "H800")
        return max(g for i in range(16) for g in timed[f"d{i}"].gaps), timed["long"].ttft
    small, big = run(512), run(16384)
    assert small[0] < big[0] / 4  # chunks keep every decoder's gap short ...
    assert small[1] > big[1]  # ... and the long prompt's first token comes later


def test_mutation_weights_per_chunk_or_one_layer_are_caught(monkeypatch):
    real = timing_mod.chunk_cost
    monkeypatch.setattr(timing_mod, "chunk_cost", lambda cfg, n, ctx, path, row=None, topk=None: (
        real(cfg, n, ctx, path, row, topk)[0],
        real(cfg, n, ctx, path, row, topk)[1] + step_model.attention_weight_bytes(cfg)))
    with pytest.raises(AssertionError):
        agrees_with_chapter_5(64, 4096)
    monkeypatch.setattr(timing_mod, "chunk_cost", real)
    monkeypatch.setattr(timing_mod, "DEEPSEEK_V3", V3)
    real_step = timing_mod.step_time

    def one_layer(chunks, gpu="H800", cfg=V3, **kw):
        t = real_step(chunks, gpu, cfg, **kw)
        return timing_mod.StepTime(t.flops // cfg.n_layers, t.bytes // cfg.n_layers, t.compute_s / cfg.n_layers,
                                   t.memory_s / cfg.n_layers)
    monkeypatch.setattr(timing_mod, "step_time", one_layer)
    monkeypatch.setitem(globals(), "step_time", one_layer)
    with pytest.raises(AssertionError):
        agrees_with_chapter_5(64, 4096)


def test_fp8_gemms_charge_the_projections_at_the_fp8_peak():
    """gemms="fp8": W_DQ, W_UQ, W_DKV|W_KR and W_O at the FP8 peak, everything else (the
    absorbed W_UK / W_UV products, the attention core) at the bf16 peak. Counts from the
    matrix shapes of DeepSeek-V3 (d_model 7168, q_lora_rank 1536, 128 heads)."""
    g = hardware.get("H800")
    gemm = 2 * (7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 128 * 128 * 7168)  # per token, per layer
    absorb = 2 * 512 * 128 * 256  # W_UK and W_UV, applied to q and to the latent output
    core = 2 * 128 * 4096 * (576 + 512)
    t = decode_step_time(1, 4096, "H800", gemms="fp8")
    want = 61 * (gemm / (g.fp8_tflops * 1e12) + (absorb + core) / (g.bf16_tflops * 1e12))
    assert t.compute_s == pytest.approx(want, rel=1e-12) and t.flops == 61 * (gemm + absorb + core)
    assert decode_step_time(1, 4096, "H800").compute_s == pytest.approx(t.flops / (g.bf16_tflops * 1e12), rel=1e-12)
    # per sequence at 4K on an H800: compute below memory with FP8 GEMMs, above it without
    w = step_model.attention_weight_bytes(V3) * 61
    mem_seq = (decode_step_time(2, 4096, "H800").bytes - decode_step_time(1, 4096, "H800").bytes) / (g.hbm_gbps * 1e9)
    assert t.compute_s < mem_seq < decode_step_time(1, 4096, "H800").compute_s
    assert knee_batch(4096, "H800") == 1799 and knee_batch(4096, "H800", gemms="fp8") is None
    assert knee_batch(4096, "H200", gemms="fp8") > knee_batch(4096, "H200")  # the knee moves right
    with pytest.raises(ValueError, match="no fp8"):
        decode_step_time(1, 16, "A100", gemms="fp8")
    with pytest.raises(ValueError, match="gemms"):
        decode_step_time(1, 16, "H800", gemms="int4")
    assert w > 0


def test_stream_throughput_busy_span_and_clock():
    """Two requests far apart: the idle second between them counts in the span, not in the
    busy time; the wait for the first arrival counts only from t = 0."""
    eng = Engine(CFG, num_pages=400, page_size=64, token_budget=512, compute=False, path_shapes=V3_SHAPES)
    timed, steps = run_timed(eng, [("a", [1] * 100, 5, 0.5), ("b", [2] * 50, 3, 1.5)], "H800")
    th = timing_mod.stream_throughput(timed, steps)
    busy = sum(st.seconds for _, _, st in steps)
    end = steps[-1][1] + steps[-1][2].seconds
    assert th["tokens"] == 8 and th["busy_s"] == pytest.approx(busy) and th["clock_s"] == pytest.approx(end)
    assert th["span_s"] == pytest.approx(end - 0.5) and end > 1.5 > 0.5 + busy
    assert th["busy_tok_s"] == pytest.approx(8 / busy) and th["span_tok_s"] < th["busy_tok_s"]
    assert th["utilization"] == pytest.approx(busy / (end - 0.5))
    with pytest.raises(ValueError):
        timing_mod.stream_throughput({}, [])


def test_sparse_chunk_bytes_gather_per_query():
    """topk: absorb gathers each query token's own rows (656 bytes each here); expand builds
    per-head K|V for the chosen tokens and every pair reads its own K|V (no sharing)."""
    n, ctx, k = 16, 100_000, 2048
    f_a, b_a = chunk_cost(V3, n, ctx, "absorb", 656, topk=k)
    f_e, b_e = chunk_cost(V3, n, ctx, "expand", 656, topk=k)
    pairs, hidden = n * k, n * 7168 * 4
    assert b_a == 2 * 128 * n * (576 + 512) + pairs * 656 + hidden
    built = min(ctx, n * k)
    assert b_e == 2 * 128 * n * (192 + 128) + built * (656 + 2 * 128 * 320) + pairs * 2 * 128 * 320 + hidden
    assert b_e / b_a > 50 and f_a < f_e  # a short chunk after a long context: absorb wins both ways
