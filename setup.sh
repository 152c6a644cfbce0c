#!/usr/bin/env bash
# Sets up the course in ./.venv:
#   bash setup.sh           everything: chapters 1-7, problems 1-14, the kernels (torch + triton)
#   bash setup.sh --light   numpy, matplotlib, jupyter, pytest: chapters 1-5 and 7, problems 1-11,
#                           13 and 14, the judge and the tests; no torch, no triton (README: sizes)
# - makes the virtual environment (once),
# - on a machine without an NVIDIA GPU, installs a CPU-only torch wheel first
#   (about 200 MB instead of several GB of CUDA libraries),
# - installs requirements.txt (or requirements-light.txt) and the course's own packages (editable).
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
light=0
for arg in "$@"; do
  case "$arg" in
    --light) light=1 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown option $arg (known: --light)" >&2; exit 2 ;;
  esac
done
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install --quiet)
if [ "$light" = 1 ]; then
  echo "setup: the light install (no torch, no triton): requirements-light.txt"
  "${PIP[@]}" -r requirements-light.txt
else
  if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
      echo "setup: NVIDIA GPU found: installing the default (CUDA) torch"
    else
      # Override with TORCH_CPU_SPEC=... if you want another version.
      spec=${TORCH_CPU_SPEC:-torch==2.13.0}
      echo "setup: no NVIDIA GPU: installing a CPU-only $spec"
      # --no-deps: torch's own dependencies come from the normal index in the next step.
      "${PIP[@]}" --no-deps --retries 1 --timeout 15 "$spec" --index-url https://download.pytorch.org/whl/cpu
    fi
  fi
  "${PIP[@]}" -r requirements.txt
fi
"${PIP[@]}" --no-deps -e .
.venv/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null
if [ "$light" = 1 ]; then
  echo "setup: done (light). Python: .venv/bin/python. Problem 12 and chapter 6's kernel cells need"
  echo "       torch + triton: \`bash setup.sh\` adds them."
else
  echo "setup: done. Python: .venv/bin/python"
fi
