"""Time, not steps: chapter 5's roofline applied to every step of an engine trace.

A step of DeepSeek-V3's attention layers (the part of the model this course builds) on
one GPU of mlacourse.hardware's table, under data-parallel attention (each GPU runs all
128 heads for its own requests and holds every attention weight):

  FLOPs  per chunk of n new tokens over n_ctx: n * (every projection but W_UK|W_UV) +
         mlacourse.flops.attention_flops(n, n_ctx)[path] (the up/absorb projections and the
         attention core of that path), per layer, times 61 layers
  bytes  the attention weights once per step (mlacourse.step.attention_weight_bytes: FP8 as
         in the checkpoint), plus per chunk what mlacourse.flops.decode_bytes counts -- the
         queries, the cached rows read, the outputs -- plus the hidden state in and out, and
         on the expand path the per-head K and V it builds (written, then read: bf16)
  time   max(compute time, bytes / bandwidth) -- the roofline, as if compute and memory
         traffic overlapped perfectly; no launch overheads, no communication, and the MoE
         layers are not counted (they run expert-parallel, with their own time). Compute
         time is FLOPs / the bf16 peak by default; gemms="fp8" charges the token-wise
         projection GEMMs (W_DQ, W_UQ, W_DKV|W_KR, W_O: FP8 weights run as FP8 GEMMs, as
         DeepSeek-V3.2-Exp's inference code does with fp8_gemm) at the FP8 peak, while the
         absorbed W_UK / W_UV products and the attention core stay at the bf16 peak (that
         code dequantizes wkv_b for the absorbed decode)
  topk   DeepSeek Sparse Attention: each new token attends to its top-k visible tokens
         (chunk_cost); the gathered rows are not shared between query tokens
For a decode chunk this is exactly mlacourse.step.decode_step's step_flops and step_bytes
(tests/test_engine_timing.py checks it): one source of truth. It is a model: a real step
is slower, so read the times as lower bounds and the ratios between them as the point.

run_timed drives an engine by the clock: requests arrive at times in seconds, every step
advances the clock by its modelled time, and each request gets its time to first token
(TTFT), its time per output token (TPOT) and its inter-token gaps. stream_throughput counts
output tokens per second two ways: over the time the GPU was busy (the sum of the step
times: what the GPU can do) and over the time from the first arrival to the last token
(what the stream got: idle gaps between arrivals count, so a light stream's figure is set
by its arrival rate, not by the GPU).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

from .. import flops, hardware
from .. import step as step_model
from ..config import DEEPSEEK_V3, MLAConfig
from .core import Chunk, RequestState
from .paths import VLLM_REORDER_THRESHOLD, step_paths


@lru_cache(maxsize=None)
def _per_token(cfg: MLAConfig) -> int:
    """FLOPs of every projection of one token except W_UK|W_UV (whose cost is in attention_flops)."""
    return step_model.projection_flops_per_token(cfg) - flops.absorb_flops_per_new_token(
        cfg.n_heads, cfg.d_nope, cfg.d_v, cfg.d_latent)


@lru_cache(maxsize=None)
def _weight_bytes(cfg: MLAConfig, weights: str) -> int:
    return step_model.attention_weight_bytes(cfg, weights)


def gemm_flops(cfg: MLAConfig, n_new: int) -> int:
    """FLOPs of the token-wise projection GEMMs of n_new tokens in ONE layer (W_DQ, W_UQ,
    W_DKV|W_KR, W_O): the part of a chunk's FLOPs that runs as FP8 GEMMs with gemms="fp8"."""
    return n_new * _per_token(cfg)


def chunk_cost(cfg: MLAConfig, n_new: int, n_ctx: int, path: str, kv_row_bytes: int | None = None,
               topk: int | None = None) -> tuple[int, int]:
    """(FLOPs, bytes) of one chunk in ONE layer, weights not included (they are read once
    per step, whatever the chunks). kv_row_bytes: one cached row (default bf16: 1152).
    topk: each new token attends to its top-k visible tokens, gathered for it alone (no two
    query tokens share a gathered row or a gathered per-head K/V -- different tokens choose
    different keys); the expand path builds K and V for min(n_ctx, n_new * topk) tokens."""
    if path not in ("absorb", "expand"):
        raise ValueError(f"path must be 'absorb' or 'expand', got {path!r}")
    shapes = cfg.attention_shapes
    row = 2 * cfg.d_cache if kv_row_bytes is None else kv_row_bytes
    f = gemm_flops(cfg, n_new) + flops.attention_flops(n_new, n_ctx, **shapes, topk=topk)[path]
    per_head_kv = cfg.n_heads * (cfg.d_qk + cfg.d_v)  # numbers of one token's expanded K|V, all heads
    if topk is not None:
        pairs = flops.sparse_causal_pairs(n_new, n_ctx, topk)
        if path == "absorb":  # each query token gathers its own top-k rows: [pairs, 576] read
            b = flops.decode_bytes(cfg.n_heads, n_new, 0, cfg.d_cache, cfg.d_latent) + pairs * row
        else:  # build K|V of the chosen tokens (rows read, bf16 written), then every pair reads its own
            built = min(n_ctx, n_new * topk)
            b = (flops.decode_bytes(cfg.n_heads, n_new, 0, cfg.d_qk, cfg.d_v) + built * (row + 2 * per_head_kv)
                 + pairs * 2 * per_head_kv)
    elif path == "absorb":  # an MQA over the 576-wide rows: q_lat|q_rope in, o_lat out
        b = flops.decode_bytes(cfg.n_heads, n_new, n_ctx, cfg.d_cache, cfg.d_latent, kv_row_bytes=row)
    else:  # ordinary MHA over per-head K [192] and V [128] built from the rows
        b = flops.decode_bytes(cfg.n_heads, n_new, n_ctx, cfg.d_qk, cfg.d_v, kv_row_bytes=row)
        built = flops.materialized_shapes("expand", n_new, n_ctx, **shapes)
        b += 2 * 2 * (math.prod(built["k per head"]) + math.prod(built["v per head"]))  # bf16, written + read
    return f, b + n_new * 2 * cfg.d_model * 2  # + the bf16 hidden state in and the layer's output out


@dataclass(frozen=True)
class StepTime:
    flops: int  # all layers
    bytes: int  # all layers, weights included
    compute_s: float  # the bf16 FLOPs at the bf16 peak + (gemms="fp8") the GEMM FLOPs at the FP8 peak
    memory_s: float

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s)

    @property
    def compute_bound(self) -> bool:
        return self.compute_s >= self.memory_s


GEMMS = ("bf16", "fp8")


def _step(costs, gpu, cfg: MLAConfig, precision: str, weights: str, gemms: str | None = None) -> StepTime:
    """StepTime from per-layer [((flops, bytes), count, gemm flops)] of a non-empty step."""
    g = hardware.get(gpu) if isinstance(gpu, str) else gpu
    gemms = precision if gemms is None else gemms
    if gemms not in GEMMS:
        raise ValueError(f"gemms must be one of {GEMMS} (or None: the precision), got {gemms!r}")
    f = sum(cf * k for (cf, _), k, _ in costs) * cfg.n_layers
    f_gemm = sum(gf * k for _, k, gf in costs) * cfg.n_layers
    b = (sum(cb * k for (_, cb), k, _ in costs) + _weight_bytes(cfg, weights)) * cfg.n_layers
    if gemms == precision:  # one peak for everything (the same float as f / peak)
        compute = f / (g.peak_tflops(precision) * 1e12)
    else:
        compute = (f - f_gemm) / (g.peak_tflops(precision) * 1e12) + f_gemm / (g.peak_tflops(gemms) * 1e12)
    return StepTime(f, b, compute, b / (g.hbm_gbps * 1e9))


def step_time(chunks, gpu="H800", cfg: MLAConfig = DEEPSEEK_V3, precision: str = "bf16", weights: str = "fp8",
              kv_row_bytes: int | None = None, policy: str | None = None,
              threshold: int = VLLM_REORDER_THRESHOLD["FLASHMLA"], uniform: bool = False,
              topk: int | None = None, gemms: str | None = None) -> StepTime:
    """The modelled time of one step of the attention layers: chunks [Chunk] (an empty step
    costs nothing: no weights are read when nothing runs). policy None keeps each chunk's
    own path; a policy of paths.POLICIES recomputes them (paths.step_paths, with threshold,
    uniform and topk). topk: sparse attention (chunk_cost). gemms: the precision of the
    projection GEMMs (None: `precision`; "fp8": FP8 GEMMs at the FP8 peak)."""
    if not chunks:
        hardware.get(gpu) if isinstance(gpu, str) else gpu  # a bad GPU name is still an error
        return StepTime(0, 0, 0.0, 0.0)
    paths = [c.path for c in chunks] if policy is None else step_paths(
        chunks, cfg.attention_shapes, policy, threshold, uniform, topk)
    count = {}
    for c, path in zip(chunks, paths):
        key = (c.n, c.n_ctx, path)
        count[key] = count.get(key, 0) + 1
    return _step([(chunk_cost(cfg, n, ctx, path, kv_row_bytes, topk), k, gemm_flops(cfg, n))
                  for (n, ctx, path), k in count.items()], gpu, cfg, precision, weights, gemms)


def decode_batch(batch: int, context: int) -> list:
    """batch decode chunks, each one new token over `context` cached (new one included)."""
    return [Chunk(f"d{i}", context - 1, 1, "decode", "absorb") for i in range(batch)]


def decode_step_time(batch: int, context: int, gpu="H800", cfg: MLAConfig = DEEPSEEK_V3, precision: str = "bf16",
                     weights: str = "fp8", kv_row_bytes: int | None = None, gemms: str | None = None) -> StepTime:
    """step_time(decode_batch(batch, context)) without building the chunks."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    return _step([(chunk_cost(cfg, 1, context, "absorb", kv_row_bytes), batch, gemm_flops(cfg, 1))],
                 gpu, cfg, precision, weights, gemms)


def decode_throughput(batch: int, context: int, gpu="H800", **kw) -> float:
    """Output tokens per second of a step of `batch` decodes at `context` (attention layers)."""
    return batch / decode_step_time(batch, context, gpu, **kw).seconds


def knee_batch(context: int, gpu="H800", max_batch: int = 1 << 16, **kw) -> int | None:
    """The smallest decode batch whose step is compute-bound (None if none up to max_batch).
    Above it, a bigger batch adds time in proportion: throughput stops growing. kw as
    decode_step_time (gemms="fp8": the projections as FP8 GEMMs -- the knee moves right or
    disappears, since compute per sequence shrinks while its bytes stay)."""
    if not decode_step_time(max_batch, context, gpu, **kw).compute_bound:
        return None
    lo, hi = 1, max_batch
    while lo < hi:  # compute-bound is monotone in the batch: the weights are shared, the rest scales
        mid = (lo + hi) // 2
        if decode_step_time(mid, context, gpu, **kw).compute_bound:
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass
class Timed:
    """Times of one request driven by run_timed (seconds)."""
    arrival: float
    first_token: float
    finish: float
    token_times: list = field(default_factory=list)  # when each generated token came out

    @property
    def ttft(self) -> float:
        return self.first_token - self.arrival

    @property
    def tpot(self) -> float:
        """Mean time per output token after the first (0 for a single token)."""
        n = len(self.token_times)
        return (self.finish - self.first_token) / (n - 1) if n > 1 else 0.0

    @property
    def gaps(self) -> list:
        return [b - a for a, b in zip(self.token_times, self.token_times[1:])]


def run_timed(engine, stream, gpu="H800", max_steps: int = 1_000_000, **kw) -> tuple[dict, list]:
    """Drive `engine` by the modelled clock.

    stream: [(rid, prompt, max_new_tokens, arrival_seconds)]. Before each step every
    request whose arrival time has come is submitted; when nothing is left to do the clock
    jumps to the next arrival; each step advances the clock by step_time (kw: cfg,
    precision, weights, kv_row_bytes, policy). The engine should be a schedule-only one
    (compute=False) with V3's path shapes, so the trace is what V3 would run.
    Returns ({rid: Timed}, [(step, start_s, StepTime)])."""
    pending = sorted(stream, key=lambda s: (s[3], s[0]))
    clock, i, steps = 0.0, 0, []
    arrival, token_times = {}, {}
    for _ in range(max_steps):
        while i < len(pending) and pending[i][3] <= clock:
            rid, prompt, max_new, at = pending[i]
            engine.add_request(prompt, max_new, arrival=engine.now, rid=rid)
            arrival[rid], token_times[rid] = at, []
            i += 1
        if all(r.state is RequestState.FINISHED for r in engine.requests.values()):
            if i == len(pending):
                break
            clock = max(clock, pending[i][3])  # idle until the next arrival
            continue
        rec = engine.step()
        t = step_time(rec.chunks, gpu, **kw)
        steps.append((rec.step, clock, t))
        clock += t.seconds
        for rid in rec.sampled:
            token_times[rid].append(clock)
    else:
        raise RuntimeError(f"not finished after {max_steps} steps")
    timed = {rid: Timed(arrival[rid], tt[0], tt[-1], tt) for rid, tt in token_times.items()}
    return timed, steps


def stream_throughput(timed: dict, steps: list) -> dict:
    """Output tokens per second of a run_timed result, counted two ways (seconds):
      busy_s     the sum of the step times: the GPU working (what it can sustain)
      span_s     from the first arrival to the end of the last step: idle gaps between
                 arrivals count (what the stream got; a light stream's figure is its
                 arrival rate, whatever the GPU)
      clock_s    the end of the last step from t = 0 (the wait for the first arrival counts too)
    and tokens, busy_tok_s, span_tok_s, clock_tok_s, utilization = busy_s / span_s."""
    if not steps or not timed:
        raise ValueError("stream_throughput needs a run with at least one step (run_timed's result)")
    tokens = sum(len(t.token_times) for t in timed.values())
    busy = sum(st.seconds for _, _, st in steps)
    end = steps[-1][1] + steps[-1][2].seconds
    span = end - min(t.arrival for t in timed.values())
    return dict(tokens=tokens, busy_s=busy, span_s=span, clock_s=end, busy_tok_s=tokens / busy,
                span_tok_s=tokens / span, clock_tok_s=tokens / end, utilization=busy / span)
