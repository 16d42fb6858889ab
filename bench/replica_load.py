"""Benchmark: two replicas fed by one remote CURRENT that moves N times under load (8 clients, 60 s).

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/replica_load.py --corpus ../shared/corpora/thesis-wiki.bundle \\
        --work DIR [--embedder sentence-transformers/all-MiniLM-L6-v2] [--moves 10] [--clients 8] \\
        [--seconds 60] [--poll 1.0] [--out result.json]

Steps: clone the corpus, build the bundles of ``moves + 1`` commits spaced ``--step`` first-parent
commits apart (each built incrementally from the previous, the real model), start moto's S3 server
(``moto_server`` on 127.0.0.1, a subprocess) and publish them all; start two ``gitrag serve --from``
replica processes with empty caches; then run ``--clients`` loopback clients for ``--seconds``
(client i asks replica i % 2; half ``POST /search``, half ``POST /answer``) while the remote
``CURRENT`` moves ``--moves`` times, evenly spaced (``gitrag use --to``'s write).

Prints one JSON object: requests, failed requests (transport errors or non-200), mixed responses (a
document path not in the bundle of the commit the response names in ``index_version``), latency
percentiles, and per move the seconds until each replica's ``/health`` serves the new bundle
(convergence = poll interval + download + verification + open and warm-up).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.replica_publish import dummy_credentials, free_port, start_moto  # noqa: E402

QUERIES = ["diplomová práca", "vyhľadávanie v textoch", "strojové učenie", "spracovanie prirodzeného jazyka",
           "zadanie práce", "školiteľ", "neurónové siete", "webová aplikácia"]


def paths_in(body: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(body, dict):
        for key, value in body.items():
            if key == "document_path" and isinstance(value, str):
                found.add(value)
            else:
                found |= paths_in(value)
    elif isinstance(body, list):
        for item in body:
            found |= paths_in(item)
    return found


def first_parent_commits(repo: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "rev-list", "--first-parent", "HEAD"], check=True,
                         capture_output=True, text=True).stdout.split()
    return out[::-1]  # oldest first


async def run_load(bases: list[str], ids: list[str], docs: dict[str, set[str]], remote: Any, args: Any) -> dict:
    latencies: list[float] = []
    failures: list[str] = []
    mixed: list[str] = []
    counts = {"/search": 0, "/answer": 0}
    convergence: list[dict[str, Any]] = []
    stop = asyncio.Event()
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        async def client(i: int) -> None:
            base = bases[i % len(bases)]
            n = 0
            while not stop.is_set():
                n += 1
                query = QUERIES[(i + n) % len(QUERIES)]
                route, payload = ("/answer", {"query": query + "?"}) if (i // 2) % 2 else \
                    ("/search", {"query": query, "limit": 10})
                started = time.perf_counter()
                try:
                    async with http.post(base + route, json=payload) as resp:
                        body = await resp.json()
                        status = resp.status
                except (TimeoutError, aiohttp.ClientError) as exc:
                    failures.append(f"{route} {type(exc).__name__}")
                    continue
                latencies.append(time.perf_counter() - started)
                counts[route] += 1
                if status != 200:
                    failures.append(f"{route} {status} {body.get('reason')}")
                    continue
                bundle_id = body["index_version"]["bundle_id"]
                if not paths_in(body) <= docs[bundle_id]:
                    mixed.append(bundle_id)

        async def served(base: str) -> str | None:
            async with http.get(base + "/health") as resp:
                health = await resp.json()
            return health["bundle"]["bundle_id"] if health.get("bundle") else None

        async def mover() -> None:
            gap = args.seconds / (args.moves + 1)
            started = time.monotonic()
            for k in range(1, args.moves + 1):
                await asyncio.sleep(max(0.0, started + k * gap - time.monotonic()))
                target = ids[k]
                moved = time.monotonic()
                await asyncio.to_thread(remote.write_current, target)
                took: dict[str, float] = {}
                while len(took) < len(bases) and time.monotonic() - moved < gap * 3:
                    for base in bases:
                        if base not in took and await served(base) == target:
                            took[base] = round(time.monotonic() - moved, 2)
                    await asyncio.sleep(0.05)
                convergence.append({"move": k, "bundle_id": target, "seconds": [took.get(b) for b in bases]})
            await asyncio.sleep(max(0.0, started + args.seconds - time.monotonic()))
            stop.set()

        began = time.monotonic()
        await asyncio.gather(mover(), *(client(i) for i in range(args.clients)))
        wall = time.monotonic() - began
        healths = []
        for base in bases:
            async with http.get(base + "/health") as resp:
                healths.append((await resp.json())["replica"])
    qs = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 2 else [float("nan")] * 99
    worst = [max(s for s in c["seconds"] if s is not None) if all(s is not None for s in c["seconds"]) else None
             for c in convergence]
    return {
        "wall_s": round(wall, 1), "requests": len(latencies) + sum(1 for f in failures if "Error" in f),
        "by_route": counts, "failed": len(failures), "failures": failures[:20], "mixed": len(mixed),
        "latency_ms": {"p50": round(qs[49] * 1000, 1), "p95": round(qs[94] * 1000, 1), "p99": round(qs[98] * 1000, 1)},
        "moves": len(convergence), "convergence": convergence,
        "convergence_s": {"max": max((w for w in worst if w is not None), default=None),
                          "mean": round(statistics.mean(w for w in worst if w is not None), 2) if any(worst) else None,
                          "not_converged": sum(1 for w in worst if w is None)},
        "replicas": [{k: h.get(k) for k in ("serving", "remote_current", "in_sync", "fetches", "bytes_downloaded",
                                            "bytes_reused", "last_error")} for h in healths],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--embedder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--moves", type=int, default=10)
    parser.add_argument("--step", type=int, default=5, help="first-parent commits between two bundles")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--poll", type=float, default=1.0, help="replicas' --remote-poll-interval (s)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    from artifacts.remote import RemoteStore, make_client, publish_store
    from artifacts.store import Store
    from indexer.build import build_bundle

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    clone = work / "repo"
    if not clone.exists():
        subprocess.run(["git", "clone", "-q", args.corpus, str(clone)], check=True)
    commits = first_parent_commits(clone)[-(args.moves * args.step + 1)::args.step]
    store = Store(work / "store")
    ids: list[str] = []
    started = time.monotonic()
    for commit in commits:
        ids.append(build_bundle(clone, store.root, rev=commit, embedder=args.embedder).bundle_id)
    build_s = time.monotonic() - started
    docs = {}
    for bundle_id in ids:
        with open(store.bundle_path(bundle_id) / "docs.jsonl", encoding="utf-8") as handle:
            docs[bundle_id] = {json.loads(line)["path"] for line in handle if line.strip()}
    dummy_credentials()
    moto, endpoint = start_moto(work / "moto.log")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        bucket = f"load-{int(time.time())}"
        make_client(endpoint).create_bucket(Bucket=bucket)
        remote = RemoteStore(f"s3://{bucket}/wiki", endpoint_url=endpoint)
        publish_store(store, remote, bundle_ids=ids, move_current=False)
        remote.write_current(ids[0])
        bases = []
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("GITRAG_")}, "PYTHONPATH": str(ROOT)}
        for n in range(2):
            port = free_port()
            log = open(work / f"replica{n}.log", "wb")  # noqa: SIM115 - closed with the process
            cache = work / f"cache{n}"
            shutil.rmtree(cache, ignore_errors=True)  # an empty cache: every bundle is downloaded
            procs.append(subprocess.Popen(
                [sys.executable, "-c", "from query.cli.main import serve_command; serve_command()",
                 "--from", remote.url, "--workers", "1",  # one process per replica, as measured before the default
                 "--cache", str(cache), "--endpoint-url", endpoint, "--port", str(port),
                 "--remote-poll-interval", str(args.poll)], env=env, stdout=log, stderr=log))
            bases.append(f"http://127.0.0.1:{port}")

        async def ready() -> float:
            began = time.monotonic()
            async with aiohttp.ClientSession() as http:
                for base in bases:
                    while True:
                        try:
                            async with http.get(base + "/health") as resp:
                                if resp.status == 200:
                                    break
                        except aiohttp.ClientError:
                            pass
                        if time.monotonic() - began > 300:
                            raise SystemExit("replicas did not start")
                        await asyncio.sleep(0.2)
            return time.monotonic() - began

        first_serve_s = asyncio.run(ready())
        result = asyncio.run(run_load(bases, ids, docs, remote, args))
        bundle_bytes = sum(f.size for f in store.list_bundles()[0].manifest.files)
        result = {"corpus": Path(args.corpus).name, "embedder": args.embedder, "bundles": len(ids),
                  "documents": len(docs[ids[-1]]), "bundle_bytes": bundle_bytes, "build_s": round(build_s, 1),
                  "clients": args.clients, "seconds": args.seconds, "poll_s": args.poll,
                  "first_serve_from_empty_cache_s": round(first_serve_s, 1), **result}
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)
        moto.terminate()
        moto.wait(timeout=10)
    text = json.dumps(result, indent=2, ensure_ascii=False)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
