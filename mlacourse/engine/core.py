"""The engine: requests in, tokens out, a step at a time.

Each step
  1. moves requests whose arrival step has come into the waiting queue;
  2. plans the step with its Scheduler (decodes, running prefills, admissions, under
     the token budget);
  3. gives every planned request the pages its new tokens need (append_slots, with
     copy-on-write); an admitted request first takes the pages of the longest prefix it
     shares with a running request, or -- with the prefix cache -- the cached full pages
     of its prefix, whichever covers more tokens. When the pool runs out for a running
     request, the running request that arrived last and has no pages yet this step is
     preempted: its pages are released and its tokens recomputed later (on_full=
     "preempt"), or its rows are first copied out to host memory and copied back when it
     returns (on_full="swap"); with on_full="error", OutOfPages is raised. Admissions
     never preempt: they wait, and after a preemption no request is admitted in that step
     (the preempted one comes back first);
  4. runs the model once over every planned token (one batch), attention per request
     through its block table, each chunk by the path chapter 4's FLOP count picks
     (decode always absorbs), then puts the request's newly full pages in the prefix cache;
  5. gives every request whose known tokens are now all cached its next token (greedy,
     or sampled with the request's own seed) and frees the pages of those that stop
     (a stop token, a stop string, or max_new_tokens).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from ..attention import causal_mask
from ..flops import choose_path
from ..layer import ATTEND, absorb_query, project_kv_latent, project_queries, rms_norm
from .model import ModelConfig, TinyModel, check_prompt, logits_of, mlp
from .pages import OutOfPages, PagePool, longest_shared_prefix, pages_needed
from .prefix_cache import PrefixCache, extend_block_hashes
from .sampling import GREEDY, SamplingParams, output_text, sample, stop_reason
from .scheduler import Scheduler


class RequestState(str, Enum):
    """Where a request is. Its changes are Request's methods (arrive, admit, preempt, finish),
    each refusing a change from the wrong state, so no caller spells a state by hand:

        future --arrive--> waiting --admit--> running --finish--> finished
                              ^                  |
                              +-----preempt------+   (its pages released; recomputed or swapped in later)"""
    FUTURE = "future"  # submitted, its arrival step not reached
    WAITING = "waiting"  # arrived (or preempted), holds no pages
    RUNNING = "running"  # holds pages; gets tokens each step
    FINISHED = "finished"  # stopped; its pages released

    def __str__(self):
        return self.value


@dataclass
class Request:
    rid: str
    prompt: list
    max_new_tokens: int
    arrival: int = 0  # the step at which it arrives
    order: int = 0  # submission order: breaks ties between equal arrivals
    generated: list = field(default_factory=list)
    logits: list = field(default_factory=list)  # [vocab] per generated token
    table: list = field(default_factory=list)  # block table (page ids)
    n_cached: int = 0
    state: RequestState = RequestState.FUTURE  # changed only by the methods below
    preemptions: int = 0
    shared_tokens: int = 0  # tokens taken from other requests' or cached pages, over all admissions
    cache_hit_tokens: int = 0  # of those, tokens found in the prefix cache
    computed_tokens: int = 0  # tokens run through the model for this request
    first_token_step: int | None = None
    finish_step: int | None = None
    sampling: SamplingParams = GREEDY
    rng: object = None  # the request's own numpy Generator (None when greedy)
    finish_reason: str | None = None
    block_hashes: list = field(default_factory=list)  # chained hashes of its full blocks (prefix cache)
    n_registered: int = 0  # full pages already offered to the prefix cache
    swap_n: int = 0  # cached tokens saved to host memory while swapped out
    swapped_rows: object = None  # [n_layers, swap_n, d_cache] on the host (None without rows)
    events: list = field(default_factory=list)  # [(step, phase, "admit" | "release", tokens)] for replays

    @property
    def tokens(self) -> list:
        return self.prompt + self.generated

    @property
    def n_pending(self) -> int:
        """Known tokens not yet in the cache (1 for a decode: the last token generated)."""
        return len(self.prompt) + len(self.generated) - self.n_cached

    @property
    def is_decode(self) -> bool:
        return bool(self.generated) and self.n_pending == 1

    @property
    def priority(self):
        return (self.arrival, self.order)

    # ---- state changes
    def _move(self, to: RequestState, *allowed: RequestState) -> None:
        if self.state not in allowed:
            raise RuntimeError(f"request {self.rid!r} cannot become {to} from {self.state} "
                               f"(only from {', '.join(map(str, allowed))})")
        self.state = to

    def arrive(self) -> None:
        """Its arrival step has come: it waits for pages."""
        self._move(RequestState.WAITING, RequestState.FUTURE)

    def admit(self, table: list, n_cached: int) -> None:
        """It holds pages: table, whose first n_cached tokens are already cached (shared or swapped in)."""
        self._move(RequestState.RUNNING, RequestState.WAITING)
        self.table, self.n_cached = table, n_cached

    def preempt(self) -> None:
        """Its pages were taken back: it waits again, nothing of it cached (swapped rows are kept apart)."""
        self._move(RequestState.WAITING, RequestState.RUNNING)
        self.n_cached = 0
        self.preemptions += 1

    def finish(self, step: int) -> None:
        """It stopped at this step (finish_reason says why); its pages were released."""
        self._move(RequestState.FINISHED, RequestState.RUNNING)
        self.finish_step = step


@dataclass(frozen=True)
class Chunk:
    rid: str
    start: int  # tokens cached before this chunk (its first position)
    n: int  # new tokens
    kind: str  # "prefill" (prompt or recompute, possibly a piece of one) | "decode"
    path: str  # "expand" | "absorb"

    @property
    def n_ctx(self) -> int:
        return self.start + self.n


@dataclass
class StepRecord:
    step: int
    chunks: list  # [Chunk]
    admitted: list  # [(rid, tokens shared from a running request)]
    preempted: list  # [rid]
    finished: list  # [rid]
    copies: list  # [(rid, src_page, dst_page, n_slots)] copy-on-write
    seqlens: dict  # rid -> cached tokens after the step, running requests
    tables: dict  # rid -> block table after the step (when the engine records tables)
    pages_in_use: int
    pages_cached: int = 0  # pages no request holds that keep a cached block (evictable)
    hits: list = field(default_factory=list)  # [(rid, tokens)] found in the prefix cache
    swaps: list = field(default_factory=list)  # [(rid, "out" | "in", tokens)] rows moved to/from the host
    sampled: list = field(default_factory=list)  # [rid] that got a new token this step

    @property
    def tokens(self) -> int:
        return sum(c.n for c in self.chunks)


@dataclass
class Result:
    tokens: list
    logits: np.ndarray  # [n_generated, vocab]; empty when the engine does not compute
    arrival: int
    first_token_step: int
    finish_step: int
    preemptions: int
    shared_tokens: int
    computed_tokens: int
    finish_reason: str | None = None
    text: str = ""
    cache_hit_tokens: int = 0


class Engine:
    """A tiny continuous-batching MLA engine over a paged latent cache.

    model          a TinyModel, or a ModelConfig with compute=False (schedule only)
    num_pages, page_size   the page pool (every layer has num_pages pages of page_size rows)
    token_budget   most tokens run in one step; max_running: most requests holding pages
    prefill_cap    most tokens one prefill chunk may take in a step (None: the budget left)
    on_full        what a running request that cannot grow does to the latest arrival:
                   "preempt" (release its pages, recompute its tokens later), "swap" (copy
                   its rows to host memory, back when it returns) or "error" (OutOfPages)
    share_prefixes reuse the pages of the longest prefix shared with a running request
                   (token by token; a partly shared page is copied on write)
    prefix_cache   keep full pages after their requests finish, found by chained block
                   hashes, evicted least recently used first (prefix_cache.PrefixCache)
    decode_backend "numpy" (attention through the block tables, here), or a factory that
                   decodes elsewhere: the engine calls it once, factory(n_layers=, num_pages=,
                   page_size=, d_latent=, d_rope=), and keeps what it returns as device_pool:
                   a copy of the pool told of every change (PagePool's mirror: write, copy,
                   poison) with decode(layer, q_lat [b, H, d_latent], q_rope [b, H, d_rope],
                   tables, seqlens, softmax_scale) -> (o_lat [b, H, d_latent], lse [b, H]).
                   The course's Triton kernel: kernels.engine_adapter.kernel_backend(...)
                   (this package imports nothing from kernels/)
    path_shapes    shapes that choose each prefill chunk's path (default: the model's)
    compute        False: schedule and allocate only (generated tokens are all 0)
    record_tables  keep every step's block tables in the trace (for drawing)"""

    ON_FULL = ("preempt", "swap", "error")

    def __init__(self, model, num_pages: int, page_size: int, token_budget: int, max_running: int | None = None,
                 on_full: str = "preempt", share_prefixes: bool = True, decode_backend="numpy",
                 path_shapes: dict | None = None, compute: bool = True, poison: bool = True,
                 record_tables: bool = True, prefix_cache: bool = False, prefill_cap: int | None = None):
        if on_full not in self.ON_FULL:
            raise ValueError(f"on_full must be one of {self.ON_FULL}, got {on_full!r}")
        if decode_backend != "numpy" and not callable(decode_backend):
            hint = (" (the Triton kernel: decode_backend=kernel_backend(), from kernels.engine_adapter import "
                    "kernel_backend)" if decode_backend == "kernel" else "")
            raise ValueError(f"decode_backend must be 'numpy' or a factory of a device pool, got "
                             f"{decode_backend!r}{hint}")
        if compute and not isinstance(model, TinyModel):
            raise TypeError("compute=True needs a TinyModel (init_model(...)); a ModelConfig only schedules")
        self.scheduler = Scheduler(token_budget, max_running, prefill_cap)  # checks the three limits
        self.model = model if isinstance(model, TinyModel) else None
        self.cfg: ModelConfig = model.cfg if isinstance(model, TinyModel) else model
        self.device_pool = None  # what decode_backend made: it decodes, the numpy pool keeps it in step
        if decode_backend != "numpy":
            self.device_pool = decode_backend(n_layers=self.cfg.n_layers, num_pages=num_pages, page_size=page_size,
                                              d_latent=self.cfg.attn.d_latent, d_rope=self.cfg.attn.d_rope)
        self.pool = PagePool(self.cfg.n_layers, num_pages, page_size, self.cfg.d_cache, poison=poison,
                             store_rows=compute, cache=PrefixCache(page_size) if prefix_cache else None,
                             mirror=self.device_pool)
        self.on_full = on_full
        self.share_prefixes, self.compute = share_prefixes, compute
        self.path_shapes = path_shapes or self.cfg.path_shapes()
        self.record_tables = record_tables
        self.requests: dict[str, Request] = {}
        self.trace: list[StepRecord] = []
        self.now = 0

    @property
    def token_budget(self) -> int:
        return self.scheduler.token_budget

    @property
    def max_running(self) -> int | None:
        return self.scheduler.max_running

    @property
    def prefill_cap(self) -> int | None:
        return self.scheduler.prefill_cap

    # ---- requests -------------------------------------------------------------------

    def add_request(self, prompt, max_new_tokens: int, arrival: int | None = None, rid: str | None = None,
                    sampling: SamplingParams | None = None) -> str:
        """Submit a request; it arrives at step `arrival` (default: now). `sampling` picks
        its tokens and stop conditions (default: greedy, max_new_tokens only)."""
        sampling = GREEDY if sampling is None else sampling
        if not isinstance(sampling, SamplingParams):
            raise TypeError(f"sampling must be a SamplingParams, got {type(sampling).__name__}")
        arrival = self.now if arrival is None else arrival
        if self.compute:
            prompt = check_prompt(self.model, prompt, max_new_tokens)
        else:
            prompt = [int(t) for t in prompt]
            if not prompt or max_new_tokens < 1:
                raise ValueError("a request needs at least one prompt token and max_new_tokens >= 1")
            if sampling != GREEDY:
                raise ValueError("compute=False generates placeholder tokens: sampling and stop conditions "
                                 "need compute=True (only max_new_tokens ends a request here)")
        rid = rid if rid is not None else f"r{len(self.requests)}"
        if rid in self.requests:
            raise ValueError(f"request id {rid!r} is already used")
        if arrival < self.now:
            raise ValueError(f"arrival {arrival} is in the past (the engine is at step {self.now})")
        most = len(prompt) + max_new_tokens - 1  # the last generated token is never cached
        if pages_needed(most, self.pool.page_size) > self.pool.num_pages:
            raise ValueError(f"request {rid!r} can grow to {most} cached tokens = "
                             f"{pages_needed(most, self.pool.page_size)} pages of {self.pool.page_size}, "
                             f"but the pool has only {self.pool.num_pages} pages: it could never finish")
        self.requests[rid] = Request(rid, prompt, max_new_tokens, arrival, order=len(self.requests),
                                     sampling=sampling, rng=sampling.generator())
        return rid

    def _in_state(self, state):
        return sorted((r for r in self.requests.values() if r.state is state), key=lambda r: r.priority)

    @property
    def idle(self) -> bool:
        """Nothing is running or waiting (requests may still be due to arrive)."""
        return not any(r.state in (RequestState.RUNNING, RequestState.WAITING) for r in self.requests.values())

    def _preempt(self, r: Request, swaps: list) -> None:
        r.events.append((self.now, 0, "release", r.n_cached))
        if self.on_full == "swap":  # save the rows to the host before the pages go
            r.swap_n = r.n_cached
            r.swapped_rows = self.pool.read_all_layers(r.table, r.n_cached) if self.pool.data is not None else None
            swaps.append((r.rid, "out", r.n_cached))
        self.pool.release(r.table)
        r.preempt()

    def _shared(self, r: Request, sources):
        """(source request, tokens) of the longest prefix r can take from a running request."""
        if not self.share_prefixes or not sources:
            return None, 0
        i, n = longest_shared_prefix(r.tokens, [s.tokens[:s.n_cached] for s in sources])
        n = min(n, len(r.tokens) - 1)  # compute at least one token: its logits give the next token
        return (sources[i], n) if n > 0 else (None, 0)

    def _cached(self, r: Request) -> list:
        """Pages of r's longest prefix in the prefix cache (full pages; [] without a cache)."""
        if self.pool.cache is None:
            return []
        extend_block_hashes(r.block_hashes, r.tokens, self.pool.page_size)
        return self.pool.cache.lookup(r.block_hashes, len(r.tokens))

    def _prefix(self, r: Request, sources):
        """Where an admitted request's first cached tokens come from: ("swap", None, n) for
        its own rows back from the host, ("cache", pages, n), ("live", source, n), or
        (None, None, 0). The cache wins a tie: it needs no copy."""
        if r.swap_n:
            return "swap", None, r.swap_n
        src, n_live = self._shared(r, sources)
        pages = self._cached(r)
        n_hit = len(pages) * self.pool.page_size
        if n_hit and n_hit >= n_live:
            return "cache", pages, n_hit
        if n_live:
            return "live", src, n_live
        return None, None, 0

    def _admit(self, r: Request, n: int, sources, swaps: list, hits: list):
        """Pages for an admitted request's first cached tokens and its n new ones.
        Returns (tokens not computed, copies); raises OutOfPages, changing nothing."""
        how, what, start = self._prefix(r, sources)
        if how == "cache":
            table = self.pool.take_cached(what)
        elif how == "live":
            table = self.pool.share(what.table, start)
        else:
            table = []
        try:
            cp = self.pool.append(table, 0 if how == "swap" else start, n + (start if how == "swap" else 0))
        except OutOfPages:
            self.pool.release(table)
            raise
        if how == "swap" and r.swapped_rows is not None:  # the rows come back into fresh pages
            for layer in range(self.cfg.n_layers):
                self.pool.write(layer, table, 0, r.swapped_rows[layer])
        r.admit(table, start)
        r.events.append((self.now, 1, "admit", len(r.tokens)))
        if how == "swap":
            swaps.append((r.rid, "in", start))
            r.swap_n, r.swapped_rows = 0, None
        else:
            r.shared_tokens += start
            if how == "cache":
                r.cache_hit_tokens += start
                hits.append((r.rid, start))
        return (0 if how == "swap" else start), cp

    def _register(self, r: Request) -> None:
        """Offer r's newly full pages to the prefix cache."""
        n_full = r.n_cached // self.pool.page_size
        if self.pool.cache is None or n_full <= r.n_registered:
            return
        extend_block_hashes(r.block_hashes, r.tokens, self.pool.page_size)
        self.pool.cache.register(r.block_hashes, r.table, n_full, start=r.n_registered)
        r.n_registered = n_full

    # ---- one step -------------------------------------------------------------------

    def step(self) -> StepRecord | None:
        """Run one step; None when every request has finished."""
        if self.idle:
            future = self._in_state(RequestState.FUTURE)
            if not future:
                return None
            self.now = max(self.now, min(r.arrival for r in future))  # idle until the next arrival
        for r in self._in_state(RequestState.FUTURE):
            if r.arrival <= self.now:
                r.arrive()
        running, waiting = self._in_state(RequestState.RUNNING), self._in_state(RequestState.WAITING)
        sources = list(running)  # requests whose cached pages may be shared this step
        est = {w.rid: self._prefix(w, sources)[2] for w in waiting}
        plan = self.scheduler.plan([(r.rid, r.n_pending, r.is_decode) for r in running],
                                   [(w.rid, len(w.tokens) - est[w.rid]) for w in waiting])
        planned = dict(plan)
        done, chunks, admitted, preempted, copies, swaps, hits = set(), [], [], [], [], [], []
        admissions_open = True
        for rid, n in plan:
            r = self.requests[rid]
            if rid not in planned:  # preempted earlier in this loop
                continue
            if r.state is RequestState.RUNNING:
                cp = self._grow_running(r, n, done, planned, preempted, swaps)
                if cp is None:  # r itself was preempted
                    continue
            else:
                if preempted or not admissions_open:  # pages are short: no new request this step
                    continue
                try:
                    shared, cp = self._admit(r, n, [s for s in sources if s.state is RequestState.RUNNING], swaps,
                                             hits)
                except OutOfPages:
                    admissions_open = False  # first come, first served: later arrivals wait too
                    continue
                admitted.append((rid, shared))
            done.add(rid)
            copies += [(rid,) + c for c in cp]
            kind = "decode" if r.is_decode else "prefill"
            path = "absorb" if kind == "decode" else choose_path(n, r.n_cached + n, **self.path_shapes)
            chunks.append(Chunk(rid, r.n_cached, n, kind, path))
        hidden = self._forward(chunks) if self.compute and chunks else None
        finished, sampled = [], []
        for i, c in enumerate(chunks):
            r = self.requests[c.rid]
            r.n_cached += c.n
            r.computed_tokens += c.n
            self._register(r)
            if r.n_pending == 0:  # every known token is cached: the last one's logits pick the next
                if hidden is not None:
                    z = logits_of(self.model, hidden[i])  # [vocab]
                    r.logits.append(z)
                    r.generated.append(sample(z, r.sampling, r.rng))
                else:
                    r.generated.append(0)
                sampled.append(r.rid)
                if r.first_token_step is None:
                    r.first_token_step = self.now
                r.finish_reason = stop_reason(r.generated, r.sampling, r.max_new_tokens)
                if r.finish_reason is not None:
                    r.events.append((self.now, 2, "release", r.n_cached))
                    self.pool.release(r.table)
                    r.finish(self.now)
                    finished.append(r.rid)
        live = self._in_state(RequestState.RUNNING)
        rec = StepRecord(self.now, chunks, admitted, preempted, finished, copies,
                         seqlens={r.rid: r.n_cached for r in live},
                         tables={r.rid: tuple(r.table) for r in live} if self.record_tables else {},
                         pages_in_use=self.pool.pages_in_use, pages_cached=self.pool.pages_cached,
                         hits=hits, swaps=swaps, sampled=sampled)
        self.trace.append(rec)
        self.now += 1
        return rec

    def _grow_running(self, r: Request, n: int, done: set, planned: dict, preempted: list, swaps: list):
        """Pages for n more tokens of running request r, preempting if the pool is full.
        Returns the copy-on-write copies, or None when r itself had to be preempted."""
        while True:
            try:
                return self.pool.append(r.table, r.n_cached, n)
            except OutOfPages as e:
                if self.on_full == "error":
                    raise OutOfPages(f"step {self.now}: request {r.rid!r} cannot grow: {e}. "
                                     f"Give the engine more pages, a smaller token budget or max_running, "
                                     f"or on_full='preempt' or 'swap'") from None
                victim = max((v for v in self._in_state(RequestState.RUNNING) if v.rid not in done),
                             key=lambda v: v.priority)
                self._preempt(victim, swaps)
                planned.pop(victim.rid, None)
                preempted.append(victim.rid)
                if victim is r:
                    return None

    # ---- the model over one step's tokens --------------------------------------------

    def _forward(self, chunks):
        """Run every chunk's new tokens through the model as one batch.

        Token-wise work (norms, projections, MLP) runs on all T tokens at once; attention
        runs per chunk over the request's cache, read through its block table, after the
        chunk's own rows have been written. Returns the final hidden state of each
        chunk's last token, [len(chunks), d_model]."""
        cfg, pool = self.cfg.attn, self.pool
        reqs = [self.requests[c.rid] for c in chunks]
        tok = np.concatenate([r.tokens[c.start:c.n_ctx] for r, c in zip(reqs, chunks)])  # [T]
        pos = np.concatenate([np.arange(c.start, c.n_ctx) for c in chunks])  # [T]
        ends = np.cumsum([c.n for c in chunks])
        spans = [slice(e - c.n, e) for e, c in zip(ends, chunks)]
        x = self.model.embed[tok]  # [T, d_model]
        use_kernel = [i for i, c in enumerate(chunks) if c.kind == "decode" and self.device_pool is not None]
        for layer, blk in enumerate(self.model.blocks):
            w = blk.mla
            a = rms_norm(x, blk.attn_norm)
            c_kv, k_rope = project_kv_latent(cfg, w, a, pos)  # [T, d_latent], [T, d_rope]
            rows = np.concatenate([c_kv, k_rope], axis=-1)  # [T, d_cache]
            for r, c, sl in zip(reqs, chunks, spans):
                pool.write(layer, r.table, c.start, rows[sl])  # (and the device pool, through its slot mapping)
            q_nope, q_rope = project_queries(cfg, w, a, pos)  # [T, H, d_nope], [T, H, d_rope]
            out = np.empty((len(tok), cfg.n_heads, cfg.d_v))  # [T, H, d_v]
            for i, (r, c, sl) in enumerate(zip(reqs, chunks, spans)):
                if i in use_kernel:
                    continue
                kv = pool.read(layer, r.table, c.n_ctx)  # [n_ctx, d_cache], through the block table
                out[sl], _ = ATTEND[c.path](q_nope[sl], q_rope[sl], kv[:, :cfg.d_latent], kv[:, cfg.d_latent:],
                                            w.w_uk, w.w_uv, cfg.softmax_scale, causal_mask(c.n, c.n_ctx))
            if use_kernel:
                first = [spans[i].start for i in use_kernel]
                out[first] = self._kernel_decode(layer, w, [reqs[i] for i in use_kernel],
                                                 [chunks[i] for i in use_kernel], q_nope[first], q_rope[first])
            x = x + out.reshape(len(tok), -1) @ w.w_o
            x = x + mlp(blk, rms_norm(x, blk.mlp_norm))
        return x[ends - 1]  # [n_chunks, d_model]

    def _kernel_decode(self, layer, w, reqs, chunks, q_nope, q_rope):
        """Decode rows through the device pool's decode (decode_backend): q_nope [b, H, d_nope] ->
        out [b, H, d_v]. Only the queries, block tables and lengths travel to the device."""
        q_lat = absorb_query(q_nope, w.w_uk)  # [b, H, d_latent]: the b decode rows as one S axis
        o_lat, _ = self.device_pool.decode(layer, q_lat, q_rope, [r.table for r in reqs], [c.n_ctx for c in chunks],
                                           self.cfg.attn.softmax_scale)
        return np.matmul(o_lat.transpose(1, 0, 2), w.w_uv).transpose(1, 0, 2)  # [H, b, 512] @ W_UV -> [b, H, d_v]

    # ---- running to the end ----------------------------------------------------------

    def run(self, max_steps: int = 100_000) -> dict:
        """Step until every request has finished; returns rid -> Result."""
        for _ in range(max_steps):
            if self.step() is None:
                return self.results()
        raise RuntimeError(f"not finished after {max_steps} steps")

    def cache_events(self) -> list:
        """Every admission and release of the run, in the order they happened, as
        [(step, "admit" | "release", rid, tokens)]: the request's known tokens when admitted,
        its cached tokens when released (preempted or finished). Input for radix.replay."""
        ev = [(step, phase, r.order, kind, r.rid, r.tokens[:n])
              for r in self.requests.values() for step, phase, kind, n in r.events]
        return [(step, kind, rid, toks) for step, _, _, kind, rid, toks in sorted(ev, key=lambda e: e[:3])]

    def results(self) -> dict:
        out = {}
        for rid, r in self.requests.items():
            vocab = self.cfg.vocab
            out[rid] = Result(list(r.generated), np.stack(r.logits) if r.logits else np.zeros((0, vocab)),
                              r.arrival, r.first_token_step, r.finish_step, r.preemptions, r.shared_tokens,
                              r.computed_tokens, r.finish_reason,
                              output_text(r.generated, r.sampling) if self.compute else "", r.cache_hit_tokens)
        return out
