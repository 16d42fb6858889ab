#!/usr/bin/env bash
# Install gitrag and everything it needs into ./.venv, offline-capable model packages included.
# Idempotent: a stamp keyed by pyproject.toml skips the work when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# The browser test (tests/query/test_web_browser.py) drives Debian's chromium: Playwright's own browser
# download is not reachable.  Installed only where it is missing and apt-get can run (root).
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
    || echo "install.sh: chromium could not be installed; the browser test will fail in CI, skip elsewhere" >&2
fi
STAMP=.venv/.gitrag-installed
want=$(sha256sum pyproject.toml scripts/install.sh | sha256sum | cut -c1-16)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && .venv/bin/python -c "import indexer, query, artifacts" 2>/dev/null; then
  exit 0
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first, from the local CPU build (a plain `torch` requirement would pull a multi-GB CUDA build).
.venv/bin/python -m pip install --quiet "torch==2.13.0"
# hnswlib compiles; without -march=native its wheel is portable across machines.
HNSWLIB_NO_NATIVE=1 .venv/bin/python -m pip install --quiet -e ".[models,test]"
echo "$want" > "$STAMP"
