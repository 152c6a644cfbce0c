"""The GPU check's prefill cases (chapter 9): the matrix of kernels/gpu_check.sh's "prefill" step
(run by tests/test_kernel_gpu_matrix.py::test_prefill) and the launches of the "prefill-bench" step
(`kernels/bench_prefill.py --quick`), which tests/gpu_check.py adds to its compile list, its host
timing and its budget. Imported by tests/gpu_check.py, never the other way round.

The matrix, made from kernels.mla_prefill.PREFILL_TABLE (each shape's `why` says why it is there):
  expand  every row with call="expand" (versions 1-2): fresh prompts on both sides of the GPU's
          tiles (64-key tiles, 64- and 128-query blocks; 64 and 128 are multiples of the
          interpreter's 32) with an empty sequence, one token and a long one; FlashAttention's
          varlen (seqlen_q, seqlen_k) pairs as extends after a prefix, with FlashMLA's 32 heads and
          a sequence whose first queries see no key; V3's 128 heads not causal (a prefix chunk's
          call). NaN key rows after every sequence (named by seqused_k, never read) and NaN query
          rows after the last one.
  prefix  the chunked prefix context (kernels/prefill_context.py) on every expand row: a paged
          latent cache (unused slots NaN, unused table entries out of range), prefixes on both
          sides of a chunk and one of five chunks, a sequence with no new tokens and one with no
          prefix, the workspace NaN-filled before the call.
  sparse  every row with call="sparse" (version 3), every cache it reads (bf16 rows, FP8 rows
          with power-of-two scales): FlashMLA's sparse prefill shapes (tests/test-sparse-prefill.py:
          s_q 62, h_q 128 over 592 rows and h_q 64 over 95 rows, top-k 128 -- longer than the rows
          there), -1 and other invalid entries, a duplicate, a query token without a valid index,
          rows no index names poisoned; each case with the default top-k split (several pieces and
          the combine, at 62 query tokens) and in one piece (batch_invariant=True).
Each case is checked through kernels.reference.check_against_references with the prefill
tolerance kinds ("prefill", "sparse_prefill"): at its GPU size compiled on a GPU and in emulation
on a CPU (the GPU-like reference within the GPU's tolerances of float64), shrunk (shrunk()) in
Triton's interpreter. The inputs are the kernel tests' own (tests/test_kernel_prefill*.py,
tests/test_kernel_sparse_prefill.py make_case), which hold what the matrix does not: input checks,
options, fp16, launch structure, bitwise batch invariance."""
from __future__ import annotations

from dataclasses import dataclass, replace

SCALE = 192 ** -0.5  # DeepSeek's softmax scale (d_qk = 192), the benchmark's too
GAP = 7  # NaN key rows after every expand sequence's keys (so seqused_k, not cu_seqlens_k, ends them)
Q_TAIL = 3  # NaN query rows after the last sequence (rows of no sequence: never written)


@dataclass(frozen=True)
class PrefillShape:
    name: str
    kind: str  # "expand" (mla_prefill), "prefix" (mla_prefill_with_prefix) or "sparse" (sparse_mla_prefill)
    n_q: tuple  # expand: queries per sequence; prefix: new tokens per sequence; sparse: (query tokens,)
    n_k: tuple  # expand: keys per sequence; prefix: cached tokens before the new ones; sparse: (rows,)
    h: int  # heads (sparse: h_q)
    why: str
    causal: bool = True  # expand only (the prefix is causal in its new part; the sparse prefill has no mask)
    page: int = 64  # prefix: the latent cache's page
    chunk: int = 64  # prefix: prefix tokens per sequence per iteration (chunk_tokens = b * chunk)
    topk: int = 0  # sparse: entries per query token

    @property
    def tol_kind(self) -> str:
        """kernels.reference.gpu_tolerances' kind: FlashMLA's dense (MHA) or sparse prefill figures."""
        return "sparse_prefill" if self.kind == "sparse" else "prefill"

    @property
    def chunk_tokens(self) -> int:
        return len(self.n_q) * self.chunk


EXPAND = (
    PrefillShape("fresh-ragged", "expand", (0, 1, 63, 64, 65, 127, 128, 129, 600),
                 (0, 1, 63, 64, 65, 127, 128, 129, 600), 4,
                 "fresh prompts: an empty one, one token, both sides of a 64-key tile and of a 64- and a 128-query "
                 "block, and 600 tokens (10 KV tiles: the pipeline's steady state)"),
    PrefillShape("fa-extend-h32", "expand", (1, 113, 128, 108, 40), (147, 203, 217, 256, 3), 32,
                 "FlashAttention's varlen (seqlen_q, seqlen_k) pairs as extends after a prefix (bottom-right "
                 "causal), FlashMLA's 32 heads; 40 queries over 3 keys: the first 37 see none (out 0, lse -inf)"),
    PrefillShape("v3-h128-not-causal", "expand", (2, 150, 0, 33), (300, 150, 9, 20), 128,
                 "V3's 128 heads, not causal (a prefix chunk's call: every query sees every key)", causal=False),
)
PREFIX = (
    PrefillShape("prefix-chunks", "prefix", (0, 1, 65, 7, 129, 3), (70, 63, 64, 65, 300, 0), 16,
                 "prefixes of 63, 64 and 65 tokens about a chunk boundary, one of five chunks, a sequence with no "
                 "new tokens and one with no prefix; pages of 64, one page per sequence per chunk"),
)
SPARSE = (
    PrefillShape("flashmla-h128", "sparse", (62,), (592,), 128,
                 "FlashMLA's sparse prefill shape (s_q 62, h_q 128, top-k 128 of 592 rows): 124 programs, so "
                 "the default cuts each list in two", causal=False, topk=128),
    PrefillShape("flashmla-h64-oob", "sparse", (62,), (95,), 64,
                 "FlashMLA's out-of-bounds top-k: 128 entries over 95 rows, h_q 64", causal=False, topk=128),
)
SHAPES = EXPAND + PREFIX + SPARSE
INVALID = 0.2  # the share of a sparse case's entries made invalid (-1, -7, s_kv, s_kv + 1000)


@dataclass(frozen=True)
class PrefillCase:
    version: str  # a row of PREFILL_TABLE (the prefix cases: the expand row that runs the attention)
    cache: str  # "bf16" or "fp8" (the sparse prefill's rows)
    shape: PrefillShape
    seed: int

    @property
    def id(self) -> str:
        return f"{self.version}-{self.cache}-{self.shape.name}"

    @property
    def inputs_key(self) -> tuple:
        """Cases that share this run on the same inputs (and references)."""
        return self.cache, self.shape, self.seed


def cases() -> list[PrefillCase]:
    """The matrix, from the prefill table: every shape, on every version whose call it makes and
    every cache that version reads. Ordered by input set, then version."""
    from kernels.mla_prefill import PREFILL_TABLE
    out = []
    for i, shape in enumerate(SHAPES):
        call = "sparse" if shape.kind == "sparse" else "expand"
        for cache in ("bf16", "fp8"):
            out += [PrefillCase(name, cache, shape, seed=200 + i) for name, v in PREFILL_TABLE.items()
                    if v.call == call and cache in v.caches]
    return out


SHRUNK_LEN = 150  # the interpreter's lengths: 0, 1, 63-65, 127-129 stay, a long one becomes 150
SHRUNK_TOKENS, SHRUNK_ROWS, SHRUNK_TOPK, SHRUNK_SPARSE_HEADS = 6, 200, 100, 16


def shrunk(case: PrefillCase) -> PrefillCase:
    """The case at interpreter size, the same edges: lengths capped at SHRUNK_LEN, 2 heads; the
    prefix on pages of 16 with 32 tokens per sequence per chunk (64 stays a chunk boundary); the
    sparse prefill at 6 query tokens, 16 heads, top-k 100 over at most 200 rows (an out-of-bounds
    top-k stays one, and the default still cuts each list in two)."""
    s = case.shape
    if s.kind == "sparse":
        small = replace(s, n_q=(min(s.n_q[0], SHRUNK_TOKENS),), n_k=(min(s.n_k[0], SHRUNK_ROWS),),
                        h=min(s.h, SHRUNK_SPARSE_HEADS), topk=min(s.topk, SHRUNK_TOPK))
    else:
        small = replace(s, n_q=tuple(min(n, SHRUNK_LEN) for n in s.n_q), n_k=tuple(min(n, SHRUNK_LEN) for n in s.n_k),
                        h=min(s.h, 2))
        if s.kind == "prefix":
            small = replace(small, page=16, chunk=32)
    return replace(case, shape=small)


# ---------------------------------------------------------------------------------------
# Inputs and launches
# ---------------------------------------------------------------------------------------

def _cu(lengths, gap: int = 0):
    import torch
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n + gap)
    return torch.tensor(cu, dtype=torch.int32)


def inputs(case: PrefillCase, device, contents: bool = True) -> tuple:
    """The case's tensors on `device`. contents=True: the kernel tests' (NaN-poisoned rows, random
    q, k, v, latents and weights, indices with invalid entries); False: zeros of the same shapes,
    dtypes and lengths, all a launch's specialization depends on (the compile step builds these).
      expand  q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k
      prefix  q, kv_cache, block_table, cache_seqlens, cu_seqlens_q, w_uk, w_uv
      sparse  q, kv, indices"""
    import torch
    s = case.shape
    bf16 = torch.bfloat16
    if s.kind == "expand":
        if contents:
            from tests.test_kernel_prefill import make_case
            t = make_case(list(s.n_q), list(s.n_k), h=s.h, seed=case.seed, gap=GAP, q_tail=Q_TAIL)
            return tuple(x.to(device) for x in t)
        cu_q, cu_k = _cu(s.n_q), _cu(s.n_k, GAP)
        t = (torch.zeros(int(cu_q[-1]) + Q_TAIL, s.h, 192, dtype=bf16), torch.zeros(int(cu_k[-1]), s.h, 192, dtype=bf16),
             torch.zeros(int(cu_k[-1]), s.h, 128, dtype=bf16), cu_q, cu_k, torch.tensor(s.n_k, dtype=torch.int32))
        return tuple(x.to(device) for x in t)
    if s.kind == "prefix":
        if contents:
            from tests.test_kernel_prefill_context import make_case
            return tuple(x.to(device) for x in make_case(list(s.n_q), list(s.n_k), h=s.h, page=s.page, seed=case.seed))
        lens = [a + b for a, b in zip(s.n_q, s.n_k)]
        need = [-(-n // s.page) for n in lens]  # mlacourse.paged.make_paged_cache's pages and table width
        t = (torch.zeros(sum(s.n_q), s.h, 192, dtype=bf16), torch.zeros(sum(need) + 3, s.page, 1, 576, dtype=bf16),
             torch.zeros(len(lens), max(max(need), 1), dtype=torch.int32), torch.tensor(lens, dtype=torch.int32),
             _cu(s.n_q), torch.zeros(s.h, 512, 128, dtype=bf16), torch.zeros(s.h, 512, 128, dtype=bf16))
        return tuple(x.to(device) for x in t)
    fp8 = case.cache == "fp8"
    if contents:
        from tests.test_kernel_sparse_prefill import make_case
        t = make_case(s.n_q[0], s.n_k[0], s.h, s.topk, fp8=fp8, seed=case.seed, invalid=INVALID)
        return tuple(x.to(device) for x in t)
    from kernels.dims import FP8_ROW_BYTES
    kv = torch.zeros(s.n_k[0], 1, FP8_ROW_BYTES, dtype=torch.uint8) if fp8 else torch.zeros(s.n_k[0], 1, 576, dtype=bf16)
    t = (torch.zeros(s.n_q[0], s.h, 576, dtype=bf16), kv, torch.zeros(s.n_q[0], 1, s.topk, dtype=torch.int32))
    return tuple(x.to(device) for x in t)


def variants(case: PrefillCase) -> list[tuple[str, dict]]:
    """The calls the test of a case makes, as (label, options): a sparse case with the default top-k
    split (several pieces and the combine at these token counts) and in one piece; others one call."""
    if case.shape.kind == "sparse":
        return [("top-k split", {}), ("one piece", dict(batch_invariant=True))]
    return [("", {})]


def prepare_case(case: PrefillCase, tensors, options: dict, gpu=None):
    """(launches, out, lse) of one call of the case on `tensors` (built, not run; out and lse
    allocated; the prefix's workspace allocated NaN-filled). gpu=True: the launches a GPU ships."""
    from kernels.launch import interpreting
    from kernels.mla_prefill import PREFILL_TABLE
    s = case.shape
    if s.kind == "expand":
        from kernels import mla_prefill as mp
        q, k, v, cu_q, cu_k, used = tensors
        _, launches, out, lse = mp.prepare(q, k, v, cu_q, cu_k, max(s.n_q), SCALE, s.causal, used, gpu=gpu,
                                           version=case.version, **options)
        return launches, out, lse
    if s.kind == "prefix":
        from kernels import prefill_context as pc
        q, kv, bt, sl, cu, w_uk, w_uv = tensors
        on_gpu = (not interpreting()) if gpu is None else gpu
        ws = pc.PrefixWorkspace.allocate(s.chunk_tokens, q.shape[0], s.h, pc.workspace_dtype(q, on_gpu), q.device,
                                         fill=float("nan"))
        launches, out, lse, _ = pc.prepare(q, kv, bt, sl, cu, max(s.n_q), w_uk, w_uv, SCALE, s.chunk_tokens,
                                           max_prefix=max(s.n_k), workspace=ws, gpu=gpu, version=case.version,
                                           **options)
        return launches, out, lse
    from kernels import sparse_prefill
    return sparse_prefill.prepare(*tensors, SCALE, gpu=gpu, launcher=PREFILL_TABLE[case.version].launch, **options)


def case_launches(case: PrefillCase, device="cpu", contents: bool = False) -> list:
    """The launches the test of this case makes on a GPU, every variant (built, not run;
    contents=False: on zeros of the test's shapes, which specialize the same --
    tests/test_kernel_gpu_check.py checks)."""
    t = inputs(case, device, contents=contents)
    return [lc for _, opts in variants(case) for lc in prepare_case(case, t, dict(opts), gpu=True)[0]]


# ---------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------

def operands(case: PrefillCase):
    """The type the case's version rounds its dots' operands to on a GPU (its row's dot_operands)."""
    import torch

    from kernels.mla_prefill import PREFILL_TABLE
    return PREFILL_TABLE[case.version].gpu_operands(torch.bfloat16)


def in_sequences(case: PrefillCase, out, lse):
    """out and lse without the rows of no sequence (an expand case's Q_TAIL query rows: never
    written by the kernel, 0 and -inf in the references)."""
    if case.shape.kind != "expand":
        return out, lse
    n = sum(case.shape.n_q)
    return out[:n], lse[:, :n]


def references(case: PrefillCase, tensors, machine: str = "gpu", ops=None):
    """(float64, GPU-like) references of the case, each (out, lse) on the CPU, for the rows of its
    sequences. machine "gpu": what a GPU computes and the float64 it is held to; "interpreter":
    what Triton's interpreter computes. They differ for the prefix only: on a GPU the expanded K and
    V are stored in bf16 and the float64 reference is the exact math of those (tests/
    test_kernel_prefill_context.py says why); the interpreter stores them in float32 and runs its
    dots in float32, so it is held to the exact expansion."""
    import torch

    from kernels import reference as R
    if machine not in ("gpu", "interpreter"):
        raise ValueError(f"machine must be 'gpu' or 'interpreter', got {machine!r}")
    s = case.shape
    ops = operands(case) if ops is None else ops
    cpu = tuple(t.cpu() for t in tensors)
    if s.kind == "expand":
        q, k, v, cu_q, cu_k, used = cpu
        args = (q, k, v, cu_q, cu_k, SCALE, s.causal, used)
        pair = R.reference_prefill(*args), R.reference_prefill(*args, mode="gpu", operands=ops)
    elif s.kind == "prefix":
        if machine == "gpu":
            pair = (R.reference_prefix_prefill(*cpu, SCALE, workspace_dtype=cpu[0].dtype),
                    R.reference_prefix_prefill(*cpu, SCALE, mode="gpu", operands=ops, chunk_tokens=s.chunk_tokens))
        else:
            pair = (R.reference_prefix_prefill(*cpu, SCALE),
                    R.reference_prefix_prefill(*cpu, SCALE, mode="gpu", operands=torch.float32, workspace_dtype=None,
                                               chunk_tokens=s.chunk_tokens))
    else:
        pair = R.reference_sparse_prefill(*cpu, SCALE), R.reference_sparse_prefill(*cpu, SCALE, mode="gpu",
                                                                                   operands=ops)
    return tuple(in_sequences(case, *p) for p in pair)


def v_rms(case: PrefillCase, tensors) -> float:
    """The rms of the case's V values (gpu_tolerances scales the out atol by it): v's finite rows
    (expand); c W_UV over the cache's written rows, every head (prefix); the first 512 numbers of
    the rows the indices name (sparse)."""
    import torch

    from kernels.reference import value_rms
    s = case.shape
    if s.kind == "expand":
        return value_rms(tensors[2])
    if s.kind == "prefix":
        kv, w_uv = tensors[1].cpu(), tensors[6].cpu()
        c = kv[..., :512].reshape(-1, 512).double()
        c = c[torch.isfinite(c).all(dim=1)]
        return value_rms(torch.einsum("nl,hld->hnd", c, w_uv.double()))
    from tests.test_kernel_sparse_prefill import v_rms_of
    return v_rms_of(tensors[1], tensors[2])


def work(case: PrefillCase) -> tuple[float, float]:
    """(FLOP, bytes) of the case's call on a GPU: FlashAttention's count of the attention (+ the
    expansion's 2 * 512 * h * 256 per cached token for the prefix), FlashMLA's for the sparse
    prefill; bytes each tensor moves once (the prefix: latent rows, the expanded K and V written
    and read back, q and out)."""
    from mlacourse.prefill import expanded_kv_bytes, fa_flops, prefill_attention_bytes
    s = case.shape
    if s.kind == "sparse":
        row = 656 if case.cache == "fp8" else 1152
        return 2 * s.h * s.n_q[0] * s.topk * (576 + 512), s.n_q[0] * (s.topk * row + s.h * (576 + 512) * 2)
    flop = nbytes = 0.0
    for n_q, n_k in zip(s.n_q, s.n_k):
        keys = n_k + n_q if s.kind == "prefix" else n_k
        flop += fa_flops(1, s.h, n_q, keys, 192, 128, s.causal)
        nbytes += prefill_attention_bytes(n_q, keys, s.h, 192, 128)
        if s.kind == "prefix":
            flop += 2 * 512 * s.h * (128 + 128) * keys
            nbytes += keys * 1152 + expanded_kv_bytes(keys, _config(s.h))
    return flop, nbytes


def _config(h: int):
    import dataclasses

    from mlacourse.config import DEEPSEEK_V3
    return dataclasses.replace(DEEPSEEK_V3, n_heads=h)


def host_rows() -> list[dict]:
    """For the dry run's host step: per input set at its GPU size, seconds to build the inputs and
    compute the references a GPU run's test computes (the float64 and the GPU-like one of each
    operand type its versions round to, on the CPU, as tests/test_kernel_gpu_matrix.py does)."""
    import time
    sets = {}
    for case in cases():
        first, ops = sets.setdefault(case.inputs_key, (case, []))
        if operands(case) not in ops:
            ops.append(operands(case))
    rows = []
    for case, ops in sets.values():
        t = time.perf_counter()
        tensors = inputs(case, "cpu")
        t_in = time.perf_counter() - t
        t = time.perf_counter()
        for o in ops:  # the test computes both references once per operand type (every row's is "q" today)
            references(case, tensors, "gpu", o)
        t_ref = time.perf_counter() - t
        rows.append(dict(inputs=case.id, build_s=round(t_in, 3), reference_s=round(t_ref, 3), gpu_reference_s=0.0,
                         operands=[str(o) for o in ops], bytes=sum(x.numel() * x.element_size() for x in tensors)))
        print(f"prefill {case.id:40s} build {t_in:6.2f} s  float64 and GPU-like references ({len(ops)}) {t_ref:6.2f} s",
              flush=True)
    return rows


# ---------------------------------------------------------------------------------------
# kernels/bench_prefill.py --quick: the launches its implementations of ours make
# ---------------------------------------------------------------------------------------

def bench_inputs(c: dict, device="cpu") -> tuple:
    """Stand-ins for bench_prefill.py's build_expand / build_prefix / build_sparse on one of its
    cases: the same shapes, dtypes and lengths, left uninitialized (torch.empty: the target case's
    q, k and v are 1.2 GB that no launch reads while it is only built)."""
    import torch

    from kernels import bench_prefill as B
    bf16 = torch.bfloat16
    b, s_q, s_k, h = c["b"], c["s_q"], c["s_k"], c["h"]

    def empty(*shape, dtype=bf16):
        return torch.empty(*shape, dtype=dtype, device=device)
    if c["kind"] == "expand":
        tail = 16  # build_expand's NaN key rows after the last sequence
        steps = torch.arange(b + 1, dtype=torch.int32, device=device)
        return (empty(b * s_q, h, B.D_QK), empty(b * s_k + tail, h, B.D_QK), empty(b * s_k + tail, h, B.D_V),
                steps * s_q, steps * s_k)
    if c["kind"] == "prefix":
        need = -(-s_k // B.PAGE)
        return (empty(b * s_q, h, B.D_QK), empty(b * need, B.PAGE, 1, B.D_LAT + 64),
                torch.zeros(b, need + 1, dtype=torch.int32, device=device),  # build_prefix: one more, out of range
                torch.full((b,), s_k, dtype=torch.int32, device=device),
                torch.arange(b + 1, dtype=torch.int32, device=device) * s_q,
                empty(h, B.D_LAT, 128), empty(h, B.D_LAT, B.D_V))
    return empty(s_q, h, 576), empty(s_k, 1, 576), torch.zeros(s_q, 1, c["topk"], dtype=torch.int32, device=device)


def bench_case_launches(c: dict, data: tuple, gpu: bool = True) -> list:
    """The launches bench_prefill.py's own implementations (ours_expand for every expand row of the
    table, ours_prefix, ours_sparse) make for case c on `data`, built, not run. gpu=False: as they
    do in Triton's interpreter (its --smoke run), where the prefix's chunk is a page per sequence."""
    from kernels import bench_prefill as B
    from kernels.mla_prefill import PREFILL_TABLE
    if c["kind"] == "expand":
        from kernels import mla_prefill as mp
        return [lc for name, v in PREFILL_TABLE.items() if v.call == "expand"
                for lc in mp.prepare(*data, c["s_q"], B.SCALE, True, gpu=gpu, version=name)[1]]
    if c["kind"] == "prefix":
        from kernels import prefill_context as pc
        q = data[0]
        chunk = B.CHUNK_TOKENS if gpu else B.PAGE * c["b"]
        ws = pc.PrefixWorkspace.allocate(chunk, q.shape[0], q.shape[1], pc.workspace_dtype(q, gpu), q.device)
        return pc.prepare(*data[:5], c["s_q"], *data[5:], B.SCALE, chunk, max_prefix=c["s_k"] - c["s_q"], workspace=ws,
                          gpu=gpu)[0]
    from kernels import sparse_prefill
    return sparse_prefill.prepare(*data, B.SCALE, gpu=gpu)[0]


def bench_launches(device="cpu") -> list:
    """Every launch of `kernels/bench_prefill.py --quick` on a GPU, on stand-ins of its inputs."""
    from kernels import bench_prefill as B
    return [lc for c in B.bench_cases(quick=True) for lc in bench_case_launches(c, bench_inputs(c, device))]
