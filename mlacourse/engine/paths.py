"""Which attention path each chunk of a step takes: the engine's own choice, and the rules
production engines follow (chapter 7, section 7.9). Plain Python.

A step is a list of Chunks (core.Chunk: start = tokens cached before it, n = new tokens,
kind "decode" or "prefill"). A policy gives every chunk "absorb" (MQA over the 576-wide
latent rows) or "expand" (multi-head attention over per-head K and V built from them):

  "chosen"     decode absorbs; a prefill chunk takes the path with fewer FLOPs
               (mlacourse.flops.choose_path, chapter 4) -- what this engine does;
  "rule"       decode absorbs, every prefill chunk expands, whatever its length and context
               (a simple description of vLLM's MLA backends that its code does not follow; a baseline);
  "threshold"  vLLM's rule as its code has it (vllm/v1/attention/backends/mla/flashmla.py and
               utils.py, vllm-project/vllm at commit 01b1d34, 2026): a request that already has
               cached tokens and runs at most `threshold` new tokens this step goes to the
               decode pathway (the absorbed kernel; "process small prefills with decode
               pathway"); a prompt with nothing cached, or a longer chunk, expands. The
               threshold is the backend's reorder_batch_threshold: 128 for FlashMLA, 512 for
               FlashAttention-MLA (VLLM_REORDER_THRESHOLD). FlashMLA's backend also needs
               one query length on its decode pathway (QueryLenSupport.UNIFORM): with
               uniform=True the first eligible chunk of the step sets the length, and from
               the first eligible chunk of another length on, every chunk expands
               (split_decodes_and_prefills with require_uniform). Which request comes first
               is vLLM's persistent-batch order; here it is the step's chunk order (decodes
               first, then prefills by arrival) -- an assumption;
  "absorb" / "expand"  every chunk that path ("absorb" is also FlashMLA's sparse prefill and
               decode, which run in MQA mode only).

topk (DeepSeek Sparse Attention): FLOPs are counted with each new token attending to its
top-k visible tokens (flops.attention_flops(..., topk)); "chosen" then compares those counts.
"""
from __future__ import annotations

from ..flops import attention_flops, choose_path

POLICIES = ("chosen", "rule", "threshold", "absorb", "expand")

# vLLM's reorder_batch_threshold per MLA backend (class attribute of the metadata builder):
# requests with at most this many new tokens and some cached context take the decode pathway.
# Source: vllm-project/vllm, vllm/v1/attention/backends/mla/flashmla.py (FlashMLAMetadataBuilder,
# 128, "process small prefills with decode pathway") and flashattn_mla.py (512), 2026.
VLLM_REORDER_THRESHOLD = {"FLASHMLA": 128, "FLASH_ATTN_MLA": 512}


def _check(policy: str, threshold: int) -> None:
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if int(threshold) != threshold or threshold < 1:
        raise ValueError(f"threshold must be a whole number of tokens >= 1, got {threshold!r}")


def _on_decode_pathway(chunk, threshold: int) -> bool:
    """vLLM's reorder rule: cached context (not a fresh prompt) and at most `threshold` new tokens."""
    return chunk.kind == "decode" or (chunk.start > 0 and chunk.n <= threshold)


def step_paths(chunks, shapes: dict, policy: str = "chosen", threshold: int = VLLM_REORDER_THRESHOLD["FLASHMLA"],
               uniform: bool = False, topk: int | None = None) -> list:
    """The path of every chunk of one step under a policy, in chunk order (module docstring).
    threshold and uniform matter only to "threshold"; topk only to "chosen"."""
    _check(policy, threshold)
    if policy in ("absorb", "expand"):
        return [policy] * len(chunks)
    if policy == "threshold":
        paths, length, open_ = [], None, True
        for c in chunks:
            if not _on_decode_pathway(c, threshold):
                paths.append("expand")
                continue
            if uniform:
                length = c.n if length is None else length
                open_ = open_ and c.n == length  # the first other length closes the decode pathway
            paths.append("absorb" if open_ else "expand")
        return paths
    return ["absorb" if c.kind == "decode" else
            "expand" if policy == "rule" else choose_path(c.n, c.n_ctx, **shapes, topk=topk) for c in chunks]


def chunk_path(chunk, shapes: dict, policy: str = "chosen", threshold: int = VLLM_REORDER_THRESHOLD["FLASHMLA"],
               topk: int | None = None) -> str:
    """The path of one chunk on its own (a step of one chunk: "threshold" without uniformity)."""
    return step_paths([chunk], shapes, policy, threshold, uniform=False, topk=topk)[0]


def step_attention_flops(chunks, shapes: dict, policy: str = "chosen",
                         threshold: int = VLLM_REORDER_THRESHOLD["FLASHMLA"], uniform: bool = False,
                         topk: int | None = None) -> int:
    """Attention FLOPs of one step's chunks (mlacourse.flops' accounting: the work that
    differs between the paths, 2 per multiply-add) under a policy; with topk, each new token
    attends to its top-k visible tokens."""
    paths = step_paths(chunks, shapes, policy, threshold, uniform, topk)
    return sum(attention_flops(c.n, c.n_ctx, **shapes, topk=topk)[p] for c, p in zip(chunks, paths))
