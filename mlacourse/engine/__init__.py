"""A tiny MLA inference engine in plain numpy (chapter 7): a paged latent cache with
prefix sharing, continuous batching with chunked prefill, and the path chosen per chunk.

  model      a small decoder with V3's structure; reference_generate: one request alone
  pages      the page pool and its allocator (share_prefix, append_slots, release)
  scheduler  schedule_step: one step's plan under a token budget
  core       Engine: requests in, greedy tokens out; the step trace; FLOP accounting
  gpu        decode through kernels.mla_decode_with_kvcache on the same pool (torch+triton)
  workloads  seeded request streams for the chapter's measurements
"""
from .core import Chunk, Engine, Request, Result, StepRecord, chunk_path, step_attention_flops  # noqa: F401
from .model import ModelConfig, TinyModel, init_model, reference_generate  # noqa: F401
from .pages import (OutOfPages, PagePool, append_slots, longest_shared_prefix, pages_for_requests,  # noqa: F401
                    pages_needed, release, share_prefix)
from ..paged import paged_slack  # noqa: F401 -- wasted slots of unshared requests
from .scheduler import schedule_step  # noqa: F401
from .workloads import mix_stream, random_stream, submit, system_prompt_stream  # noqa: F401
