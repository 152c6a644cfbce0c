#!/usr/bin/env bash
# Build the browser version of the course into ./site (or --out DIR):
#   bash web/build.sh            lab/ (JupyterLite), book/ (rendered chapters), index.html
#   bash web/build.sh --no-book  skip executing the chapters for book/
# Needs the course's .venv (made here by setup.sh if missing), npm, and the registries
# (PyPI, npm) for the pinned inputs. Preview: .venv/bin/python web/serve.py
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || bash setup.sh
# the build tools live in their own venv, installed only from the hashed pins
stamp=$(sha256sum web/requirements-site.txt | cut -c1-64)
if [ ! -x .venv-site/bin/jupyter ] || [ "$(cat .venv-site/.requirements 2>/dev/null)" != "$stamp" ]; then
  rm -rf .venv-site
  "$PYTHON" -m venv .venv-site
  .venv-site/bin/python -m pip install --quiet --require-hashes --no-deps -r web/requirements-site.txt
  echo "$stamp" > .venv-site/.requirements
fi
# the browser's matplotlib on this CPU: it prebuilds the font cache the site ships
bash web/test-setup.sh --versions >/dev/null
exec .venv/bin/python web/build.py "$@"
