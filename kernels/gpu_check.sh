#!/usr/bin/env bash
# Every GPU check of the course in one command, sized for under 8 minutes on one H200
# (not yet run on one: the limits per step -- 30 + 155 + 30 + 40 + 150 + 45 + 30 = 480 s --
# are a plan; the summary records what each step took, and a step past its limit fails).
#
#   bash kernels/gpu_check.sh [OUT_DIR]            on a CUDA machine, from anywhere
#   bash kernels/gpu_check.sh --dry-run [OUT_DIR]  on a CPU: the same steps on tiny shapes in
#                                                  Triton's interpreter (checks this script)
#
# Steps (each under its own time limit; a step that fails or runs out of time fails the run):
#   env         the GPU, driver, torch, triton, flash_mla
#   tests       pytest tests/test_kernel*.py tests/test_seesaw.py: every version compiled on the
#               GPU against the float64 reference on NaN-poisoned caches at FlashMLA's tolerances
#               (versions 5 and 6 on Hopper only), batch invariance, the bench's plumbing
#   seesaw      tests/test_kernel_seesaw.py: version 6 against float64 (its first GPU run)
#   sparse      tests/test_kernel_sparse.py, if this checkout has the sparse kernel
#   bench       python kernels/bench.py --quick --versions portable: every version whose row of
#               the version table is not hopper_only, every sequence checked (out and lse) before
#               any timing; whole-call and kernel-only times; FlashMLA beside ours if it imports
#   bench-gluon the same for the hopper_only versions (5 and 6: their first run, so a hang or a
#               fault there costs this step, not the others' numbers)
#   A new version is in one of the two bench steps through its row, never through this script.
#   sparse-bench  python kernels/bench_sparse.py --quick, if that file exists
# Writes OUT_DIR/GPU_CHECK.md (a summary whose bench table can go into kernels/BENCHMARKS.md),
# OUT_DIR/<step>.log and OUT_DIR/bench_quick.md; exits 1 if any step failed.
# GPU_CHECK_BENCH_ARGS adds arguments to the bench step (e.g. "--versions planned,seesaw");
# GPU_CHECK_ONLY=step,step runs only those steps (to rerun one).
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
unset CI  # the slow tests (sm_90 compile reports, the browser) are not GPU work
BUDGET=480
if [ "$DRY" = 1 ]; then
  export TRITON_INTERPRET=1 CUDA_VISIBLE_DEVICES=""
  BUDGET=300
fi
START=$(date +%s)
STEPS=()
FAILED=0

# run STEP LIMIT_S COMMAND...: the command's output to OUT/STEP.log, its status and time recorded
run() {
  local name="$1" limit="$2"; shift 2
  if [ -n "${GPU_CHECK_ONLY:-}" ] && [[ ",$GPU_CHECK_ONLY," != *",$name,"* ]]; then
    STEPS+=("| $name | not selected (GPU_CHECK_ONLY) | 0 | |"); return
  fi
  local left=$(( BUDGET - ($(date +%s) - START) ))
  if [ "$left" -lt 10 ]; then
    STEPS+=("| $name | NOT RUN: out of time ($BUDGET s budget) | 0 | |"); FAILED=1; return
  fi
  [ "$limit" -gt "$left" ] && limit="$left"
  local t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$? dt=$(( $(date +%s) - t0 ))
  local last
  last="$(grep -E '(passed|failed|error|skipped|wrote|Error|FAILED)' "$OUT/$name.log" | tail -n 1 | tr '|' '/' | cut -c1-160)"
  if [ "$rc" = 0 ]; then
    STEPS+=("| $name | ok | $dt | $last |")
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    STEPS+=("| $name | FAILED: over its $limit s limit | $dt | $last |"); FAILED=1
  else
    STEPS+=("| $name | FAILED (exit $rc) | $dt | $last |"); FAILED=1
  fi
  echo "[$name] exit $rc in ${dt}s -- $OUT/$name.log"
}

skip() {
  if [ -n "${GPU_CHECK_ONLY:-}" ] && [[ ",$GPU_CHECK_ONLY," != *",$1,"* ]]; then
    STEPS+=("| $1 | not selected (GPU_CHECK_ONLY) | 0 | |"); return
  fi
  STEPS+=("| $1 | skipped: $2 | 0 | |"); echo "[$1] skipped: $2"
}

# ---- env
run env 30 "$PY" -c '
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

# ---- tests
TESTS=$(ls tests/test_kernel*.py | grep -v -e test_kernel_seesaw.py -e test_kernel_sparse.py | tr '\n' ' ')
if [ "$DRY" = 1 ]; then
  run tests 240 "$PY" -m pytest -q -p no:cacheprovider tests/test_kernels.py tests/test_kernel_batch_invariant.py \
    -k "edge_lengths and (tiled or planned) or bitwise" -x
else
  run tests 155 "$PY" -m pytest -q -p no:cacheprovider $TESTS tests/test_seesaw.py -x
fi
run seesaw 30 "$PY" -m pytest -q -p no:cacheprovider tests/test_kernel_seesaw.py
if [ -f tests/test_kernel_sparse.py ]; then
  if [ "$DRY" = 1 ]; then
    run sparse 120 "$PY" -m pytest -q -p no:cacheprovider tests/test_kernel_sparse.py -x --co
  else
    run sparse 40 "$PY" -m pytest -q -p no:cacheprovider tests/test_kernel_sparse.py
  fi
else
  skip sparse "tests/test_kernel_sparse.py is not in this checkout"
fi

# ---- bench
if [ "$DRY" = 1 ]; then
  run bench 240 "$PY" kernels/bench.py --smoke --b 2 --versions tiled,planned --out "$OUT/bench_quick.md" \
    ${GPU_CHECK_BENCH_ARGS:-}
  run bench-gluon 120 "$PY" kernels/bench.py --smoke --b 2 --versions hopper --out "$OUT/bench_gluon.md"
else
  run bench 150 "$PY" kernels/bench.py --quick --out "$OUT/bench_quick.md" \
    --versions portable,torch,flashmla ${GPU_CHECK_BENCH_ARGS:-}
  run bench-gluon 45 "$PY" kernels/bench.py --quick --out "$OUT/bench_gluon.md" --versions hopper
fi
if [ -f kernels/bench_sparse.py ]; then
  if [ "$DRY" = 1 ]; then
    run sparse-bench 60 "$PY" kernels/bench_sparse.py --help
  else
    run sparse-bench 30 "$PY" kernels/bench_sparse.py --quick --out "$OUT/bench_sparse.md"
  fi
else
  skip sparse-bench "kernels/bench_sparse.py is not in this checkout"
fi

# ---- summary
TOTAL=$(( $(date +%s) - START ))
{
  echo "# GPU check"
  echo
  echo "- date (UTC): $(date -u '+%Y-%m-%d %H:%M')"
  echo "- command: \`bash kernels/gpu_check.sh$([ "$DRY" = 1 ] && echo ' --dry-run')\` at $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
  if [ "$DRY" = 1 ]; then
    echo "- **dry run on a CPU: Triton's interpreter, tiny shapes; nothing here was measured on a GPU**"
  fi
  echo "- machine: $(head -n 3 "$OUT/env.log" 2>/dev/null | tr '\n' ';' | tr '|' '/')"
  echo "- total: ${TOTAL} s of a ${BUDGET} s budget$([ "$TOTAL" -gt "$BUDGET" ] && echo ' (OVER BUDGET)')"
  echo "- result: $([ "$FAILED" = 0 ] && echo 'every step passed' || echo '**FAILED** (see the steps and their logs)')"
  echo
  echo "| step | status | seconds | last line of its log |"
  echo "|---|---|---|---|"
  printf '%s\n' "${STEPS[@]}"
  echo
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
} > "$OUT/GPU_CHECK.md"
echo "wrote $OUT/GPU_CHECK.md (total ${TOTAL} s)"
[ "$TOTAL" -gt "$BUDGET" ] && FAILED=1
exit "$FAILED"
