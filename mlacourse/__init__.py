"""The course's math core, in plain numpy (it also runs in the browser, where there is
no torch). Chapters derive these formulas inline and cross-check against this package;
the judge grades against it; the kernel tests compare with it.

Modules:
  config     model shapes (DeepSeek-V2, V3, a tiny demo config)
  rope       rotary embedding: interleaved pairs (DeepSeek), rotate-half, YaRN scale
  attention  masks, softmax attention with LSE, LSE merge, split-KV
  layer      a full MLA layer: expand path, absorb path, chunked-prefix extend
  cache      KV-cache sizes for MHA/GQA/MQA/MLA
  flops      FLOPs per path, path choice, decode bytes and arithmetic intensity
  hardware   GPU peaks and memory capacities with sources, ridge points
  paged      paged cache build/gather (FlashMLA layout), page counts and slack (the allocator: engine.pages)
  fp8        FlashMLA's 656-byte FP8 row: e4m3 + scales + bf16 rope
  sparse     DeepSeek Sparse Attention (V3.2): lightning indexer and top-k, FlashMLA's sparse
             indices, sparse decode over FP8 rows, the cost of a sparse step (chapter 8)
  prefill    the expand path's prefill (ragged, causal after a prefix), its tile schedule, the chunked
             prefix's workspace, the sparse prefill, which path wins prefill (chapter 9)
  step       the whole decode step: attention weights (187M params in V3) beside the cache
  deepseek   DeepSeek's names and layouts (reference MLA, Hugging Face), FP8 block weights
  exercises  the check behind the chapters' "what if" exercises
  diagrams   pictures drawn by matplotlib (imported on demand; the rest needs only numpy)
  schedule   the decode kernel's planner and its HBM-traffic / per-SM work model (chapter 6)
  kernel_diagrams  chapter 6's pictures of the kernel's grid, tiles and block table (on demand)
  engine     a tiny MLA inference engine: paged latent cache, continuous batching (chapter 7)
  seesaw     FlashMLA's seesaw: the register wall, its step order, a schedule model (chapter 8)
  batch_invariance  why split-KV makes a sequence's bits depend on its batch, in float32 (chapter 8)
"""
from . import attention, cache, config, deepseek, exercises, flops, fp8, hardware, layer, paged, prefill, rope, step  # noqa: F401,E501
from .config import DEEPSEEK_V2, DEEPSEEK_V3, TINY, MLAConfig  # noqa: F401


def _alt_text_in_notebooks() -> None:
    """In a notebook, figures get alt text (diagrams.notebook_alt_text); elsewhere nothing
    is imported: mlacourse itself needs only numpy."""
    import sys
    if "IPython" in sys.modules:
        from .diagrams import notebook_alt_text
        notebook_alt_text()


_alt_text_in_notebooks()
