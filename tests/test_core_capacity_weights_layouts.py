"""The core behind chapters 1-5's figures: GPU capacities, one source for the V3 shapes, the
whole decode step with its weights, DeepSeek's layouts, RoPE layouts and YaRN, paging, the
exercise check.

Expected values are written as the formula or as the published figure (config files, nvidia-smi
totals, papers), never read back from the code under test."""
import ast
import inspect
import math
from pathlib import Path

import numpy as np
import pytest

from mlacourse import cache, deepseek, exercises, flops, hardware, layer, paged, rope, step
from mlacourse.engine import OutOfPages, append_slots, release, share_prefix
from mlacourse.config import DEEPSEEK_V3, TINY

ROOT = Path(__file__).resolve().parent.parent


# ---- hardware: capacities and errors ----------------------------------------------------

@pytest.mark.parametrize("name,mib", [("A100", 81920), ("H100", 81559), ("H800", 81559),
                                      ("H200", 143771), ("H20", 97871), ("B200", 183359)])
def test_capacity_is_what_nvidia_smi_reports(name, mib):
    g = hardware.GPUS[name]
    assert g.hbm_bytes == mib * 1024 * 1024


def test_an_80gb_h100_is_85_5e9_bytes_not_80e9():
    assert round(hardware.GPUS["H100"].hbm_bytes / 1e9, 1) == 85.5
    assert hardware.GPUS["H100"].marketed_gb == 80


def test_fp8_peak_on_an_a100_is_a_clear_value_error():
    a100 = hardware.GPUS["A100"]
    for call in (lambda: a100.attainable_tflops(100.0, "fp8"), lambda: a100.ridge("fp8"),
                 lambda: a100.peak_tflops("fp8")):
        with pytest.raises(ValueError, match="A100 has no fp8 tensor-core peak"):
            call()
    with pytest.raises(ValueError, match="unknown precision 'int8'"):
        a100.attainable_tflops(1.0, "int8")
    with pytest.raises(ValueError, match="intensity must be"):
        a100.attainable_tflops(-1.0)


def test_attainable_accepts_arrays_and_scalars():
    g = hardware.GPUS["H800"]
    xs = np.array([1.0, 1e6])
    assert np.allclose(g.attainable_tflops(xs), [3.35, g.bf16_tflops])
    assert isinstance(g.attainable_tflops(1.0), float)


def test_tokens_that_fit():
    g = hardware.GPUS["H800"]
    assert hardware.tokens_that_fit(70_272, g) == (81559 * 2**20) // 70_272
    assert hardware.tokens_that_fit(70_272, "H800", reserved_bytes=g.hbm_bytes) == 0
    with pytest.raises(ValueError, match="unknown GPU"):
        hardware.tokens_that_fit(1, "H900")


# ---- one source of truth for the V3 shapes ---------------------------------------------------

def test_no_width_is_restated_as_a_literal_default_in_flops_or_cache():
    """The default of every width parameter must be read from DEEPSEEK_V3, not typed into the
    signature (which is how 128/64/512 were once restated in six flops signatures)."""
    width_names = {"n_heads", "d_nope", "d_rope", "d_v", "d_latent", "h_q"}
    checked = 0
    for module in (flops, cache):
        tree = ast.parse(inspect.getsource(module))
        for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
            args = fn.args.args[len(fn.args.args) - len(fn.args.defaults):]
            for arg, default in zip(args, fn.args.defaults):
                if arg.arg in width_names:
                    checked += 1
                    assert not isinstance(default, ast.Constant), \
                        f"{module.__name__}.{fn.name}: {arg.arg}={default.value} is a typed literal"
    assert checked >= 20


def test_flops_defaults_follow_deepseek_v3():
    sig = inspect.signature(flops.attention_flops).parameters
    for k, v in DEEPSEEK_V3.attention_shapes.items():
        assert sig[k].default == v == getattr(DEEPSEEK_V3, k)
    assert flops.V3_SHAPES == dict(n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512)


# ---- the whole decode step ----------------------------------------------------------------

def test_v3_attention_parameters_from_the_config():
    # inference/configs/config_671B.json: dim 7168, q_lora_rank 1536, n_heads 128,
    # qk_nope 128, qk_rope 64, v 128, kv_lora_rank 512
    by_hand = (7168 * 1536 + 1536 * 128 * 192 + 7168 * (512 + 64) + 512 * 128 * (128 + 128)
               + 128 * 128 * 7168 + 1536 + 512)
    assert step.attention_params(DEEPSEEK_V3) == by_hand == 187_107_328
    assert round(by_hand / 1e6) == 187


def test_fp8_weight_bytes_include_block_scales():
    scales = (12 * 56) + (192 * 12) + (5 * 56) + (256 * 4) + (56 * 128)  # ceil(out/128)*ceil(in/128)
    matrices = 187_107_328 - 1536 - 512
    assert step.attention_weight_bytes(DEEPSEEK_V3, "fp8") == matrices + 4 * scales + 2 * (1536 + 512)
    assert step.attention_weight_bytes(DEEPSEEK_V3, "bf16") == 2 * 187_107_328
    with pytest.raises(ValueError, match="unknown weight format"):
        step.attention_weight_bytes(DEEPSEEK_V3, "int4")


def test_weights_equal_the_latent_cache_of_about_160k_tokens_per_layer():
    """Chapter 5: one layer's FP8 weights against that layer's 1,152-byte rows (or all 61 layers'
    weights against the whole model's rows): ~162K tokens; against one token's whole-model row
    of 70,272 bytes, one layer's weights are ~2,660 tokens."""
    w = step.attention_weight_bytes(DEEPSEEK_V3)
    assert round(w / (576 * 2), -3) == 162_000 == round(61 * w / (61 * 576 * 2), -3)
    assert round(w / 70_272, -1) == 2_660


def test_core_intensity_does_not_depend_on_batch_but_the_step_does():
    core = [step.decode_step(DEEPSEEK_V3, b, 4096)["core_intensity"] for b in (1, 8, 64, 512)]
    assert max(core) - min(core) < 1e-9 * max(core)
    assert core[0] == pytest.approx(flops.decode_intensity_mla(s_k=4096))
    st = [step.decode_step(DEEPSEEK_V3, b, 4096)["step_intensity"] for b in (1, 8, 64, 512)]
    assert all(a < b for a, b in zip(st, st[1:])) and st[0] < 10 < 200 < st[-1]


def test_decode_step_bytes_by_hand():
    b, s = 4, 1000
    d = step.decode_step(DEEPSEEK_V3, b, s)
    core = b * (2 * 128 * 576 + s * 1152 + 2 * 128 * 512)
    assert d["core_bytes"] == core
    assert d["step_bytes"] == core + step.attention_weight_bytes(DEEPSEEK_V3) + b * 2 * 7168 * 2
    assert d["step_flops"] == b * 2 * 128 * s * 1088 + b * 2 * (187_107_328 - 2048)
    with pytest.raises(ValueError, match="batch"):
        step.decode_step(DEEPSEEK_V3, 0, 10)


def test_tp_reads_less_than_dp_exactly_when_the_batch_cache_is_below_the_split_weights():
    rep, split = step.replicated_and_split_weight_bytes(DEEPSEEK_V3)
    assert rep + split == step.attention_weight_bytes(DEEPSEEK_V3)
    n = 8
    for batch, ctx in [(8, 1024), (64, 32768), (8, 16384), (16, 8192)]:
        tp = step.per_gpu_step_bytes(DEEPSEEK_V3, n, "tp", batch, ctx)["total_bytes"]
        dp = step.per_gpu_step_bytes(DEEPSEEK_V3, n, "dp", batch, ctx)["total_bytes"]
        kv = batch * ctx * 1152
        assert dp - tp == pytest.approx((1 - 1 / n) * (split - kv))
    with pytest.raises(ValueError, match="must divide"):
        step.per_gpu_step_bytes(DEEPSEEK_V3, 3, "tp", 6, 10)


# ---- DeepSeek's layouts --------------------------------------------------------------------

def test_reference_forward_on_deepseek_layout_equals_mla_forward():
    rng = np.random.default_rng(0)
    w = layer.init_weights(TINY, rng)
    h = rng.standard_normal((7, TINY.d_model))
    state = deepseek.to_deepseek(TINY, w)
    assert state["wkv_b.weight"].shape == (TINY.n_heads * (TINY.d_nope + TINY.d_v), TINY.d_latent)
    y_ref, kv_cache, pe_cache = deepseek.reference_absorb_forward(TINY, state, h)
    y, c = layer.mla_forward(TINY, w, h, path="absorb")
    assert np.abs(y_ref - y).max() < 1e-12
    assert np.abs(kv_cache - c.c_kv).max() < 1e-12 and np.abs(pe_cache - c.k_rope).max() < 1e-12
    back = deepseek.from_deepseek(TINY, state)
    assert all(np.array_equal(getattr(w, f), getattr(back, f)) for f in w.__dataclass_fields__)


def test_wkv_b_rows_per_head_are_w_uk_then_w_uv():
    rng = np.random.default_rng(1)
    w = layer.init_weights(TINY, rng)
    wkv_b = deepseek.to_deepseek(TINY, w)["wkv_b.weight"].reshape(TINY.n_heads, -1, TINY.d_latent)
    assert np.array_equal(wkv_b[2, :TINY.d_nope], w.w_uk[2].T)
    assert np.array_equal(wkv_b[2, TINY.d_nope:], w.w_uv[2].T)


def test_from_deepseek_rejects_a_transposed_tensor():
    rng = np.random.default_rng(2)
    state = deepseek.to_deepseek(TINY, layer.init_weights(TINY, rng))
    state["wo.weight"] = state["wo.weight"].T
    with pytest.raises(ValueError, match=r"wo.weight has shape .* expected"):
        deepseek.from_deepseek(TINY, state)


def test_block_fp8_weights_round_trip_within_e4m3_precision():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((300, 200))
    codes, scale = deepseek.quantize_weight(w)
    assert codes.shape == (300, 200) and codes.dtype == np.uint8 and scale.shape == (3, 2)
    back = deepseek.weight_dequant(codes, scale)
    # e4m3 keeps 3 mantissa bits: relative rounding <= 2^-4 for normal values
    big = np.abs(w) > np.abs(w).max() / 64
    assert np.all(np.abs(back - w)[big] <= 2.0 ** -4 * np.abs(w)[big] + 1e-12)
    with pytest.raises(ValueError, match="scale has shape"):
        deepseek.weight_dequant(codes, scale[:2])


# ---- RoPE layouts and YaRN -------------------------------------------------------------------

def test_rotate_half_equals_interleaved_after_the_permutation():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 64))
    p = rope.interleaved_to_half(64)
    assert list(p[:3]) == [0, 2, 4] and list(p[32:35]) == [1, 3, 5]
    for pos in (0, 1, 17, 4000):
        assert np.allclose(rope.apply_rope_half(x[:, p], pos), rope.apply_rope(x, pos)[:, p], atol=1e-12)


def test_mixed_layouts_break_the_relative_position_property():
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal(64), rng.standard_normal(64)
    same = [rope.apply_rope(q, m) @ rope.apply_rope(k, m + 5) for m in (0, 50, 900)]
    mixed = [rope.apply_rope(q, m) @ rope.apply_rope_half(k, m + 5) for m in (0, 50, 900)]
    assert np.ptp(same) < 1e-9 and np.ptp(mixed) > 1e-2


def test_yarn_scale_for_v3():
    m = 0.1 * math.log(40) + 1
    assert rope.yarn_mscale(40, 1.0) == pytest.approx(m)
    assert rope.yarn_softmax_scale(192) == pytest.approx(192 ** -0.5 * m * m)
    assert rope.yarn_mscale(1.0) == 1.0
    f = rope.yarn_inv_freq(64)
    base = 10000.0 ** (-np.arange(0, 64, 2) / 64)
    assert np.allclose(f[:10], base[:10]) and np.allclose(f[-8:], base[-8:] / 40)


# ---- paging --------------------------------------------------------------------------------

def test_page_allocator_grows_without_copying_and_shares_prefixes():
    """Chapter 1's paging claims, on the one allocator (chapter 7's engine)."""
    refcount, free = [0] * 16, list(range(15, -1, -1))
    a = []
    assert append_slots(a, 0, 6, 4, refcount, free) == [] and a == [0, 1]
    first = list(a)
    append_slots(a, 6, 5, 4, refcount, free)
    assert a[:2] == first and len(free) == 13  # the old pages did not move
    b = share_prefix(a, 11, 4, refcount)  # 11 tokens: 2 full pages and the partly filled third, shared
    assert b == a and refcount[:3] == [2, 2, 2]
    copies = append_slots(b, 11, 1, 4, refcount, free)  # b writes into the shared third page: copy it first
    assert copies == [(a[2], b[2], 3)] and b[:2] == a[:2] and b[2] != a[2] and len(free) == 12
    assert release(a, refcount, free) == [2] and len(free) == 13  # only a's own page returns
    with pytest.raises(OutOfPages, match="need 250 free pages"):
        append_slots(b, 12, 1000, 4, refcount, free)
    assert len(b) == 3 and len(free) == 13  # out of pages changes nothing


def test_slack_counts():
    assert paged.paged_slack([1, 64, 65], 64) == 63 + 0 + 63
    assert paged.contiguous_slack([1, 64, 65], 128) == 127 + 64 + 63
    assert paged.pages_needed(65, 64) == 2
    with pytest.raises(ValueError, match="does not fit"):
        paged.contiguous_slack([200], 128)


# ---- the exercise check -----------------------------------------------------------------------

def test_exercise_check(capsys):
    exercises.check("x", ..., 3.0)
    assert "not attempted" in capsys.readouterr().out
    exercises.check("x", 3.0000001, 3.0)
    exercises.check("x", "Memory", "memory")
    assert capsys.readouterr().out.count("correct") == 2
    with pytest.raises(AssertionError, match="is not right"):
        exercises.check("x", 4.0, 3.0)
    with pytest.raises(AssertionError, match="expected a number"):
        exercises.check("x", [1], 3.0)


# ---- bf16 unit roundoff (chapter 3, section 3.3) -----------------------------------------------

def test_bf16_unit_roundoff_is_65536_times_float32s():
    torch = pytest.importorskip("torch")
    u_bf16 = torch.finfo(torch.bfloat16).eps / 2
    u_f32 = float(np.finfo(np.float32).eps) / 2
    assert u_bf16 == 2.0 ** -8 and u_f32 == 2.0 ** -24
    assert u_bf16 / u_f32 == 65_536
