"""Measure ``POST /search`` latency and throughput of a real ``gitrag serve`` process.

Starts ``gitrag serve`` on a free loopback port over an existing store, then for each concurrency
level runs that many clients for a fixed time over a fixed query list and prints one JSON line per
level: requests, errors, requests/s, latency p50/p95/p99/max (ms), server RSS (MB).

    .venv/bin/python bench/server_load.py --store STORE [--concurrency 1,8,32] [--seconds 5]

The store is built beforehand, e.g. from the obsidian-help corpus::

    git clone ../shared/corpora/obsidian-help.bundle /tmp/obsidian-help
    .venv/bin/gitrag build --repo /tmp/obsidian-help --store /tmp/obsidian-store --embedder hash-64
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

QUERIES = [
    "how to create a link to a heading", "sync settings", "canvas", "graph view filters", "publish site password",
    "daily notes template", "Obsidian URI", "hotkeys", "vyhľadávanie", "Suche nach Dateien", "embed files",
    "plugins community", "backlinks", "callouts", "aliases", "properties", "workspace layout", "themes css snippets",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


async def _level(base: str, concurrency: int, seconds: float, limit: int) -> dict[str, object]:
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as http:
        async def client(offset: int) -> None:
            nonlocal errors
            i = offset
            while time.monotonic() < deadline:
                query = QUERIES[i % len(QUERIES)]
                i += 1
                started = time.perf_counter()
                try:
                    async with http.post(base + "/search", json={"query": query, "limit": limit}) as resp:
                        await resp.read()
                        if resp.status != 200:
                            errors += 1
                            continue
                except aiohttp.ClientError:
                    errors += 1
                    continue
                latencies.append(time.perf_counter() - started)

        started = time.monotonic()
        await asyncio.gather(*(client(k) for k in range(concurrency)))
        elapsed = time.monotonic() - started
    qs = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else [float("nan")] * 99
    return {"concurrency": concurrency, "requests": len(latencies), "errors": errors,
            "rps": round(len(latencies) / elapsed, 1), "p50_ms": round(qs[49] * 1000, 1),
            "p95_ms": round(qs[94] * 1000, 1), "p99_ms": round(qs[98] * 1000, 1),
            "max_ms": round(max(latencies, default=float("nan")) * 1000, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--limit", type=int, default=10)
    args = parser.parse_args()
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    gitrag = str(Path(sys.executable).with_name("gitrag"))
    config = Path(args.store).resolve().parent / "bench-server.toml"
    config.write_text("rate_limit_per_minute = 1000000\nrate_limit_burst = 100000\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITRAG_") or k == "GITRAG_EMBEDDER"}
    server = subprocess.Popen([gitrag, "serve", "--store", args.store, "--port", str(port), "--config", str(config)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        async def run() -> None:
            async with aiohttp.ClientSession() as http:
                for _ in range(1200):
                    try:
                        async with http.get(base + "/health") as resp:
                            if resp.status == 200:
                                break
                    except aiohttp.ClientError:
                        pass
                    await asyncio.sleep(0.1)
                for query in QUERIES:  # warm-up
                    await (await http.post(base + "/search", json={"query": query})).read()
            for level in (int(c) for c in args.concurrency.split(",")):
                row = await _level(base, level, args.seconds, args.limit)
                row["server_rss_mb"] = _rss_mb(server.pid)
                print(json.dumps(row), flush=True)

        asyncio.run(run())
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
