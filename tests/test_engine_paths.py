"""The path policies of mlacourse.engine.paths: the engine's per-chunk choice, the rule
"prefill expands", vLLM's reorder threshold (with and without FlashMLA's uniform query
length), and top-k (sparse) FLOP counts. Expected paths are written out by hand from the
rules as vLLM's source states them, not computed with the module."""
import pytest

from mlacourse import flops
from mlacourse.engine import (POLICIES, VLLM_REORDER_THRESHOLD, Chunk, Engine, ModelConfig, chunk_path,
                              mix_stream, step_attention_flops, step_paths, submit)

V3 = flops.V3_SHAPES


def C(start, n, kind="prefill"):
    return Chunk("r", start, n, kind, "absorb")


def test_the_thresholds_are_vllms():
    assert VLLM_REORDER_THRESHOLD == {"FLASHMLA": 128, "FLASH_ATTN_MLA": 512}
    assert "threshold" in POLICIES


def test_threshold_rule_one_chunk_at_a_time():
    # decode: absorbed; a prompt with nothing cached expands however short; an extend after
    # cached context takes the decode pathway up to the threshold, expands beyond it
    cases = [(C(500, 1, "decode"), "absorb"), (C(0, 5), "expand"), (C(0, 100), "expand"),
             (C(2000, 8), "absorb"), (C(2000, 128), "absorb"), (C(2000, 129), "expand"), (C(1, 50), "absorb")]
    for chunk, want in cases:
        assert chunk_path(chunk, V3, "threshold") == want, chunk
    assert chunk_path(C(2000, 300), V3, "threshold", threshold=512) == "absorb"
    assert chunk_path(C(2000, 513), V3, "threshold", threshold=512) == "expand"
    # the simple rule expands every prefill chunk, the choice follows chapter 4's FLOP count
    assert chunk_path(C(2000, 8), V3, "rule") == "expand" and chunk_path(C(2000, 8), V3) == "absorb"
    assert chunk_path(C(0, 1000), V3) == "expand"


def test_flashmlas_uniform_query_length():
    """vLLM's split_decodes_and_prefills(require_uniform=True): the first request on the decode
    pathway sets the query length; from the first request of another length on, everything
    goes to the prefill (expanded) path."""
    step = [C(900, 1, "decode"), C(700, 1, "decode"), C(3000, 40), C(100, 0 + 1000)]
    assert step_paths(step, V3, "threshold", uniform=True) == ["absorb", "absorb", "expand", "expand"]
    assert step_paths(step, V3, "threshold") == ["absorb", "absorb", "absorb", "expand"]
    same = [C(3000, 40), C(2500, 40)]
    assert step_paths(same, V3, "threshold", uniform=True) == ["absorb", "absorb"]
    first_long = [C(3000, 40), C(900, 1, "decode"), C(800, 1, "decode")]
    assert step_paths(first_long, V3, "threshold", uniform=True) == ["absorb", "expand", "expand"]


def test_flops_follow_the_paths_and_the_choice_is_never_worse():
    eng = Engine(ModelConfig(), num_pages=4000, page_size=64, token_budget=2048, share_prefixes=False, compute=False,
                 record_tables=False, path_shapes=V3, prefill_cap=128)
    submit(eng, mix_stream("prefill-heavy", n_requests=6))
    eng.run()
    for rec in eng.trace:
        for pol, kw in (("rule", {}), ("threshold", {}), ("threshold", dict(uniform=True)),
                        ("threshold", dict(threshold=512)), ("absorb", {}), ("expand", {})):
            paths = step_paths(rec.chunks, V3, pol, **kw)
            want = sum(flops.attention_flops(c.n, c.n_ctx, **V3)[p] for c, p in zip(rec.chunks, paths))
            got = step_attention_flops(rec.chunks, V3, pol, **kw)
            assert got == want and step_attention_flops(rec.chunks, V3) <= got


def test_top_k_counts():
    # while every new token sees at most topk tokens, sparse is dense
    assert flops.attention_flops(100, 1500, **V3, topk=2048) == flops.attention_flops(100, 1500, **V3)
    # a decode token over 128K context: 2,048 pairs, and expand would up-project only 2,048 tokens
    f = flops.attention_flops(1, 131072, **V3, topk=2048)
    assert f["absorb"] == 2 * 128 * 512 * 256 + 2048 * 2 * 128 * (576 + 512)
    assert f["expand"] == 2048 * 2 * 512 * 128 * 256 + 2048 * 2 * 128 * (192 + 128)
    # the break-even fraction: at topk 2048 a chunk must be more than 1/13 of its context
    assert flops.sparse_expand_fraction(2048, **{k: V3[k] for k in ("n_heads", "d_nope", "d_rope", "d_v",
                                                                      "d_latent")}) == pytest.approx(1 / 13)
    assert flops.choose_path(2048, 13 * 2048 - 2048, **V3, topk=2048) == "expand"  # 1/12 of its context
    assert flops.choose_path(2048, 14 * 2048 + 2048, **V3, topk=2048) == "absorb"  # 1/15
    assert flops.choose_path(2048, 14 * 2048 + 2048, **V3) == "expand"  # dense: 2,048 > 171 always expands
    with pytest.raises(ValueError, match="topk"):
        flops.attention_flops(1, 10, topk=0)


def test_bad_policy_and_threshold():
    with pytest.raises(ValueError, match="policy"):
        step_paths([C(0, 5)], V3, "fastest")
    with pytest.raises(ValueError, match="threshold"):
        step_paths([C(0, 5)], V3, "threshold", threshold=0)
