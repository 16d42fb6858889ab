"""Swap under load: a real `gitrag serve` process, concurrent loopback clients, 60 swaps forward and back.

Zero failed requests and zero responses mixing two bundles (every result's document must belong
to the commit named in ``index_version``).  Prints latency percentiles, the worst latency and the
server's RSS before and after the swaps (run with ``-s`` to see them).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from artifacts.store import Store
from indexer.build import build_bundle
from tests.conftest import RepoBuilder

GITRAG = str(Path(sys.executable).with_name("gitrag"))
SWAPS = 60
CLIENTS = 8


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.e2e
def test_zero_failures_and_no_mixed_responses_during_swaps(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                           hash_embedder) -> None:
    store = Store(tmp_path / "store")
    docs: dict[str, set[str]] = {}
    ids: dict[str, str] = {}
    for name in ("alpha", "beta"):
        for rel in list((repo.path / "wiki").glob("*.md")) if (repo.path / "wiki").exists() else []:
            rel.unlink()
        repo.write("wiki/common.md", "# Spoločné\n\nSpoločné slovo pre oba zväzky.\n")
        for i in range(5):
            repo.write(f"wiki/{name}-{i}.md", f"# {name} {i}\n\nSpoločné slovo a {name} číslo {i}.\n")
        commit = repo.commit(name)
        result = build_bundle(repo.path, store.root, embedder=hash_embedder)
        ids[name] = result.bundle_id
        docs[commit] = {"wiki/common.md", *(f"wiki/{name}-{i}.md" for i in range(5))}

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITRAG_") or k == "GITRAG_EMBEDDER"}
    log_path = tmp_path / "serve.log"  # a file, not a pipe nobody reads: the server logs every request
    log_file = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    # One process (--workers 1): the test reads its RSS and counts the swaps of one holder.
    server = subprocess.Popen([GITRAG, "serve", "--store", str(store.root), "--port", str(port), "--workers", "1",
                               "--poll-interval", "3600"], env=env, stdout=subprocess.DEVNULL, stderr=log_file)

    async def scenario() -> dict[str, float]:
        latencies: list[float] = []
        during: list[float] = []
        failures: list[str] = []
        mixed: list[str] = []
        seen: set[str] = set()
        swapping = asyncio.Event()
        stop = asyncio.Event()
        async with aiohttp.ClientSession() as http:
            for _ in range(300):
                try:
                    async with http.get(base + "/health") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
            for _ in range(20):  # warm-up
                await (await http.post(base + "/search", json={"query": "spoločné slovo"})).read()
            rss_before = _rss_mb(server.pid)

            async def client() -> None:
                while not stop.is_set():
                    started = time.perf_counter()
                    try:
                        async with http.post(base + "/search", json={"query": "spoločné slovo", "limit": 20}) as resp:
                            body = await resp.json()
                            ok = resp.status == 200
                    except aiohttp.ClientError as exc:
                        failures.append(type(exc).__name__)
                        continue
                    took = time.perf_counter() - started
                    latencies.append(took)
                    if swapping.is_set():
                        during.append(took)
                    if not ok:
                        failures.append(str(body.get("reason")))
                        continue
                    commit = body["index_version"]["commit"]
                    seen.add(commit)
                    if not {r["document_path"] for r in body["results"]} <= docs[commit]:
                        mixed.append(commit)

            async def swapper() -> int:
                swaps = 0
                swapping.set()
                for i in range(SWAPS):
                    store.set_current(ids["alpha" if i % 2 == 0 else "beta"])
                    async with http.post(base + "/admin/reload") as resp:
                        swaps += (await resp.json())["swapped"]
                swapping.clear()
                await asyncio.sleep(0.3)
                stop.set()
                return swaps

            results = await asyncio.gather(swapper(), *(client() for _ in range(CLIENTS)))
            health = await (await http.get(base + "/health")).json()
            rss_after = _rss_mb(server.pid)
            # SIGHUP reloads too (polling is set to an hour here, so only the signal can explain a swap).
            served = health["bundle"]["bundle_id"]
            store.set_current(ids["alpha"] if served == ids["beta"] else ids["beta"])
            server.send_signal(signal.SIGHUP)
            for _ in range(100):
                await asyncio.sleep(0.05)
                if (await (await http.get(base + "/health")).json())["bundle"]["bundle_id"] != served:
                    break
            else:
                raise AssertionError("SIGHUP did not reload")
        assert failures == [] and mixed == []
        assert results[0] >= 50 and health["swaps"] >= 51 and len(seen) == 2
        assert health["last_reload_error"] is None
        qs = statistics.quantiles(latencies, n=100, method="inclusive")
        return {"requests": len(latencies), "swaps": results[0], "p50_ms": qs[49] * 1000, "p95_ms": qs[94] * 1000,
                "p99_ms": qs[98] * 1000, "worst_during_swaps_ms": max(during) * 1000,
                "rss_before_mb": rss_before, "rss_after_mb": rss_after}

    try:
        stats = asyncio.run(scenario())
    finally:
        server.terminate()
        server.wait(timeout=10)
        log_file.close()
    events = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines() if line.startswith("{")]
    swaps = [e for e in events if e.get("event") == "swap"]
    requests = [e for e in events if e.get("event") == "request" and e["route"] == "/search"]
    assert len(swaps) == stats["swaps"] + 2  # one line per swap: the start, the reloads, the SIGHUP
    assert len(requests) >= stats["requests"] and all(e["status"] == 200 for e in requests)
    print("\nswap-under-load:", " ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                                         for k, v in stats.items()))
    assert stats["rss_after_mb"] < stats["rss_before_mb"] + 150
