#!/usr/bin/env bash
# Every GPU check of the course in one command, sized for 8 minutes on one H200. Its budget is
# measured, not planned: `--dry-run` on a CPU compiles every specialization the GPU run will
# compile (for sm_90: the same compile an H200 runs), times the host work of every test case at
# its GPU size, and projects each step onto one H200 (budget.md; how each figure is made is in
# its row). Not yet run on a GPU.
#
#   bash kernels/gpu_check.sh [OUT_DIR]            on a CUDA machine, from anywhere
#   bash kernels/gpu_check.sh --dry-run [OUT_DIR]  on a CPU: every step in Triton's interpreter on the
#                                                  cases shrunk, the compile step for real (sm_90), the budget
#
# Steps, each under its own limit (seconds on one H200; the limits add up to 480). A step that
# fails or runs out of time fails the run, and the next step runs all the same:
#   env           the GPU, driver, torch, triton, flash_mla
#   compile       every kernel specialization the later steps launch, compiled once, in parallel, into a
#                 fresh triton cache (python -m tests.gpu_check compile): the case matrix (the sparse
#                 kernel with several top-k pieces and the combine, and with one piece), the batch-
#                 invariance test, bench.py --quick, bench_sparse.py --quick, bench_prefill.py --quick (and the
#                 prefill cases' launches). The test and bench steps then
#                 load kernels, and each step's row counts the kernels it still had to compile (0 when
#                 the list was right)
#   tests         pytest -m gpu_check: versions 1-4 on the case matrix of tests/gpu_check.py (FlashMLA's
#                 shapes, ragged and empty sequences, NaN-poisoned caches, out-of-range table entries,
#                 causal rows without keys, FP8 rows with power-of-two scales), each against the float64
#                 and the GPU-like reference at FlashMLA's tolerances, and batch invariance, bit for bit
#   hopper        versions 5 and 6 on their cases (their first GPU run: a hang or a fault costs this step)
#   sparse        version 7 on its cases (top-k 2048, -1 entries, an empty sequence; split and one piece)
#   prefill       the prefill kernels on theirs (tests/gpu_check_prefill.py: every row of PREFILL_TABLE and
#                 the chunked prefix context; ragged and empty prompts, extends after a prefix, queries
#                 without keys, NaN-poisoned rows and workspace, FlashMLA's sparse prefill shapes with -1
#                 entries), at FlashMLA's prefill tolerances -- checked before the prefill bench times them
#   bench         python kernels/bench.py --quick --versions portable: every version whose row of the
#                 version table is not hopper_only, every sequence checked (out and lse) before any timing
#   bench-gluon   the same for the hopper_only versions
#   A new version is in the test and bench steps through its row, never through this script.
#   sparse-bench  python kernels/bench_sparse.py --quick: every query token checked, then timed
#   prefill-bench python kernels/bench_prefill.py --quick: every query row checked, then timed
#   host, budget  (dry run) the host work timed, the one-H200 budget projected (fails the run over 480 s)
# In the dry run the bench steps run --smoke (Triton's interpreter, tiny shapes: the gates, no times).
# After every step OUT_DIR/steps.tsv gets its row and OUT_DIR/GPU_CHECK.md is written again, so a
# run that is cut short leaves every finished step's numbers on disk. Also OUT_DIR/<step>.log,
# bench_quick.md, bench_gluon.md, bench_sparse.md, bench_prefill.md, compile.json; exits 1 if any step
# failed.
# GPU_CHECK_BENCH_ARGS adds arguments to the bench step (e.g. "--versions planned,seesaw");
# GPU_CHECK_ONLY=step,step runs only those steps (to rerun one); GPU_CHECK_PYTEST_ARGS adds
# arguments to the test steps' pytest (CI's dry run passes --collect-only: it runs the same tests
# itself, tests/test_kernel_gpu_check.py says why).
set -u

usage() { echo "usage: bash kernels/gpu_check.sh [--dry-run] [OUT_DIR]" >&2; exit 2; }
DRY=0
OUT=""
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY=1 ;;
    -h|--help) usage ;;
    -*) echo "gpu_check.sh: unknown option $arg" >&2; usage ;;
    *) [ -z "$OUT" ] || usage; OUT="$arg" ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-gpu-check-$(date -u +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
PY="${PYTHON:-python}"
[ -x "$ROOT/.venv/bin/python" ] && [ -z "${PYTHON:-}" ] && PY="$ROOT/.venv/bin/python"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export TRITON_DEFAULT_FP_FUSION="${TRITON_DEFAULT_FP_FUSION:-1}"
export PYTHONUNBUFFERED=1
# one BLAS / OpenMP thread per process, the course's rule (classroom/execute.py's ONE_BLAS_THREAD): the test
# steps' references run on the CPU, the dry run times them so and the budget projects them per core; on a
# shared CPU more threads only spin (the prefill cases' references took 6x as long with them, load average 4.5)
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" \
  MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
unset CI  # the slow tests (sm_90 compile reports, the browser) are not GPU work
# a fresh triton cache: the compile step fills it, the later steps read it, each step's row counts
# what it had to add (GPU_CHECK_TRITON_CACHE: another folder, e.g. to keep it)
export TRITON_CACHE_DIR="${GPU_CHECK_TRITON_CACHE:-$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-triton.XXXXXX")}"
mkdir -p "$TRITON_CACHE_DIR"
JOBS="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)"  # (nproc obeys OMP_NUM_THREADS)
BUDGET=480  # seconds on one H200
SELF_LIMIT=$BUDGET  # what this run may take: the H200 budget, or on a CPU the dry run's own
if [ "$DRY" = 1 ]; then
  export TRITON_INTERPRET=1 CUDA_VISIBLE_DEVICES=""
  SELF_LIMIT=1800
fi
START=$(date +%s)
STEPS=()
FAILED=0
printf 'step\tstatus\tseconds\tlimit_h200\tcompiled\n' > "$OUT/steps.tsv"

cache_entries() { find "$TRITON_CACHE_DIR" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l | tr -d ' '; }

# run STEP LIMIT_H200 LIMIT_DRY COMMAND...: its output to OUT/STEP.log, its status, time and the
# kernels it compiled recorded; the summary written again
run() {
  local name="$1" limit="$2" dry_limit="$3"; shift 3
  if [ -n "${GPU_CHECK_ONLY:-}" ] && [[ ",$GPU_CHECK_ONLY," != *",$name,"* ]]; then
    STEPS+=("| $name | not selected (GPU_CHECK_ONLY) | 0 | $limit | | |"); return
  fi
  local own=$limit; [ "$DRY" = 1 ] && own=$dry_limit
  local left=$(( SELF_LIMIT - ($(date +%s) - START) ))
  if [ "$left" -lt 10 ]; then
    STEPS+=("| $name | NOT RUN: out of time ($SELF_LIMIT s) | 0 | $limit | | |"); FAILED=1
    printf '%s\tnot run\t0\t%s\t\n' "$name" "$limit" >> "$OUT/steps.tsv"; summary; return
  fi
  [ "$own" -gt "$left" ] && own="$left"
  local before t0 rc dt compiled last status
  before=$(cache_entries)
  t0=$(date +%s)
  timeout --kill-after=10 "$own" "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  dt=$(( $(date +%s) - t0 ))
  compiled=$(( $(cache_entries) - before ))
  last="$(grep -E '(passed|failed|error|skipped|collected|wrote|compiled|Projected|Error|FAILED)' "$OUT/$name.log" | tail -n 1 \
          | tr '|' '/' | cut -c1-200)"
  if [ "$rc" = 0 ]; then
    status="ok"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    status="FAILED: over its $own s limit"; FAILED=1
  else
    status="FAILED (exit $rc)"; FAILED=1
  fi
  STEPS+=("| $name | $status | $dt | $limit | $compiled | $last |")
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" "$dt" "$limit" "$compiled" >> "$OUT/steps.tsv"
  echo "[$name] exit $rc in ${dt}s -- $OUT/$name.log"
  summary
}

# GPU_CHECK.md from what is on disk now (called after every step, and once at the end)
summary() {
  local total=$(( $(date +%s) - START ))
  {
    echo "# GPU check"
    echo
    echo "- date (UTC): $(date -u '+%Y-%m-%d %H:%M')"
    echo "- command: \`bash kernels/gpu_check.sh$([ "$DRY" = 1 ] && echo ' --dry-run')\` at $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
    if [ "$DRY" = 1 ]; then
      echo "- **dry run on a CPU: Triton's interpreter on shrunk cases, sm_90 compiles timed here; nothing here was measured on a GPU**"
    fi
    echo "- machine: $(head -n 3 "$OUT/env.log" 2>/dev/null | tr '\n' ';' | tr '|' '/')"
    echo "- triton cache: $TRITON_CACHE_DIR ($(cache_entries) kernels)"
    if [ -n "${FINISHED:-}" ]; then
      echo "- total: ${total} s$([ "$DRY" = 1 ] && echo " of this dry run (the one-H200 projection is below)" || echo " of a ${BUDGET} s budget")$([ "$total" -gt "$SELF_LIMIT" ] && echo ' (OVER BUDGET)')"
      echo "- result: $([ "$FAILED" = 0 ] && echo 'every step passed' || echo '**FAILED** (see the steps and their logs)')"
    else
      echo "- **still running or cut short after ${total} s**: the steps below are the ones that finished"
    fi
    echo
    echo "| step | status | seconds | limit on one H200 (s) | kernels compiled | last line of its log |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${STEPS[@]}"
    echo
    if [ -f "$OUT/budget.md" ]; then
      cat "$OUT/budget.md"; echo
    fi
    echo "## For kernels/BENCHMARKS.md"
    echo
    if [ -f "$OUT/bench_quick.md" ]; then
      sed -n '/^| cache |/,/^$/p' "$OUT/bench_quick.md"
    else
      echo "(the bench step wrote no table)"
    fi
    if [ -f "$OUT/bench_gluon.md" ]; then
      echo; echo "### The Hopper-only versions"; echo
      sed -n '/^| cache |/,/^$/p' "$OUT/bench_gluon.md"
      grep -E '^Version [0-9]+ \(' "$OUT/bench_gluon.md"
    else
      echo; echo "(the bench-gluon step wrote no table: the Hopper-only versions not yet run on a GPU)"
    fi
    if [ -f "$OUT/bench_sparse.md" ]; then
      echo; echo "### Sparse decode"; echo; cat "$OUT/bench_sparse.md"
    fi
    if [ -f "$OUT/bench_prefill.md" ]; then
      echo; echo "### Prefill"; echo; cat "$OUT/bench_prefill.md"
    fi
  } > "$OUT/GPU_CHECK.md.tmp" && mv "$OUT/GPU_CHECK.md.tmp" "$OUT/GPU_CHECK.md"
}

# ---- env
run env 20 60 "$PY" -c '
import platform, subprocess, torch, triton
print("python", platform.python_version(), "torch", torch.__version__, "triton", triton.__version__)
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else "(no GPU)")
try:
    import flash_mla; print("flash_mla", getattr(flash_mla, "__version__", "installed"))
except ImportError:
    print("flash_mla not installed")
try:
    print(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm",
                          "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip())
except Exception as e:
    print("nvidia-smi:", type(e).__name__)
'

# ---- compile: every specialization once (on a CPU: the sm_90 compile, timed)
if [ "$DRY" = 1 ]; then
  # under the GPU machine's triton (3.6) where `python -m kernels.triton36 --install` has put it here
  T36="$("$PY" -c 'from kernels import triton36; print(triton36.TARGET if triton36.installed() else "")' 2>/dev/null)"
  run compile 60 900 env -u TRITON_INTERPRET PYTHONPATH="${T36:+$T36:}$PYTHONPATH" \
    "$PY" -m tests.gpu_check compile "$OUT/compile.json" --dry-run --jobs "$JOBS"
  run host - 600 "$PY" -m tests.gpu_check host "$OUT/host.json"
else
  run compile 60 60 "$PY" -m tests.gpu_check compile "$OUT/compile.json" --jobs "$JOBS"
fi

# ---- tests: the case matrix (tests/gpu_check.py), one pytest process per group
PYTEST=("$PY" -m pytest -q -p no:cacheprovider -m gpu_check -rs)
[ "$DRY" = 1 ] && PYTEST+=(--full)  # in the interpreter the matrix is a slow test
# shellcheck disable=SC2206  # word splitting wanted: a list of arguments
[ -n "${GPU_CHECK_PYTEST_ARGS:-}" ] && PYTEST+=(${GPU_CHECK_PYTEST_ARGS})
run tests 75 600 "${PYTEST[@]}" tests/test_kernel_gpu_matrix.py::test_dense tests/test_kernel_batch_invariant.py
run hopper 45 120 "${PYTEST[@]}" tests/test_kernel_gpu_matrix.py::test_hopper
run sparse 30 300 "${PYTEST[@]}" tests/test_kernel_gpu_matrix.py::test_sparse
run prefill 40 600 "${PYTEST[@]}" tests/test_kernel_gpu_matrix.py::test_prefill

# ---- bench
if [ "$DRY" = 1 ]; then
  run bench 90 300 "$PY" kernels/bench.py --smoke --b 2 --versions tiled,planned --out "$OUT/bench_quick.md" \
    ${GPU_CHECK_BENCH_ARGS:-}
  run bench-gluon 40 120 "$PY" kernels/bench.py --smoke --b 2 --versions hopper --out "$OUT/bench_gluon.md"
else
  run bench 90 90 "$PY" kernels/bench.py --quick --out "$OUT/bench_quick.md" \
    --versions portable,torch,flashmla ${GPU_CHECK_BENCH_ARGS:-}
  run bench-gluon 40 40 "$PY" kernels/bench.py --quick --out "$OUT/bench_gluon.md" --versions hopper
fi
if [ "$DRY" = 1 ]; then
  run sparse-bench 35 300 "$PY" kernels/bench_sparse.py --smoke --out "$OUT/bench_sparse.md"
else
  run sparse-bench 35 35 "$PY" kernels/bench_sparse.py --quick --out "$OUT/bench_sparse.md"
fi
if [ "$DRY" = 1 ]; then
  run prefill-bench 45 300 "$PY" kernels/bench_prefill.py --smoke --out "$OUT/bench_prefill.md"
else
  run prefill-bench 45 45 "$PY" kernels/bench_prefill.py --quick --out "$OUT/bench_prefill.md"
fi

# ---- the one-H200 budget, projected from this dry run's measurements
if [ "$DRY" = 1 ]; then
  run budget - 120 "$PY" -m tests.gpu_check budget "$OUT"
fi

FINISHED=1
summary
TOTAL=$(( $(date +%s) - START ))
echo "wrote $OUT/GPU_CHECK.md (total ${TOTAL} s)"
[ "$TOTAL" -gt "$SELF_LIMIT" ] && FAILED=1
exit "$FAILED"
