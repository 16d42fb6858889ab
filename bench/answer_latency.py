"""Compare ``POST /answer`` (extractive) with ``POST /search`` latency on the same bundle over real HTTP.

Starts ``gitrag serve`` on a free loopback port over an existing store (answer cache off, rate
limits off), warms both endpoints up, then sends the questions one at a time, alternating
``/search`` and ``/answer`` for the same question (interleaved, so both see the same machine load),
for ``--rounds`` rounds.  Prints one JSON object: per endpoint n, p50, p95, mean (ms), the
p50 and p95 ratios answer/search, and /answer's p50 per engine (graph, text, graph+text).

    .venv/bin/python bench/answer_latency.py --store STORE [--questions GOLD_OR_JSONL] [--rounds 2]

The questions default to the thesis-wiki gold file (every question text, no answers are used).
The store is built beforehand, e.g.::

    git clone -q ../shared/corpora/thesis-wiki.bundle /tmp/tw
    .venv/bin/gitrag build --repo /tmp/tw --store /tmp/tw-store --embedder sentence-transformers/all-MiniLM-L6-v2
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

SHARED = Path(os.environ.get("GITRAG_SHARED") or Path(__file__).resolve().parents[2] / "shared")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _questions(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8-sig")
    if text.lstrip().startswith("{") and '"questions"' in text[:2000]:
        return [q["question"] for q in json.loads(text)["questions"]]
    return [json.loads(line)["question"] for line in text.splitlines() if line.strip()]


def _stats(values: list[float]) -> dict[str, float | int]:
    ordered = sorted(values)

    def pct(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 2)

    return {"n": len(values), "p50": pct(0.5), "p95": pct(0.95), "mean": round(statistics.fmean(values), 2)}


async def _timed(http: aiohttp.ClientSession, url: str, body: dict[str, object]) -> tuple[float, dict]:
    started = time.perf_counter()
    async with http.post(url, json=body) as resp:
        data = await resp.json()
        if resp.status != 200:
            raise RuntimeError(f"{url}: HTTP {resp.status} {data.get('reason')}")
    return (time.perf_counter() - started) * 1000, data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--questions", type=Path, default=SHARED / "corpora" / "thesis-wiki.gold.json")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    questions = _questions(args.questions)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    gitrag = str(Path(sys.executable).with_name("gitrag"))
    config = Path(args.store).resolve().parent / "bench-answer-server.toml"
    config.write_text("rate_limit_per_minute = 1000000\nrate_limit_burst = 100000\n\n"
                      "[answer]\ngenerator = \"extractive\"\ncache_entries = 0\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITRAG_") or k == "GITRAG_EMBEDDER"}
    server = subprocess.Popen([gitrag, "serve", "--store", args.store, "--port", str(port), "--config", str(config)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        async def run() -> dict[str, object]:
            search: list[float] = []
            answer: list[float] = []
            engines: dict[str, list[float]] = {}
            async with aiohttp.ClientSession() as http:
                for _ in range(1200):
                    try:
                        async with http.get(base + "/health") as resp:
                            if resp.status == 200:
                                break
                    except aiohttp.ClientError:
                        pass
                    await asyncio.sleep(0.1)
                for q in questions[:10]:  # warm-up: graph index, model, caches of the OS
                    await _timed(http, base + "/search", {"query": q})
                    await _timed(http, base + "/answer", {"query": q})
                for _ in range(args.rounds):
                    for q in questions:
                        ms, _ = await _timed(http, base + "/search", {"query": q})
                        search.append(ms)
                        ms, body = await _timed(http, base + "/answer", {"query": q})
                        answer.append(ms)
                        engines.setdefault(body["engine"], []).append(ms)
            s, a = _stats(search), _stats(answer)
            return {"questions": len(questions), "rounds": args.rounds, "search_ms": s, "answer_ms": a,
                    "ratio_p50": round(float(a["p50"]) / float(s["p50"]), 2),
                    "ratio_p95": round(float(a["p95"]) / float(s["p95"]), 2),
                    "answer_p50_by_engine": {e: _stats(v)["p50"] for e, v in sorted(engines.items())}}

        print(json.dumps(asyncio.run(run()), indent=1), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
