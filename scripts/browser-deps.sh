#!/usr/bin/env bash
# The one system package of the test suite: Debian's chromium for the browser test
# (tests/query/test_web_browser.py; Playwright's own browser download is not reachable offline).
# Run by .ci/run before that test and by `make browser-deps`; never by scripts/install.sh.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  echo "browser-deps.sh: chromium is installed ($(command -v chromium))" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
  echo "browser-deps.sh: chromium is missing; install the system package 'chromium' (root, apt-get) to run the browser test" >&2
  exit 1
fi
echo "browser-deps.sh: installing the system package chromium with apt-get (for the browser test only)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
echo "browser-deps.sh: chromium installed" >&2
