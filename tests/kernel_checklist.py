"""CONTRIBUTING.md's checklist for a new kernel version, as code.

problems(name) lists what a row of kernels.mla_decode.VERSION_TABLE still lacks, one message
per gap, each starting with its step: "step 4 (kernels/BENCHMARKS.md): ...". The steps:

  1 the table row      what the row says the version reads and takes is what its launcher does
                       (every cache format, dtype, BLOCK_M, the smallest page, plan=,
                       batch_invariant=), checked by building launches (gpu=True, nothing runs)
  2 tests              where it can run here, its out and lse against the float64 and the
                       GPU-like references on a poisoned case, and the GPU-like one against
                       float64 (tests/test_kernels.py then runs it through every case)
  3 compile report     `python -m kernels.compile_report --only NAME` builds a configuration for
                       every cache and BLOCK_M, labelled with its name; BENCHMARKS.md records one
  4 BENCHMARKS.md      a row in its table of versions: "not measured yet" until a GPU run
  5 README, header     a row in kernels/README.md's table with the row's status; mla_decode.py's
                       header names it (llm.c's habit: the file says what each version changed)
  6 chapter 6          a dense version is in the chapter's VERSIONS list (the chapter asserts it)
  7 gpu_check.sh       a dense version is timed by one of its GPU bench steps

The prefill versions (kernels/mla_prefill.py's PREFILL_TABLE, a sibling table in the same style)
go through steps 1-5 the same way (prefill_problems); step 6 waits for chapter 9. Step 7 needs no
edit for them: gpu_check.sh's prefill step runs the prefill matrix (tests/gpu_check_prefill.py,
made from the table's rows) and its prefill-bench step `bench_prefill.py --quick`, which times
every row with call "expand" (tests/test_kernel_checklist.py checks both).

tests/test_kernel_checklist.py holds every real version to no problem at all, and a fake
version, registered in a fixture, to one named problem per forgotten step."""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import torch

from kernels import mla_decode as md
from kernels import sparse_decode
from kernels.compile_report import SHAPE_OF_BLOCK_M, shipped_configs
from kernels.dims import D_K, FP8_ROW_BYTES

ROOT = Path(__file__).resolve().parent.parent
# the steps' titles, as CONTRIBUTING.md's "A new kernel version" numbers and names them
STEPS = {1: "the kernel, its launcher, its row", 2: "tests", 3: "the compile report", 4: "kernels/BENCHMARKS.md",
         5: "kernels/README.md and the header", 6: "chapter 6", 7: "on a GPU"}


def _say(step: int, text: str) -> str:
    return f"step {step} ({STEPS[step]}): {text}"


@dataclass
class Docs:
    """The texts the checklist reads: the repository's (Docs.read()), or edited copies in a test."""
    readme: str  # kernels/README.md
    benchmarks: str  # kernels/BENCHMARKS.md
    header: str  # kernels/mla_decode.py's module docstring
    chapter6: str  # the code cells of notebooks/06_decode_kernel.ipynb
    gpu_check: str  # kernels/gpu_check.sh
    prefill_header: str = ""  # kernels/mla_prefill.py's module docstring (the prefill versions' header)

    @classmethod
    def read(cls) -> "Docs":
        from kernels import mla_prefill
        nb = json.loads((ROOT / "notebooks" / "06_decode_kernel.ipynb").read_text())
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        return cls((ROOT / "kernels" / "README.md").read_text(), (ROOT / "kernels" / "BENCHMARKS.md").read_text(),
                   md.__doc__, code, (ROOT / "kernels" / "gpu_check.sh").read_text(), mla_prefill.__doc__)


# ---- step 1: the row against the launcher ----------------------------------------------------

def build(v, cache: str, h_q: int = 16, page: int = 64, dtype: str = "bfloat16", **options):
    """The launches of one small call of version v (gpu=True: the GPU's configuration; nothing runs)."""
    q = torch.zeros(2, 1, h_q, D_K, dtype=getattr(torch, dtype))
    kv = torch.zeros(4, page, 1, FP8_ROW_BYTES, dtype=torch.uint8) if cache == "fp8" else \
        torch.zeros(4, page, 1, D_K, dtype=q.dtype)
    if v.call == "sparse":
        idx = torch.zeros(2, 1, 64, dtype=torch.int32)
        return sparse_decode.prepare(q, kv, idx, gpu=True, check_indices=False, launcher=v.launch, **options)[0]
    bt = torch.zeros(2, 4, dtype=torch.int32)
    sl = torch.tensor([4 * page - 5, 2 * page], dtype=torch.int32)
    if options.get("plan") is True:
        options["plan"] = v.make_plan(sl, h_q, 1)
    return md.prepare(q, kv, bt, sl, 512, is_fp8_kvcache=cache == "fp8", gpu=True, version=v.name, **options)[1]


def _refused(v, what: str, **kw) -> list[str]:
    """A problem when version v builds launches for a call its row says it does not take."""
    try:
        build(v, **kw)
    except (ValueError, TypeError):
        return []
    return [_say(1, f"its launcher builds a call with {what}, which its row says it does not take")]


def _accepted(v, what: str, **kw) -> list[str]:
    try:
        build(v, **kw)
    except ImportError:  # no Gluon in this triton: nothing to check here
        return []
    except (ValueError, TypeError, RuntimeError) as e:
        return [_say(1, f"its row says it takes {what}, its launcher refused: {type(e).__name__}: {e}")]
    return []


def table_row(v) -> list[str]:
    found = []
    if v.call not in ("dense", "sparse"):
        found.append(_say(1, f"call={v.call!r}: 'dense' (block_table) or 'sparse' (indices)"))
    if v.hopper_only and v.interpreter:
        found.append(_say(1, "hopper_only=True with interpreter=True: a Hopper-only kernel has no CPU interpreter"))
    if v.dot_operands not in ("q", "float32"):
        found.append(_say(1, f"dot_operands={v.dot_operands!r}: 'q' (its dots round K, V, P to q's dtype) or "
                             f"'float32' (no rounding): the GPU-like reference rounds where it says"))
    if [w.number for w in md.VERSION_TABLE.values()].count(v.number) > 1:
        found.append(_say(1, f"number {v.number} is another version's too"))
    if not set(v.caches) <= {"bf16", "fp8"} or not v.caches or not set(v.block_m) <= set(SHAPE_OF_BLOCK_M):
        found.append(_say(1, f"caches={v.caches} (of 'bf16', 'fp8') and block_m={v.block_m} (of "
                             f"{sorted(SHAPE_OF_BLOCK_M)}) must name what a GPU launch ships"))
        return found
    page, dtype = max(64, v.min_page), v.dtypes[0]
    for cache in v.caches:
        built = {}  # h_q -> the BLOCK_M of its first launch (1: no row tile, one program per row)
        for h_q in sorted({h for _, h in SHAPE_OF_BLOCK_M.values()}):
            try:
                launches = build(v, cache, h_q=h_q, page=page, dtype=dtype)
            except ImportError:
                break
            except (ValueError, TypeError, RuntimeError) as e:
                found.append(_say(1, f"its row says it reads {cache} caches, its launcher refused one: "
                                     f"{type(e).__name__}: {e}"))
                break
            built[h_q] = launches[0].block_shape[0] or 1
        for h_q, bm in built.items():
            if bm not in v.block_m:
                found.append(_say(1, f"at h_q={h_q} ({cache}) its launcher builds BLOCK_M={bm}, not in its row's "
                                     f"block_m={v.block_m}"))
        if built and set(v.block_m) - set(built.values()):
            found.append(_say(1, f"its row's block_m={v.block_m} has {sorted(set(v.block_m) - set(built.values()))}, "
                                 f"which no call builds ({cache})"))
    for cache in {"bf16", "fp8"} - set(v.caches):
        found += _refused(v, f"{cache} cache rows", cache=cache, page=page, dtype=dtype)
    cache = v.caches[0]
    for dt in ("bfloat16", "float16"):
        found += (_accepted if dt in v.dtypes else _refused)(v, f"{dt} q", cache=cache, page=page, dtype=dt)
    smallest = max(v.min_page, 16) if v.call == "dense" else v.min_page  # the dense call's pages start at 16
    found += _accepted(v, f"pages of {smallest}", cache=cache, page=smallest, dtype=dtype)
    below = smallest // 2 if v.call == "dense" else smallest - 1
    if below >= (16 if v.call == "dense" else 1):
        found += _refused(v, f"pages of {below} (min_page={v.min_page})", cache=cache, page=below, dtype=dtype)
    if v.call == "dense":
        found += (_accepted if v.takes_plan else _refused)(v, "plan=", cache=cache, page=page, dtype=dtype, plan=True)
    found += (_accepted if v.batch_invariant else _refused)(v, "batch_invariant=True", cache=cache, page=page,
                                                           dtype=dtype, batch_invariant=True)
    return found


# ---- step 2: against the float64 reference -----------------------------------------------------

def against_reference(v) -> list[str]:
    """One poisoned case per cache format (NaN in unused slots, out-of-range table entries, an
    empty sequence, causal rows that see no key) where the version runs here, against both
    references (kernels.reference.check_against_references: the GPU-like one within the GPU's
    tolerances of float64, the kernel within this machine's of both)."""
    from kernels.reference import check_against_references, reference_sparse_decode
    from tests.test_kernels import DEVICE, V_RMS, make_case, references
    if not v.runs_on(DEVICE):
        return []  # a Hopper-only version: tests/test_kernels.py runs it on a Hopper GPU
    found = []
    for cache in v.caches:
        fp8 = cache == "fp8"
        try:
            if v.call == "dense":
                q, kv, bt, sl = make_case([0, 5, 70], page=max(16, v.min_page), s_q=2,
                                          h_q=2 if v.block_m == (1,) else 4, fp8=fp8, seed=7)
                out, lse = md.mla_decode_with_kvcache(q, kv, bt, sl, 512, causal=True, is_fp8_kvcache=fp8,
                                                      version=v.name)
                ref64, ref_gpu = references(q, kv, bt, sl, fp8, True, None, v.name)
                v_rms = V_RMS
            else:
                from tests.test_kernel_sparse import case_v_rms, served_case
                q, kv_np, idx = served_case([0, 5, 70], s_q=2, h_q=4, topk=32, page=max(16, v.min_page), seed=7)
                kv_t, idx_t = torch.from_numpy(kv_np), torch.from_numpy(idx).to(torch.int32)
                launches, out, lse = sparse_decode.prepare(q.to(DEVICE), kv_t.to(DEVICE), idx_t.to(DEVICE),
                                                           launcher=v.launch)
                for launch in launches:
                    launch()
                ref64 = reference_sparse_decode(q, kv_t, idx_t)
                ref_gpu = reference_sparse_decode(q, kv_t, idx_t, mode="gpu", operands=v.gpu_operands(q.dtype))
                v_rms = case_v_rms(kv_np, idx)
        except Exception as e:  # noqa: BLE001 -- a crash is this step's finding
            found.append(_say(2, f"{cache} cache: {type(e).__name__}: {e}"))
            continue
        for c in check_against_references(f"{v.name}, {cache} cache", out, lse, ref64, ref_gpu, DEVICE == "cuda",
                                          v_rms, sparse=v.call == "sparse"):
            if not c.ok:
                found.append(_say(2, c.message))
    return found


# ---- steps 3-7: the reports and the documents ----------------------------------------------------

def compile_report(v, docs: Docs) -> list[str]:
    found = []
    configs = [c for c in shipped_configs(only=v.name) if c.version == v.name and c.launch is not None]
    for cache in v.caches:
        if not any(c.label.startswith(f"{v.name} {cache}") for c in configs):
            found.append(_say(3, f"`python -m kernels.compile_report --only {v.name}` builds no '{v.name} {cache} "
                                 f"...' configuration (a launcher labels its launches with its version's name)"))
        if not re.search(rf"^\| {re.escape(v.name)} {cache}\b", docs.benchmarks, re.M):
            found.append(_say(3, f"kernels/BENCHMARKS.md records no sm_90 compile of '{v.name} {cache}': run "
                                 f"`python -m kernels.compile_report --only {v.name}` (and `python -m "
                                 f"kernels.triton36 --report`) and add its rows to the compile report"))
    return found


def _row(text: str, v) -> str | None:
    m = re.search(rf"^\| {v.number} \| `{re.escape(v.name)}`[^|]*\|.*$", text, re.M)  # "`planned` (default)"
    return m.group(0) if m else None


def benchmarks_row(v, docs: Docs) -> list[str]:
    row = _row(docs.benchmarks, v)
    if row is None:
        return [_say(4, f"no row `| {v.number} | `{v.name}` | ... |` in the table of versions of "
                        f"kernels/BENCHMARKS.md (it says 'not measured yet' until a GPU run measures it)")]
    if not v.gpu_verified and "not measured yet" not in row:
        return [_say(4, f"its row gives figures, but its table row has gpu_verified=False: {row}")]
    return []


def readme_and_header(v, docs: Docs) -> list[str]:
    found = []
    row = _row(docs.readme, v)
    if row is None:
        found.append(_say(5, f"no row `| {v.number} | `{v.name}` | ... |` in kernels/README.md's table of versions"))
    elif v.status not in row:
        found.append(_say(5, f"kernels/README.md's row does not give its status {v.status!r}: {row}"))
    if not re.search(rf'^\s*{v.number} "{re.escape(v.name)}"', docs.header, re.M):
        found.append(_say(5, f'kernels/mla_decode.py\'s header does not name `{v.number} "{v.name}"` and what it '
                             f"changed"))
    return found


def chapter_list(v, docs: Docs) -> list[str]:
    if v.call != "dense":
        return []
    for line in docs.chapter6.splitlines():
        if line.startswith("VERSIONS = "):
            listed = ast.literal_eval(line.split("=", 1)[1].split("#")[0].strip())
            if v.name in listed:
                return []
            return [_say(6, f"chapter 6's VERSIONS list {listed} lacks {v.name!r} (the chapter asserts it equals "
                            f"kernels.mla_decode.VERSIONS; it is written out because the browser has no torch)")]
    return [_say(6, "notebooks/06_decode_kernel.ipynb has no `VERSIONS = [...]` line")]


def bench_steps(gpu_check: str) -> list[str]:
    """The --versions argument of each GPU (not --smoke) bench step of gpu_check.sh."""
    text = gpu_check.replace("\\\n", " ")
    return [m.group(1) for line in text.splitlines()
            if "kernels/bench.py" in line and "--smoke" not in line and not line.lstrip().startswith("#")
            for m in [re.search(r"--versions (\S+)", line)] if m]


def gpu_check(v, docs: Docs) -> list[str]:
    if v.call != "dense":
        return []
    from kernels.bench import expand_versions
    if any(v.name in expand_versions(arg) for arg in bench_steps(docs.gpu_check)):
        return []
    return [_say(7, f"no GPU bench step of kernels/gpu_check.sh selects {v.name!r} (its --versions: "
                    f"{bench_steps(docs.gpu_check)}; the words 'portable' and 'hopper' let the table decide)")]


def problems(name: str, docs: Docs | None = None, run: bool = True) -> list[str]:
    """Every step version `name` still lacks (run=False: step 2 is left to tests/test_kernels.py)."""
    docs = docs or Docs.read()
    v = md.VERSION_TABLE[name]
    return (table_row(v) + (against_reference(v) if run else []) + compile_report(v, docs)
            + benchmarks_row(v, docs) + readme_and_header(v, docs) + chapter_list(v, docs) + gpu_check(v, docs))


# ---- the prefill versions (kernels/mla_prefill.py's PREFILL_TABLE, chapter 9) -------------------------
# The same steps for a row of the sibling table, each checked the same way; step 6 waits for
# chapter 9; step 7 is the prefill steps of gpu_check.sh, which take the table's rows (module docstring).

def build_prefill(v, cache: str = "bf16", dtype: str = "bfloat16", **options):
    """The launches of one small call of prefill version v (gpu=True: nothing runs)."""
    from kernels import mla_prefill as mp
    from kernels import sparse_prefill
    dt = getattr(torch, dtype)
    if v.call == "sparse":
        q = torch.zeros(8, 16, D_K, dtype=dt)
        kv = torch.zeros(32, 1, FP8_ROW_BYTES, dtype=torch.uint8) if cache == "fp8" else torch.zeros(32, 1, D_K, dtype=dt)
        idx = torch.zeros(8, 1, 64, dtype=torch.int32)
        return sparse_prefill.prepare(q, kv, idx, gpu=True, launcher=v.launch, **options)[0]
    if cache != "bf16":
        raise ValueError(f"the expand path reads K and V in q's dtype, not {cache} rows")
    q = torch.zeros(40, 2, mp.D_QK, dtype=dt)
    k, val = torch.zeros(60, 2, mp.D_QK, dtype=dt), torch.zeros(60, 2, mp.D_V, dtype=dt)
    cu_q, cu_k = torch.tensor([0, 10, 40], dtype=torch.int32), torch.tensor([0, 25, 60], dtype=torch.int32)
    return mp.prepare(q, k, val, cu_q, cu_k, 30, gpu=True, version=v.name, check_lengths=False, **options)[1]


def prefill_table_row(v) -> list[str]:
    from kernels import mla_prefill as mp
    found = []
    if v.call not in ("expand", "sparse"):
        found.append(_say(1, f"call={v.call!r}: 'expand' (q/k/v + cu_seqlens) or 'sparse' (top-k indices)"))
    if [w.number for w in mp.PREFILL_TABLE.values()].count(v.number) > 1:
        found.append(_say(1, f"number {v.number} is another prefill version's too"))
    if v.hopper_only and v.interpreter:
        found.append(_say(1, "hopper_only=True with interpreter=True: a Hopper-only kernel has no CPU interpreter"))
    if v.dot_operands not in ("q", "float32"):
        found.append(_say(1, f"dot_operands={v.dot_operands!r}: 'q' or 'float32'"))
    if v.call == "expand" and v.causal_tiles not in ("all", "skip"):
        found.append(_say(1, f"causal_tiles={v.causal_tiles!r}: 'all' (every KV tile, masked) or 'skip' (none above "
                             f"the diagonal)"))
    for cache in v.caches:
        try:
            launches = build_prefill(v, cache, v.dtypes[0])
        except (ValueError, TypeError, RuntimeError) as e:
            found.append(_say(1, f"its row says it reads {cache} rows, its launcher refused: {type(e).__name__}: {e}"))
            continue
        bm = launches[0].block_shape[0]
        if v.call == "expand" and bm not in v.block_m:
            found.append(_say(1, f"its launcher builds BLOCK_M={bm}, not in its row's block_m={v.block_m}"))
        stages = launches[0].num_stages
        if v.pipelined != (stages > 1):
            found.append(_say(1, f"pipelined={v.pipelined}, but its launch ships num_stages={stages}"))
    for dt in ("bfloat16", "float16"):
        try:
            build_prefill(v, v.caches[0], dt)
            took = True
        except (ValueError, TypeError):
            took = False
        if took != (dt in v.dtypes):
            found.append(_say(1, f"its row {'says' if dt in v.dtypes else 'does not say'} it takes {dt} q; its launcher "
                                 f"{'refused' if not took else 'built'} one"))
    try:
        build_prefill(v, v.caches[0], v.dtypes[0], batch_invariant=True)
        took = True
    except (ValueError, TypeError):
        took = False
    if took != v.batch_invariant:
        found.append(_say(1, f"batch_invariant={v.batch_invariant} in its row, but its launcher "
                             f"{'took' if took else 'refused'} batch_invariant=True"))
    return found


def prefill_against_reference(v) -> list[str]:
    """One poisoned case per cache it reads, against both references (kind "prefill" or "sparse_prefill")."""
    from kernels.reference import check_against_references
    from tests.test_kernels import DEVICE
    if not v.runs_on(DEVICE):
        return []
    found = []
    for cache in v.caches:
        try:
            if v.call == "expand":
                from kernels import mla_prefill as mp
                from tests.test_kernel_prefill import V_RMS, in_sequences, make_case, references
                q, k, val, cu_q, cu_k, used = make_case([1, 33, 0], [40, 33, 5], seed=7, gap=3)
                out, lse = mp.mla_prefill(q, k, val, cu_q, cu_k, 33, seqused_k=used, version=v.name)
                ref64, ref_gpu = references(q, k, val, cu_q, cu_k, used, True, v.name)
                got, ref64, ref_gpu, v_rms, kind = (out, lse), ref64, ref_gpu, V_RMS, "prefill"
                got = (in_sequences(got[0], cu_q, 0), in_sequences(got[1], cu_q, 1))
                ref64 = (in_sequences(ref64[0], cu_q, 0), in_sequences(ref64[1], cu_q, 1))
                ref_gpu = (in_sequences(ref_gpu[0], cu_q, 0), in_sequences(ref_gpu[1], cu_q, 1))
            else:
                from kernels import sparse_prefill
                from kernels.reference import reference_sparse_prefill
                from tests.test_kernel_sparse_prefill import make_case, v_rms_of
                q, kv, idx = make_case(4, 60, 16, 40, fp8=cache == "fp8", seed=7)
                found_l, out, lse = sparse_prefill.prepare(q, kv, idx, launcher=v.launch)
                for launch in found_l:
                    launch()
                args = (q.cpu(), kv.cpu(), idx.cpu())
                got = (out, lse)
                ref64 = reference_sparse_prefill(*args)
                ref_gpu = reference_sparse_prefill(*args, mode="gpu", operands=v.gpu_operands(q.dtype))
                v_rms, kind = v_rms_of(kv, idx), "sparse_prefill"
        except Exception as e:  # noqa: BLE001 -- a crash is this step's finding
            found.append(_say(2, f"{cache}: {type(e).__name__}: {e}"))
            continue
        for c in check_against_references(f"{v.name}, {cache}", *got, ref64, ref_gpu, DEVICE == "cuda", v_rms,
                                          kind=kind):
            if not c.ok:
                found.append(_say(2, c.message))
    return found


def prefill_compile_report(v, docs: Docs) -> list[str]:
    from kernels.prefill_context import compile_configs
    found = []
    labels = [label for label, _, name in compile_configs(only=v.name) if name == v.name]
    for cache in v.caches:
        if not any(label.startswith(f"{v.name} {cache}") for label in labels):
            found.append(_say(3, f"`python -m kernels.compile_report --only {v.name}` builds no '{v.name} {cache} ...' "
                                 f"configuration (a launcher labels its launches with its version's name)"))
        if not re.search(rf"^\| {re.escape(v.name)} {cache}\b", docs.benchmarks, re.M):
            found.append(_say(3, f"kernels/BENCHMARKS.md records no sm_90 compile of '{v.name} {cache}': run `python -m "
                                 f"kernels.compile_report --only {v.name}` (and under triton 3.6) and add its rows"))
    return found


def prefill_readme_and_header(v, docs: Docs) -> list[str]:
    found = []
    row = _row(docs.readme, v)
    if row is None:
        found.append(_say(5, f"no row `| {v.number} | `{v.name}` | ... |` in kernels/README.md's table of prefill "
                             f"versions"))
    elif v.status not in row:
        found.append(_say(5, f"kernels/README.md's row does not give its status {v.status!r}: {row}"))
    if not re.search(rf'^\s*{v.number} "{re.escape(v.name)}"', docs.prefill_header, re.M):
        found.append(_say(5, f'kernels/mla_prefill.py\'s header does not name `{v.number} "{v.name}"` and what it '
                             f"changed"))
    return found


def prefill_problems(name: str, docs: Docs | None = None, run: bool = True) -> list[str]:
    """Every step prefill version `name` still lacks (run=False: step 2 is left to its tests)."""
    from kernels.mla_prefill import PREFILL_TABLE
    docs = docs or Docs.read()
    v = PREFILL_TABLE[name]
    return (prefill_table_row(v) + (prefill_against_reference(v) if run else []) + prefill_compile_report(v, docs)
            + benchmarks_row(v, docs) + prefill_readme_and_header(v, docs))


def steps_of(found: list[str]) -> set[int]:
    return {int(re.match(r"step (\d+)", p).group(1)) for p in found}


__all__ = ["Docs", "problems", "prefill_problems", "steps_of", "STEPS", "build", "build_prefill", "bench_steps"]
