"""Chunked prefix context: an extend's attention on the expand path when the cached prefix lives
as latents in the paged cache (chapter 9), in Triton.

  q              [total_q, h, 192]            the new tokens' queries (q_nope | q_rope), bf16 or fp16
  kv_cache       [num_blocks, page_block_size, 1, 576]   latent rows c_kv (512) | k_rope (64), q's dtype
                                              (the decode kernels' cache; the new tokens' rows already in it)
  block_table    [b, max_blocks] int32
  cache_seqlens  [b] int32                    tokens cached per sequence, the new ones included
  cu_seqlens_q   [b + 1] int32                the new tokens of sequence i: rows cu_q[i] .. cu_q[i+1] - 1;
                                              they are the last n_new_i = cu_q[i+1] - cu_q[i] of its tokens
  w_uk, w_uv     [h, 512, 128]                the up-projections (mlacourse.layer's w_uk [H, d_latent, d_nope])
  out            [total_q, h, 128]            q's dtype;  lse [h, total_q] float32, natural log

Sequence i has prefix_i = cache_seqlens[i] - n_new_i cached tokens before its new ones. Expanding
all of them at once would materialize K [prefix, h, 192] and V [prefix, h, 128]: 81,920 bytes per
token at V3's 128 heads, 10.7 GB per layer for a 128K-token prefix (mlacourse.prefill.
whole_prefix_expansion_bytes). Engines expand it a chunk at a time instead (vLLM's chunked
context); so does this module, in three kernels and one loop:

  1. _expand_kernel     gathers latent rows from the pages and multiplies them by W_UK and W_UV
                        (a K-loop over the 512 latent dims), writing per-head K (k_nope | k_rope)
                        and V into a workspace -- the new tokens' rows once, into their own region
  2. mla_prefill        (kernels/mla_prefill.py, any version of PREFILL_TABLE with call="expand"):
                        the new tokens causally among themselves, into a float32 running result;
                        then, per chunk, the new tokens against that chunk, NOT causal (the
                        prefix lies wholly in the past), into a float32 partial result
  3. _lse_merge_kernel  the running (out, lse) and the chunk's (out, lse) merged by log-sum-exp
                        (mlacourse.attention.merge_attention, pairwise; vLLM's merge_attn_states);
                        the last merge writes out and lse in their final types.

The chunks follow mlacourse.prefill.context_chunks: iteration j expands prefix tokens
j * per_seq .. (j + 1) * per_seq - 1 of every sequence at once, per_seq = chunk_tokens // b in
whole pages. The workspace -- what mlacourse.prefill.chunked_prefix_workspace(chunk_tokens,
total_q) counts, allocated once per call (or passed in, PrefixWorkspace) and bounded whatever the
prefix: K and V of chunk_tokens prefix tokens, K and V of the new tokens, and two float32 partial
outputs with their lse. At V3's shapes (h = 128) and the default chunk_tokens = 4,096, the prefix
part is 320 MiB; the rest grows with the step's new tokens, not with the prefix.

Rounding (the GPU-like reference, kernels.reference.reference_prefix_prefill, follows it): the
expansion accumulates in float32 and stores K and V in q's dtype; P is rounded to q's dtype
before P V; partial outputs and lse stay float32 through every merge; the last merge rounds out.
The number of chunks is a host number: pass max_prefix (the longest prefix) to avoid the device
sync that finding it costs."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from mlacourse.prefill import chunked_prefix_workspace, context_chunks

from . import sparse_prefill
from .dims import D_K, D_LATENT, D_ROPE, FP8_ROW_BYTES, LOG2E, check_page_block_size
from .launch import Launch, check_tile, compute_dtype, interpreting
from .mla_prefill import D_NOPE, D_QK, D_V, EXPAND_VERSIONS, MAX_GRID_YZ, PREFILL_TABLE
from .mla_prefill import prepare as prepare_prefill

DEFAULT_CHUNK_TOKENS = 4096  # prefix tokens expanded per iteration, over the whole batch
_D_LAT = tl.constexpr(D_LATENT)
_D_ROPE = tl.constexpr(D_ROPE)
_D_NOPE = tl.constexpr(D_NOPE)
_D_V = tl.constexpr(D_V)
_LOG2E = tl.constexpr(LOG2E)


@triton.jit
def _expand_kernel(kv_ptr, bt_ptr, start_ptr, count_ptr, dst_ptr, w_uk_ptr, w_uv_ptr, k_ptr, v_ptr,
                   stride_bt, stride_row, stride_kt, stride_kh, stride_vt, stride_vh,
                   PAGE: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr, DTYPE: tl.constexpr):
    """Grid (token blocks, heads, sequences). Sequence i's positions start[i] .. start[i] +
    count[i] - 1 are read from its pages and expanded into workspace rows dst[i] onwards:
    k[row, head] = c @ W_UK[head] | k_rope, v[row, head] = c @ W_UV[head]. Rows past count[i]
    are not written."""
    head = tl.program_id(1)
    seq = tl.program_id(2)
    count = tl.load(count_ptr + seq)
    t0 = tl.program_id(0) * BLOCK_T
    if t0 < count:
        t = t0 + tl.arange(0, BLOCK_T)  # [T] positions within this sequence's region
        ok = t < count
        pos = tl.load(start_ptr + seq) + t  # [T] token positions in the sequence
        page = tl.load(bt_ptr + seq.to(tl.int64) * stride_bt + pos // PAGE, mask=ok, other=0).to(tl.int64)
        rows = (page * PAGE + pos % PAGE) * stride_row  # [T] elements to each token's latent row
        w_off = head.to(tl.int64) * (_D_LAT * _D_NOPE)  # W_UK[head] and W_UV[head]: [512, 128] each
        k_acc = tl.zeros([BLOCK_T, _D_NOPE], tl.float32)
        v_acc = tl.zeros([BLOCK_T, _D_V], tl.float32)
        for kk in range(0, _D_LAT, BLOCK_K):  # the latent dims, BLOCK_K at a time
            d = kk + tl.arange(0, BLOCK_K)
            c = tl.load(kv_ptr + rows[:, None] + d[None, :], mask=ok[:, None], other=0.0).to(DTYPE)  # [T, K]
            w_k = tl.load(w_uk_ptr + w_off + d[:, None] * _D_NOPE + tl.arange(0, _D_NOPE)[None, :]).to(DTYPE)  # [K, 128]
            w_v = tl.load(w_uv_ptr + w_off + d[:, None] * _D_V + tl.arange(0, _D_V)[None, :]).to(DTYPE)
            k_acc = tl.dot(c, w_k, k_acc)
            v_acc = tl.dot(c, w_v, v_acc)
        k_rope = tl.load(kv_ptr + rows[:, None] + _D_LAT + tl.arange(0, _D_ROPE)[None, :], mask=ok[:, None])
        dst = (tl.load(dst_ptr + seq) + t).to(tl.int64)  # [T] workspace rows
        k_rows = k_ptr + dst[:, None] * stride_kt + head.to(tl.int64) * stride_kh
        tl.store(k_rows + tl.arange(0, _D_NOPE)[None, :], k_acc.to(k_ptr.dtype.element_ty), mask=ok[:, None])
        tl.store(k_rows + _D_NOPE + tl.arange(0, _D_ROPE)[None, :], k_rope, mask=ok[:, None])  # shared by heads
        tl.store(v_ptr + dst[:, None] * stride_vt + head.to(tl.int64) * stride_vh + tl.arange(0, _D_V)[None, :],
                 v_acc.to(v_ptr.dtype.element_ty), mask=ok[:, None])


@triton.jit
def _lse_merge_kernel(oa_ptr, lsea_ptr, ob_ptr, lseb_ptr, out_ptr, lse_ptr, n_rows, total_q, h,
                      BLOCK_R: tl.constexpr):
    """BLOCK_R (token, head) rows per program, row r = token * h + head of out [total_q, h, 128]
    (lse [h, total_q]): out = (w_a o_a + w_b o_b) / (w_a + w_b), w = exp(lse - max), and
    lse = max + log(w_a + w_b); a row whose two parts saw no key stays 0 and -inf. out may be a
    or b (in place: each row is read before it is written)."""
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)  # [R]
    ok = r < n_rows
    token, head = r // h, r % h
    li = head.to(tl.int64) * total_q + token  # [R] into lse [h, total_q]
    la = tl.load(lsea_ptr + li, mask=ok, other=float("-inf"))
    lb = tl.load(lseb_ptr + li, mask=ok, other=float("-inf"))
    m = tl.maximum(la, lb)
    m_safe = tl.where(m == float("-inf"), 0.0, m)
    wa = tl.exp2((la - m_safe) * _LOG2E)  # 0 for a part that saw no key
    wb = tl.exp2((lb - m_safe) * _LOG2E)
    total = wa + wb
    seen = total > 0
    t_safe = tl.where(seen, total, 1.0)
    o = r.to(tl.int64)[:, None] * _D_V + tl.arange(0, _D_V)[None, :]  # [R, 128]
    oa = tl.load(oa_ptr + o, mask=ok[:, None], other=0.0)
    ob = tl.load(ob_ptr + o, mask=ok[:, None], other=0.0)
    merged = (oa * (wa / t_safe)[:, None] + ob * (wb / t_safe)[:, None])
    tl.store(out_ptr + o, merged.to(out_ptr.dtype.element_ty), mask=ok[:, None])
    tl.store(lse_ptr + li, tl.where(seen, m_safe + tl.log2(t_safe) / _LOG2E, float("-inf")), mask=ok)


@dataclass
class PrefixWorkspace:
    """The buffers of one chunked-prefix call (mlacourse.prefill.chunked_prefix_workspace counts
    them): allocate once per step and pass to every layer's call, or let the call allocate it."""
    k_chunk: torch.Tensor  # [chunk_tokens, h, 192] q's dtype: one chunk of expanded prefix keys
    v_chunk: torch.Tensor  # [chunk_tokens, h, 128]
    k_new: torch.Tensor  # [total_q, h, 192]: the new tokens' expanded keys
    v_new: torch.Tensor  # [total_q, h, 128]
    o_run: torch.Tensor  # [total_q, h, 128] float32: the running merge
    lse_run: torch.Tensor  # [h, total_q] float32
    o_part: torch.Tensor  # [total_q, h, 128] float32: one chunk's result
    lse_part: torch.Tensor  # [h, total_q] float32

    @classmethod
    def allocate(cls, chunk_tokens: int, total_q: int, h: int, dtype, device, fill: float | None = None):
        """The buffers, uninitialized or filled with `fill` (NaN: a test that every number used is written).
        dtype: the expanded K and V's (workspace_dtype: q's on a GPU, float32 in the interpreter)."""
        def buf(*shape, dt=dtype):
            t = torch.empty(*shape, dtype=dt, device=device)
            return t.fill_(fill) if fill is not None else t
        f32 = torch.float32
        return cls(buf(chunk_tokens, h, D_QK), buf(chunk_tokens, h, D_V), buf(total_q, h, D_QK), buf(total_q, h, D_V),
                   buf(total_q, h, D_V, dt=f32), buf(h, total_q, dt=f32), buf(total_q, h, D_V, dt=f32),
                   buf(h, total_q, dt=f32))

    @property
    def chunk_tokens(self) -> int:
        return self.k_chunk.shape[0]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in vars(self).values())

    def fits(self, total_q: int, h: int, dtype) -> bool:
        """Whether it serves a call of total_q new tokens, h heads, K/V stored in dtype."""
        return (self.k_new.shape[:2] == (total_q, h) and self.k_chunk.shape[1] == h and self.k_chunk.dtype == dtype
                and self.k_new.dtype == dtype)


# What a GPU launch of the expansion ships (from sm_90 compiles, not timings): 64 tokens x 128 output
# dims x 2 accumulators over 8 warps, the latent dims 64 at a time in three stages.
EXPAND_LAUNCH = (64, 64, 8, 3)  # BLOCK_T, BLOCK_K, num_warps, num_stages
MERGE_ROWS = 16  # (token, head) rows per merge program


def workspace_dtype(q: torch.Tensor, gpu: bool) -> torch.dtype:
    """The type the expanded K and V are stored in: q's on a GPU (what vLLM stores too). In Triton's
    interpreter float32: its fp32 -> bf16 conversion truncates (kernels.reference), so a bf16
    workspace there would differ from a GPU's by up to a step of every K; a float32 one rounds
    nothing, and the interpreter's run is held to the exact math (the GPU-like reference models
    the GPU's bf16 workspace, tests/test_kernel_prefill_context.py)."""
    return q.dtype if gpu else torch.float32


def _expand_launch(label, kv_cache, block_table, start, count, dst, w_uk, w_uv, k_ws, v_ws, max_count, h, b, dtype,
                   gpu, options):
    bt, bk, warps, stages = EXPAND_LAUNCH if gpu else (32, 64, 4, 1)
    bt = options.get("expand_block_t", bt)
    check_tile("expand_block_t", bt)
    return Launch(label, _expand_kernel, (triton.cdiv(max(max_count, 1), bt), h, b),
                  dict(kv_ptr=kv_cache, bt_ptr=block_table, start_ptr=start, count_ptr=count, dst_ptr=dst,
                       w_uk_ptr=w_uk, w_uv_ptr=w_uv, k_ptr=k_ws, v_ptr=v_ws, stride_bt=block_table.stride(0),
                       stride_row=kv_cache.stride(1), stride_kt=k_ws.stride(0), stride_kh=k_ws.stride(1),
                       stride_vt=v_ws.stride(0), stride_vh=v_ws.stride(1)),
                  dict(PAGE=kv_cache.shape[1], BLOCK_T=bt, BLOCK_K=bk, DTYPE=dtype), warps, stages)


def _merge_launch(oa, lsea, ob, lseb, out, lse, total_q, h):
    n_rows = total_q * h
    return Launch("lse_merge", _lse_merge_kernel, (triton.cdiv(max(n_rows, 1), MERGE_ROWS),),
                  dict(oa_ptr=oa, lsea_ptr=lsea, ob_ptr=ob, lseb_ptr=lseb, out_ptr=out, lse_ptr=lse, n_rows=n_rows,
                       total_q=total_q, h=h), dict(BLOCK_R=MERGE_ROWS), 4)


def _check(q, kv_cache, block_table, cache_seqlens, cu_seqlens_q, w_uk, w_uv):
    if q.dim() != 3 or q.shape[2] != D_QK:
        raise ValueError(f"q must be [total_q, h, {D_QK}], got shape {tuple(q.shape)}")
    h = q.shape[1]
    if q.dtype not in (torch.bfloat16, torch.float16) or not q.is_contiguous():
        raise TypeError(f"q must be a contiguous bfloat16 or float16 tensor, got {q.dtype} strides {q.stride()}")
    if kv_cache.dim() != 4 or kv_cache.shape[2] != 1 or kv_cache.shape[3] != D_LATENT + D_ROPE \
            or kv_cache.dtype != q.dtype or not kv_cache.is_contiguous():
        raise TypeError(f"kv_cache must be contiguous [num_blocks, page_block_size, 1, {D_LATENT + D_ROPE}] in q's dtype "
                        f"{q.dtype} (latent | rope rows), got {kv_cache.dtype} {tuple(kv_cache.shape)}")
    check_page_block_size(kv_cache.shape[1])
    b = cu_seqlens_q.shape[0] - 1
    if cu_seqlens_q.dtype != torch.int32 or cu_seqlens_q.dim() != 1 or b < 0 or not cu_seqlens_q.is_contiguous():
        raise TypeError(f"cu_seqlens_q must be a contiguous int32 [b + 1], got {cu_seqlens_q.dtype} "
                        f"{tuple(cu_seqlens_q.shape)}")
    if block_table.dtype != torch.int32 or block_table.dim() != 2 or block_table.shape[0] != b \
            or block_table.stride(1) != 1:
        raise TypeError(f"block_table must be int32 [b={b}, max_blocks] with contiguous rows, got {block_table.dtype} "
                        f"{tuple(block_table.shape)}")
    if cache_seqlens.dtype != torch.int32 or tuple(cache_seqlens.shape) != (b,) or not cache_seqlens.is_contiguous():
        raise TypeError(f"cache_seqlens must be a contiguous int32 [b={b}], got {cache_seqlens.dtype} "
                        f"{tuple(cache_seqlens.shape)}")
    for name, w in (("w_uk", w_uk), ("w_uv", w_uv)):
        if tuple(w.shape) != (h, D_LATENT, D_NOPE) or w.dtype != q.dtype or not w.is_contiguous():
            raise TypeError(f"{name} must be contiguous [h={h}, {D_LATENT}, {D_NOPE}] in q's dtype {q.dtype}, got "
                            f"{w.dtype} {tuple(w.shape)}")
    if b > MAX_GRID_YZ:
        raise ValueError(f"{b} sequences exceed the launch grid's third axis ({MAX_GRID_YZ})")
    if len({t.device for t in (q, kv_cache, block_table, cache_seqlens, cu_seqlens_q, w_uk, w_uv)}) != 1:
        raise ValueError("all inputs must be on one device")


def check_prefix(cache_seqlens, cu_seqlens_q, block_table, page: int, max_seqlen_q: int, max_prefix: int) -> None:
    """What the kernels do not check (a device sync): every sequence has at least its new tokens
    cached, fits its block table, and max_seqlen_q / max_prefix bound the longest new part and prefix."""
    n_new = (cu_seqlens_q[1:] - cu_seqlens_q[:-1]).cpu().long()
    total = cache_seqlens.cpu().long()
    if bool((n_new < 0).any()):
        raise ValueError(f"cu_seqlens_q must never decrease, got {cu_seqlens_q.tolist()}")
    prefix = total - n_new
    if bool((prefix < 0).any()):
        raise ValueError(f"cache_seqlens={total.tolist()} must count each sequence's new tokens too "
                         f"({n_new.tolist()}): they are the last of its cached tokens")
    if bool((total > block_table.shape[1] * page).any()):
        raise ValueError(f"cache_seqlens={total.tolist()} exceed the block table's {block_table.shape[1]} pages of {page}")
    if n_new.numel() and int(n_new.max()) > max_seqlen_q:
        raise ValueError(f"max_seqlen_q={max_seqlen_q}, but a sequence has {int(n_new.max())} new tokens")
    if prefix.numel() and int(prefix.max()) > max_prefix:
        raise ValueError(f"max_prefix={max_prefix}, but a sequence has a prefix of {int(prefix.max())} tokens: "
                         f"its earliest tokens would never be attended to")


def prepare(q, kv_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q, w_uk, w_uv, softmax_scale=None,
            chunk_tokens=DEFAULT_CHUNK_TOKENS, max_prefix=None, workspace=None, gpu=None, **options):
    """Check the inputs and build every launch of one call without running them.
    Returns (launches, out, lse, workspace)."""
    _check(q, kv_cache, block_table, cache_seqlens, cu_seqlens_q, w_uk, w_uv)
    version = options.pop("version", "prefill_causal")
    if version not in EXPAND_VERSIONS:
        raise ValueError(f"version must be one of {EXPAND_VERSIONS} (the expand path's attention), got {version!r}")
    if not isinstance(max_seqlen_q, int) or max_seqlen_q < 0:
        raise TypeError(f"max_seqlen_q must be an int >= 0 (a host number), got {max_seqlen_q!r}")
    b = cu_seqlens_q.shape[0] - 1
    total_q, h = q.shape[:2]
    page = kv_cache.shape[1]
    n_new = cu_seqlens_q[1:] - cu_seqlens_q[:-1]  # [b] on the device
    prefix = (cache_seqlens - n_new).to(torch.int32)  # [b]
    if max_prefix is None:  # a device sync: pass max_prefix to avoid it
        max_prefix = int(prefix.max()) if b else 0
    want_check = options.pop("check_lengths", None)
    if want_check or (want_check is None and interpreting()):
        check_prefix(cache_seqlens, cu_seqlens_q, block_table, page, max_seqlen_q, max_prefix)
    per_seq, iterations = context_chunks(max(b, 1), max_prefix, chunk_tokens, page)
    gpu = (not interpreting()) if gpu is None else gpu
    dtype = compute_dtype(q, gpu)
    ws_dtype = workspace_dtype(q, gpu)
    if workspace is None:
        workspace = PrefixWorkspace.allocate(chunk_tokens, total_q, h, ws_dtype, q.device)
    elif not workspace.fits(total_q, h, ws_dtype) or workspace.chunk_tokens < chunk_tokens:
        raise ValueError(f"the workspace does not fit this call: make it with PrefixWorkspace.allocate({chunk_tokens}, "
                         f"{total_q}, {h}, {ws_dtype}, ...)")
    ws = workspace
    out = torch.empty(total_q, h, D_V, dtype=q.dtype, device=q.device)
    lse = torch.empty(h, total_q, dtype=torch.float32, device=q.device)
    attn = {k: options.pop(k) for k in ("block_m", "block_n", "num_warps", "num_stages") if k in options}
    expand_opts = {k: options.pop(k) for k in ("expand_block_t",) if k in options}
    if options:
        raise TypeError(f"unknown option(s): {sorted(options)}")
    if not b or not total_q or not max_seqlen_q:
        return [], out, lse, ws
    # 1-2: the new tokens, expanded, then causal among themselves
    launches = [_expand_launch("prefix_expand", kv_cache, block_table, prefix, n_new.to(torch.int32),
                               cu_seqlens_q[:-1], w_uk, w_uv, ws.k_new, ws.v_new, max_seqlen_q, h, b, dtype, gpu,
                               expand_opts)]
    last = iterations == 0
    new_part = prepare_prefill(q, ws.k_new, ws.v_new, cu_seqlens_q, cu_seqlens_q, max_seqlen_q, softmax_scale, True,
                               None, out if last else ws.o_run, lse if last else ws.lse_run, gpu, version=version,
                               check_lengths=False, **attn)[1]
    launches += [dataclasses.replace(lc, label=f"prefix_new {lc.label}") for lc in new_part]
    # 3: every chunk of the prefix, expanded, attended (not causal), merged into the running result
    seqs = torch.arange(b, dtype=torch.int32, device=q.device)
    dst = seqs * per_seq  # [b] sequence i's rows of the chunk workspace
    cu_k = torch.arange(b + 1, dtype=torch.int32, device=q.device) * per_seq
    for j in range(iterations):
        start = torch.full((b,), j * per_seq, dtype=torch.int32, device=q.device)
        count = (prefix - j * per_seq).clamp(0, per_seq).to(torch.int32)  # [b] this chunk's tokens per sequence
        launches.append(_expand_launch("prefix_expand", kv_cache, block_table, start, count, dst, w_uk, w_uv,
                                       ws.k_chunk, ws.v_chunk, per_seq, h, b, dtype, gpu, expand_opts))
        chunk_attention = prepare_prefill(q, ws.k_chunk, ws.v_chunk, cu_seqlens_q, cu_k, max_seqlen_q, softmax_scale,
                                          False, count, ws.o_part, ws.lse_part, gpu, version=version,
                                          check_lengths=False, **attn)[1]
        launches += [dataclasses.replace(lc, label=f"prefix_chunks {lc.label}") for lc in chunk_attention]
        last = j == iterations - 1
        launches.append(_merge_launch(ws.o_run, ws.lse_run, ws.o_part, ws.lse_part, out if last else ws.o_run,
                                      lse if last else ws.lse_run, total_q, h))
    return launches, out, lse, ws


def mla_prefill_with_prefix(q, kv_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q, w_uk, w_uv,
                            softmax_scale=None, chunk_tokens=DEFAULT_CHUNK_TOKENS, max_prefix=None, workspace=None,
                            **options):
    """The expand path's extend after a cached prefix, the prefix expanded chunk by chunk from the
    latent cache (module docstring). Returns (out [total_q, h, 128] in q's dtype, lse [h, total_q]
    float32, natural log).
      chunk_tokens   prefix tokens expanded per iteration over the whole batch (default 4,096)
      max_prefix     the longest prefix (a host number; None: found with a device sync)
      workspace      a PrefixWorkspace to reuse (None: allocated here)
      version        the attention's version (PREFILL_TABLE, call="expand"; default "prefill_causal")
      check_lengths  None: only in the interpreter; True/False
      block_m, block_n, num_warps, num_stages (the attention's), expand_block_t (the expansion's)"""
    launches, out, lse, _ = prepare(q, kv_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q, w_uk, w_uv,
                                    softmax_scale, chunk_tokens, max_prefix, workspace, **options)
    if launches and not PREFILL_TABLE[options.get("version", "prefill_causal")].runs_on(q.device):
        raise RuntimeError(f"cannot run on {q.device} here: a CUDA GPU or Triton's interpreter (TRITON_INTERPRET=1)")
    for launch in launches:
        launch()
    return out, lse


def workspace_bytes(chunk_tokens: int, total_q: int, h: int, dtype=torch.bfloat16) -> int:
    """What PrefixWorkspace.allocate takes, from mlacourse.prefill.chunked_prefix_workspace (the
    count the chapter prints; tests/test_kernel_prefill_context.py checks the two agree)."""
    from mlacourse.config import DEEPSEEK_V3
    import dataclasses
    cfg = dataclasses.replace(DEEPSEEK_V3, n_heads=h)
    return chunked_prefix_workspace(chunk_tokens, total_q, cfg, "bf16" if dtype == torch.bfloat16 else "fp16")["total"]


def prefix_example_launches() -> list:
    """The launches of a representative GPU call (gpu=True on CPU tensors: nothing runs): two
    sequences with prefixes of 200 and 90 tokens and 100 + 37 new ones, pages of 64, h = 2,
    chunk_tokens 128 (64 per sequence: four iterations). The attention's launches are labelled
    "prefix_new <version> BLOCK_M=..." (the new tokens, causal, into a float32 running result) and
    "prefix_chunks <version> BLOCK_M=..." (a chunk: not causal, seqused_k, a float32 out): each
    compiles apart from a plain call of the version. For the compile report."""
    h = 2
    q = torch.zeros(137, h, D_QK, dtype=torch.bfloat16)
    kv = torch.zeros(10, 64, 1, D_LATENT + D_ROPE, dtype=torch.bfloat16)
    bt = torch.zeros(2, 5, dtype=torch.int32)
    sl = torch.tensor([300, 127], dtype=torch.int32)
    cu = torch.tensor([0, 100, 137], dtype=torch.int32)
    w = torch.zeros(h, D_LATENT, D_NOPE, dtype=torch.bfloat16)
    return prepare(q, kv, bt, sl, cu, 100, w, w.clone(), chunk_tokens=128, max_prefix=200, gpu=True,
                   check_lengths=False)[0]


# ---------------------------------------------------------------------------------------
# What the compile report compiles for the prefill kernels (kernels/compile_report.py adds these to its
# configurations; here, above mla_prefill and sparse_prefill in the import graph)
# ---------------------------------------------------------------------------------------

PREFIX_CONFIGS = "prefix_chunks"  # `--only prefix_chunks`: the chunked prefix context's kernels


def example_launches(version, cache: str, block_m: int) -> list:
    """The launches a GPU call of this prefill version ships at this tile height, built on small CPU
    tensors shaped like a real call (gpu=True: nothing runs). Expand: two sequences, 300 queries in
    all (a total that no power of two divides, as a real batch's: lse's row stride), h = 2 (the
    heads are a grid axis: they change nothing compiled). Sparse: 200 query tokens of h_q heads
    (block_m's shape: 16, 32, or 128 heads for the 64-row tile), top-k 2048, no split."""
    if version.call == "sparse":
        h_q = {16: 16, 32: 32, 64: 128}[block_m]
        q = torch.zeros(200, h_q, D_K, dtype=torch.bfloat16)
        kv = torch.zeros(64, 1, FP8_ROW_BYTES, dtype=torch.uint8) if cache == "fp8" else \
            torch.zeros(64, 1, D_K, dtype=torch.bfloat16)
        idx = torch.zeros(200, 1, 2048, dtype=torch.int32)
        return sparse_prefill.prepare(q, kv, idx, gpu=True, launcher=version.launch, num_splits=1)[0]
    q = torch.zeros(300, 2, D_QK, dtype=torch.bfloat16)
    k = torch.zeros(700, 2, D_QK, dtype=torch.bfloat16)
    v = torch.zeros(700, 2, D_V, dtype=torch.bfloat16)
    cu_q, cu_k = torch.tensor([0, 100, 300], dtype=torch.int32), torch.tensor([0, 300, 700], dtype=torch.int32)
    return prepare_prefill(q, k, v, cu_q, cu_k, 200, gpu=True, version=version.name, check_lengths=False)[1]


def compile_configs(only: str | None = None) -> list:
    """(label, launch, version name or None) of every prefill configuration a GPU launch ships,
    labelled as the compile report labels decode's ("kernel cache tile"): each row of
    PREFILL_TABLE for each cache it reads and each BLOCK_M it ships, then the chunked prefix
    context's kernels (the expansion, the chunk attention -- not causal, seqused_k, a float32
    out: another specialization of the attention -- and the merge). only: a version's name, or
    PREFIX_CONFIGS for the chunked prefix context's."""
    out, seen = [], set()

    def add(label, launch, name):
        if label not in seen:
            seen.add(label)
            out.append((label, launch, name))
    for name, version in PREFILL_TABLE.items():
        if only and name != only:
            continue
        for cache in version.caches:
            for block_m in version.block_m:
                for launch in example_launches(version, cache, block_m):
                    kernel, *tile = launch.label.split()
                    add("combine" if kernel == "combine" else " ".join([kernel, cache] + tile), launch, name)
    if only in (None, PREFIX_CONFIGS):
        for launch in prefix_example_launches():
            kernel, *tile = launch.label.split()
            add(" ".join([kernel, "bf16"] + tile) if kernel != "lse_merge" else kernel, launch, None)
    return out
