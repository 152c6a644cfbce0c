"""A tiny MLA inference engine in plain numpy (chapter 7): a paged latent cache with
prefix sharing and a prefix cache, continuous batching with chunked prefill, the path
chosen per chunk, sampling and stop conditions, preemption by recompute or swap.

  model         a small decoder with V3's structure; reference_generate: one request alone
  pages         the page pool and its allocator (share_prefix, append_slots, release, slot_mapping)
  prefix_cache  full pages found by chained block hashes, kept after their requests, LRU eviction
  radix         a model of SGLang's radix-tree cache, to compare with the engine's hashes
  scheduler     Scheduler: each step's plan under a token budget
  sampling      greedy / temperature + top-p with a per-request seed; stop conditions
  paths         the path each chunk takes: the engine's per-chunk choice, vLLM's rules, all one path
  core          Engine: requests in, tokens out; the step trace. Its decode_backend
                may be a factory of a device pool (the Triton kernel: kernels.engine_adapter; this
                package imports nothing from kernels/)
  timing        seconds from the trace: chapter 5's roofline per step, TTFT, TPOT, throughput
  workloads     seeded request streams for the chapter's measurements
"""
from .core import Chunk, Engine, Request, RequestState, Result, StepRecord  # noqa: F401
from .paths import (POLICIES, VLLM_REORDER_THRESHOLD, chunk_path, step_attention_flops,  # noqa: F401
                    step_paths)
from .model import ModelConfig, TinyModel, init_model, reference_generate  # noqa: F401
from .pages import (OutOfPages, PagePool, append_slots, longest_shared_prefix, pages_for_requests,  # noqa: F401
                    pages_needed, pages_to_append, release, share_prefix, slot_mapping)
from ..paged import paged_slack  # noqa: F401 -- wasted slots of unshared requests
from .prefix_cache import PrefixCache, block_hash, block_hashes  # noqa: F401
from .sampling import GREEDY, SamplingParams, detokenize, sample, stop_reason  # noqa: F401
from .scheduler import Scheduler  # noqa: F401
from .workloads import mix_stream, random_stream, submit, system_prompt_stream  # noqa: F401
