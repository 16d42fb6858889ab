"""Measure ``POST /search`` latency and throughput of a real ``gitrag serve`` process.

Starts ``gitrag serve`` on a free loopback port over an existing store, then for each concurrency
level runs that many clients for a fixed time over a fixed query list and prints one JSON line per
level: requests, errors, requests/s, latency p50/p95/p99/max (ms), server RSS (MB).

``--workers 1,2`` starts one server per worker count (``gitrag serve --workers N``) and runs every
level on each, alternating, so the rows compare side by side under the same machine load; each
server's lines are named ``gitrag-w<N>`` and a final ``summary`` line per server gives the req/s
at each level relative to concurrency 1.  ``default`` in the list is ``gitrag serve`` without
``--workers`` (``gitrag-default``; its summary names the worker count it chose, from ``/health``).

``--compare-tree DIR`` starts a second server importing gitrag from another checkout (e.g. the code
before a change) on the same store, and runs every level on both, alternating, ``--rounds`` times.
``--hostile`` adds, per server and concurrency level, a run where one more client keeps sending
the hostile requests of issue 12 (a 60 KB ``filter.tags`` list, then a 1,000-letter word): the line
``"hostile": true`` shows what they do to the normal clients' latency.

    .venv/bin/python bench/server_load.py --store STORE [--concurrency 1,8,32] [--seconds 5] \
        [--workers 1,2] [--compare-tree DIR] [--rounds 1] [--hostile]

``--swap A,B`` (two bundle ids of the store, or prefixes) measures swaps under load instead: one server
at a time (``--compare-tree`` adds a second, run after the first: both read the store's ``CURRENT``),
``--concurrency`` clients (the first level) send a mix of ``/search``, ``/graph``, ``/answer`` and
``/document`` for ``--before`` seconds, then ``POST /admin/use`` flips ``CURRENT`` ``--swaps`` times
between A and B, one every ``--swap-every`` seconds, then ``--after`` seconds more.  Each request is
put in one phase by the time it started: ``before`` (no swap yet), ``during`` (from a swap's start
until 1 s after its end: the requests that arrive right after a swap), ``between`` (the rest after the
first swap).  One JSON line per server, phase and route (``all`` = every route): requests, failed,
p50/p99/max (ms); one line per swap (seconds the swap took, the warm-up probes' seconds from
``/health``); a summary line per server (failed, ``during`` vs ``before`` p99, the slowest request
that started within 2 s after a swap ended)::

    .venv/bin/python bench/server_load.py --store STORE --swap A,B --concurrency 8 --swaps 10

The store is built beforehand, e.g. from the obsidian-help corpus::

    git clone ../shared/corpora/obsidian-help.bundle /tmp/obsidian-help
    .venv/bin/gitrag build --repo /tmp/obsidian-help --store /tmp/obsidian-store --embedder hash-64
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
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


def _hostile() -> list[dict[str, object]]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [{"query": "obsidian sync", "filter": {"tags": [letters[i % 26] * 3 + f"{i:09d}" for i in range(4000)]}},
            {"query": "".join(letters[(i * 7) % 26] for i in range(1000))}]


async def _level(base: str, concurrency: int, seconds: float, limit: int, hostile: bool = False) -> dict[str, object]:
    latencies: list[float] = []
    errors = 0
    hostile_done: list[tuple[int, float]] = []
    deadline = time.monotonic() + seconds
    connector = aiohttp.TCPConnector(limit=concurrency + 1)
    async with aiohttp.ClientSession(connector=connector) as http:
        async def attacker() -> None:
            i = 0
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    async with http.post(base + "/search", json=_hostile()[i % 2],
                                         timeout=aiohttp.ClientTimeout(total=max(1.0, deadline - time.monotonic()))
                                         ) as resp:
                        await resp.read()
                        hostile_done.append((resp.status, time.perf_counter() - started))
                except (TimeoutError, aiohttp.ClientError):
                    hostile_done.append((0, time.perf_counter() - started))
                i += 1

        async def client(offset: int) -> None:
            nonlocal errors
            i = offset
            while time.monotonic() < deadline:
                query = QUERIES[i % len(QUERIES)]
                i += 1
                started = time.perf_counter()
                try:
                    # Beside a hostile client, a request still waiting 10 s after the level ends is an error.
                    wait = aiohttp.ClientTimeout(total=max(1.0, deadline - time.monotonic()) + 10) if hostile else None
                    async with http.post(base + "/search", json={"query": query, "limit": limit},
                                         timeout=wait) as resp:
                        await resp.read()
                        if resp.status != 200:
                            errors += 1
                            continue
                except (TimeoutError, aiohttp.ClientError):
                    errors += 1
                    continue
                latencies.append(time.perf_counter() - started)

        started = time.monotonic()
        await asyncio.gather(*(client(k) for k in range(concurrency)), *([attacker()] if hostile else []))
        elapsed = time.monotonic() - started
    qs = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else [float("nan")] * 99
    extra: dict[str, object] = {}
    if hostile:
        extra = {"hostile": True, "hostile_requests": len(hostile_done),
                 "hostile_statuses": sorted({status for status, _ in hostile_done}),
                 "hostile_max_ms": round(max((t for _, t in hostile_done), default=float("nan")) * 1000, 1)}
    return {**extra, "concurrency": concurrency, "requests": len(latencies), "errors": errors,
            "rps": round(len(latencies) / elapsed, 3), "elapsed_s": round(elapsed, 1),
            "p50_ms": round(qs[49] * 1000, 1),
            "p95_ms": round(qs[94] * 1000, 1), "p99_ms": round(qs[98] * 1000, 1),
            "max_ms": round(max(latencies, default=float("nan")) * 1000, 1)}


MIX = [("/search", 4), ("/graph", 2), ("/answer", 1), ("/document", 1)]
"""Routes of the ``--swap`` load and their shares."""


def _mixed_body(route: str, i: int, path: str) -> dict[str, object]:
    query = QUERIES[i % len(QUERIES)]
    if route == "/document":
        return {"path": path}
    if route == "/answer":
        return {"query": query}  # the extractive generator: no model provider
    return {"query": query, "limit": 10} if route == "/search" else {"query": query}


def _stats(latencies: list[float]) -> dict[str, float]:
    if not latencies:
        return {"p50_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan")}
    qs = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else latencies * 99
    return {"p50_ms": round(qs[49] * 1000, 1), "p99_ms": round(qs[98] * 1000, 1),
            "max_ms": round(max(latencies) * 1000, 1)}


async def _swap_run(server: Server, bundles: list[str], concurrency: int, before: float, swaps: int,
                    every: float, after: float) -> list[dict[str, object]]:
    """Steady mixed load on ``server`` while ``/admin/use`` flips between ``bundles``; rows to print."""
    done: list[tuple[str, float, float, int]] = []  # route, started, ended (monotonic s), status (0: failed)
    swap_log: list[dict[str, object]] = []
    stop = asyncio.Event()
    weighted = [route for route, share in MIX for _ in range(share)]
    connector = aiohttp.TCPConnector(limit=concurrency + 2)
    async with aiohttp.ClientSession(connector=connector) as http:
        async with http.post(server.base + "/search", json={"query": QUERIES[0]}) as resp:
            path = str((await resp.json())["results"][0]["document_path"])
        for k, (route, _) in enumerate(MIX):  # each route once: what a process pays once is not in "before"
            async with http.post(server.base + route, json=_mixed_body(route, k, path),
                                 timeout=aiohttp.ClientTimeout(total=300)) as resp:
                await resp.read()

        async def client(offset: int) -> None:
            i = offset
            while not stop.is_set():
                route = weighted[i % len(weighted)]
                body = _mixed_body(route, i, path)
                i += 1
                started = time.monotonic()
                status = 0
                try:
                    async with http.post(server.base + route, json=body,
                                         timeout=aiohttp.ClientTimeout(total=120)) as resp:
                        await resp.read()
                        status = resp.status
                except (TimeoutError, aiohttp.ClientError):
                    status = 0
                done.append((route, started, time.monotonic(), status))

        async def swapper() -> None:
            await asyncio.sleep(before)
            for k in range(swaps):
                target = bundles[(k + 1) % 2]
                started = time.monotonic()
                async with http.post(server.base + "/admin/use", json={"bundle": target},
                                     timeout=aiohttp.ClientTimeout(total=600)) as resp:
                    reply = await resp.json()
                ended = time.monotonic()
                async with http.get(server.base + "/health") as resp:
                    health = await resp.json()
                swap_log.append({"server": server.name, "swap": k + 1, "target": target[:20],
                                 "status": resp.status, "served": str(reply.get("served"))[:20],
                                 "swap_s": round(ended - started, 2), "warm_s": health.get("warm_s"),
                                 "started": started, "ended": ended,
                                 "load_avg_1m": round(os.getloadavg()[0], 1)})
                await asyncio.sleep(max(0.0, every - (ended - started)))
            await asyncio.sleep(after)
            stop.set()

        first = time.monotonic()
        await asyncio.gather(swapper(), *(client(k) for k in range(concurrency)))
        total_s = time.monotonic() - first
    windows = [(float(s["started"]), float(s["ended"])) for s in swap_log]  # type: ignore[arg-type]

    def phase(started: float) -> str:
        if not windows or started < windows[0][0]:
            return "before"
        if any(a <= started <= b + 1.0 for a, b in windows):
            return "during"
        return "between"

    rows: list[dict[str, object]] = []
    for name in ("before", "during", "between"):
        for route in ["all"] + [r for r, _ in MIX]:
            picked = [(e - s, status) for r, s, e, status in done if phase(s) == name and route in ("all", r)]
            lat = [d for d, status in picked if status == 200]
            rows.append({"server": server.name, "phase": name, "route": route, "requests": len(picked),
                         "failed": sum(1 for _, status in picked if status != 200), **_stats(lat)})
    after_swap = [e - s for _, s, e, status in done if any(b < s <= b + 2.0 for _, b in windows)]
    by = {(r["phase"], r["route"]): r for r in rows}
    summary = {"summary": server.name, "concurrency": concurrency, "swaps": len(swap_log),
               "requests": len(done), "failed": sum(1 for *_, status in done if status != 200),
               "rps": round(len(done) / total_s, 2),
               "p99_before_ms": by[("before", "all")]["p99_ms"], "p99_during_ms": by[("during", "all")]["p99_ms"],
               "p99_between_ms": by[("between", "all")]["p99_ms"],
               "max_within_2s_after_swap_ms": round(max(after_swap, default=float("nan")) * 1000, 1),
               "swap_s_max": max((float(s["swap_s"]) for s in swap_log), default=float("nan")),  # type: ignore[arg-type]
               "load_avg_1m": round(os.getloadavg()[0], 1)}
    for s in swap_log:
        s.pop("started"), s.pop("ended")
    return [*swap_log, *rows, summary]


class Server:
    """A ``gitrag serve`` process importing gitrag from ``tree`` (``None``: as installed / ``PYTHONPATH``)."""

    def __init__(self, name: str, store: str, tree: str | None, workers: int | None = 1) -> None:
        self.name = name
        self.workers = workers
        port = _free_port()
        self.base = f"http://127.0.0.1:{port}"
        gitrag = str(Path(sys.executable).with_name("gitrag"))
        config = Path(tempfile.mkdtemp(prefix="gitrag-bench-")) / "server.toml"  # not in the store: may be read-only
        self.config_dir = config.parent
        config.write_text("rate_limit_per_minute = 1000000\nrate_limit_burst = 100000\n"
                          "poll_interval = 3600.0\n", encoding="utf-8")  # swaps come from the bench only
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITRAG_") or k == "GITRAG_EMBEDDER"}
        if tree is not None:
            env["PYTHONPATH"] = str(Path(tree).resolve())
        self.started = time.monotonic()
        argv = [gitrag, "serve", "--store", store, "--port", str(port), "--config", str(config)]
        if workers is not None:  # None: gitrag serve's own default
            argv += ["--workers", str(workers)]
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ready_s = self.all_ready_s = float("nan")

    async def wait_ready(self) -> None:
        async with aiohttp.ClientSession() as http:
            for _ in range(6000):
                try:
                    async with http.get(self.base + "/health") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)
            self.ready_s = round(time.monotonic() - self.started, 2)
        # Every worker listening (worker 0 starts alone, the others after it): the levels need all of them.
        # Without --workers, this is also how the bench learns the count gitrag serve chose.
        count = await self._listening_workers()
        self.all_ready_s = round(time.monotonic() - self.started, 2)
        if self.workers is None:
            self.workers = count
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
            for query in QUERIES[:4 * self.workers]:  # warm-up on new connections: every worker gets some
                await (await http.post(self.base + "/search", json={"query": query})).read()

    async def _listening_workers(self) -> int:
        """Wait until every worker answers ``/health`` on fresh connections (the first starts alone); their count."""
        seen: set[int] = set()
        count = 1
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
            for _ in range(2000):
                async with http.get(self.base + "/health") as resp:
                    worker = (await resp.json()).get("worker")
                if worker is None:  # one process
                    return 1
                count = int(worker["count"])
                seen.add(int(worker["index"]))
                if len(seen) == count:
                    break
                await asyncio.sleep(0.02)
        return count

    def rss_mb(self) -> float:
        """Resident memory of the server and its worker processes (MB)."""
        pids = [self.proc.pid] + _children(self.proc.pid)
        return round(sum(_rss_mb(pid) for pid in pids), 1)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.config_dir, ignore_errors=True)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--compare-tree", default=None, help="also serve gitrag from this checkout (gitrag-compare)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--hostile", action="store_true", help="also run each level beside a hostile client")
    parser.add_argument("--workers", default="1",
                        help="comma-separated worker counts, one server each (1,2; default: no --workers)")
    parser.add_argument("--swap", default=None, help="A,B: measure swaps between these two bundles under load")
    parser.add_argument("--swaps", type=int, default=10)
    parser.add_argument("--swap-every", type=float, default=8.0, help="seconds from one swap's start to the next")
    parser.add_argument("--before", type=float, default=20.0, help="seconds of load before the first swap")
    parser.add_argument("--after", type=float, default=8.0, help="seconds of load after the last swap")
    args = parser.parse_args()
    if args.swap:
        return _main_swap(args)
    counts: list[int | None] = [None if w == "default" else int(w) for w in args.workers.split(",")]
    specs: list[tuple[str, str | None, int | None]] = [
        ("gitrag" if counts == [1] else "gitrag-default" if w is None else f"gitrag-w{w}", None, w) for w in counts]
    if args.compare_tree:
        specs.append(("gitrag-compare", args.compare_tree, 1))
    servers: list[Server] = []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the servers (finally below) on kill too
    try:
        async def run() -> None:
            for name, tree, workers in specs:  # one at a time: each start-up has the machine to itself
                server = Server(name, args.store, tree, workers)
                servers.append(server)
                await server.wait_ready()
                print(json.dumps({"server": server.name, "workers": server.workers, "ready_s": server.ready_s,
                                  "all_workers_ready_s": server.all_ready_s,
                                  "load_avg_1m": round(os.getloadavg()[0], 1)}), flush=True)
            modes = [False, True] if args.hostile else [False]
            rps: dict[tuple[str, int], list[float]] = {}
            for hostile in modes:  # hostile runs last: the old code may keep computing after they end
                for _ in range(args.rounds):
                    for level in (int(c) for c in args.concurrency.split(",")):
                        for server in servers:
                            row = await _level(server.base, level, args.seconds, args.limit, hostile)
                            row = {"server": server.name, **row, "server_rss_mb": server.rss_mb(),
                                   "load_avg_1m": round(os.getloadavg()[0], 1)}
                            if not hostile:
                                rps.setdefault((server.name, level), []).append(float(row["rps"]))  # type: ignore[arg-type]
                            print(json.dumps(row), flush=True)
            for server in servers:
                base = statistics.mean(rps.get((server.name, 1), [float("nan")]))
                ratios = {f"c{level}_over_c1": round(statistics.mean(v) / base, 2)
                          for (name, level), v in sorted(rps.items(), key=lambda kv: kv[0][1])
                          if name == server.name and level != 1}
                print(json.dumps({"summary": server.name, "workers": server.workers, "ready_s": server.ready_s,
                                  "all_workers_ready_s": server.all_ready_s,
                                  "rps_c1": round(base, 3), **ratios}), flush=True)

        asyncio.run(run())
    finally:
        for server in servers:  # all at once: each stops gracefully, finishing its requests
            server.proc.terminate()
        for server in servers:
            server.stop()
    return 0


def _main_swap(args: argparse.Namespace) -> int:
    bundles = args.swap.split(",")
    if len(bundles) != 2:
        raise SystemExit("--swap takes two bundles: A,B")
    specs: list[tuple[str, str | None]] = [("gitrag", None)]
    if args.compare_tree:
        specs.append(("gitrag-compare", args.compare_tree))
    concurrency = int(args.concurrency.split(",")[0])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for bundle in (bundles[1], bundles[0]):  # both verified once now (remembered), every server starts on A
        subprocess.run([str(Path(sys.executable).with_name("gitrag")), "use", "--store", args.store, bundle],
                       check=True, stdout=subprocess.DEVNULL)
    for name, tree in specs:  # one at a time: they share the store's CURRENT
        server = Server(name, args.store, tree)
        try:
            async def run(server: Server = server) -> None:
                await server.wait_ready()
                print(json.dumps({"server": server.name, "ready_s": server.ready_s,
                                  "load_avg_1m": round(os.getloadavg()[0], 1)}), flush=True)
                for row in await _swap_run(server, bundles, concurrency, args.before, args.swaps, args.swap_every,
                                           args.after):
                    print(json.dumps(row), flush=True)

            asyncio.run(run())
        finally:
            server.stop()
        subprocess.run([str(Path(sys.executable).with_name("gitrag")), "use", "--store", args.store, bundles[0]],
                       check=True, stdout=subprocess.DEVNULL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
