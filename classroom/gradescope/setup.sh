#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder's image
# (https://gradescope-autograders.readthedocs.io/en/latest/specs/). It installs what the
# judge needs into /autograder/venv: numpy, and a CPU-only torch + triton when the zip was
# built with problem 12 (config.json "with_torch"; Triton's interpreter runs it on the CPU).
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends python3 python3-venv python3-pip >/dev/null
python3 -m venv /autograder/venv
PIP=(/autograder/venv/bin/python -m pip install --quiet)
"${PIP[@]}" "numpy>=1.26"
if /autograder/venv/bin/python -c "import json, sys; sys.exit(0 if json.load(open('config.json'))['with_torch'] else 1)"; then
  "${PIP[@]}" torch --index-url https://download.pytorch.org/whl/cpu
  "${PIP[@]}" "triton>=3.0"
fi
/autograder/venv/bin/python -c "import numpy; print('setup: numpy', numpy.__version__)"
