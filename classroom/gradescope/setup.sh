#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder's image
# (https://gradescope-autograders.readthedocs.io/en/latest/specs/). It installs what the
# judge needs into /autograder/venv: numpy, and a CPU-only torch + triton when the zip was
# built with problem 12 (config.json "with_torch"; Triton's interpreter runs it on the CPU).
# It also installs bubblewrap, the sandbox every attempt runs in, and makes the account
# `mla-attempt` that attempts run as instead where the container forbids namespaces
# (run_autograder decides at each run; see classroom/platforms.py).
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || true
apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap >/dev/null
id mla-attempt >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent \
  --shell /usr/sbin/nologin mla-attempt
python3 -m venv /autograder/venv
chmod -R a+rX /autograder/venv     # the attempts' account runs this interpreter
PIP=(/autograder/venv/bin/python -m pip install --quiet)
"${PIP[@]}" "numpy>=1.26"
if /autograder/venv/bin/python -c "import json, sys; sys.exit(0 if json.load(open('config.json'))['with_torch'] else 1)"; then
  "${PIP[@]}" torch --index-url https://download.pytorch.org/whl/cpu
  "${PIP[@]}" "triton>=3.0"
fi
/autograder/venv/bin/python -c "import numpy; print('setup: numpy', numpy.__version__)"
bwrap --version || echo "setup: no bubblewrap; attempts will run as the user mla-attempt"
