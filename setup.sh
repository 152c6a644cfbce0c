#!/usr/bin/env bash
# Sets up the course in ./.venv:  bash setup.sh
# - makes the virtual environment (once),
# - on a machine without an NVIDIA GPU, installs a CPU-only torch wheel first
#   (about 200 MB instead of several GB of CUDA libraries),
# - installs requirements.txt and the course's own packages (editable).
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install --quiet)
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
"${PIP[@]}" --no-deps -e .
.venv/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null
echo "setup: done. Python: .venv/bin/python"
