#!/usr/bin/env bash
# Installs what the browser-site tests need (CI runs it from .ci/run):
#   bash web/test-setup.sh             everything below
#   bash web/test-setup.sh --versions  only .venv-pyodide-versions (numpy 2.0.2 + matplotlib 3.8.4,
#                                      the browser's versions: tests/test_site_versions.py)
#   bash web/test-setup.sh --browser   only Debian's chromium + playwright in .venv
#                                      (tests/test_site_browser.py)
# Everything from the project's own pinned, hashed files; chromium from Debian (apt, as root
# or through sudo): Playwright's own browser download is not used.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
what=${1:-all}
[ -x .venv/bin/python ] || bash setup.sh

if [ "$what" = all ] || [ "$what" = --versions ]; then
  stamp=$(sha256sum web/requirements-pyodide-versions.txt | cut -c1-64)
  if [ "$(cat .venv-pyodide-versions/.requirements 2>/dev/null)" != "$stamp" ]; then
    rm -rf .venv-pyodide-versions
    "$PYTHON" -m venv .venv-pyodide-versions
    .venv-pyodide-versions/bin/python -m pip install --quiet --require-hashes --no-deps \
      -r web/requirements-pyodide-versions.txt
    echo "$stamp" > .venv-pyodide-versions/.requirements
  fi
fi

if [ "$what" = all ] || [ "$what" = --browser ]; then
  if [ ! -x /usr/bin/chromium ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  fi
  .venv/bin/python -m pip install --quiet --require-hashes --no-deps -r web/requirements-browser-test.txt
fi
echo "test-setup: done ($what)"
