"""`gitrag serve --workers N`: N real processes on one loopback port (SO_REUSEPORT), over real HTTP.

What is per process and what is shared, each pinned here: CURRENT flips under load with zero failed
requests, a reload broadcast reaching every worker, the failed-key limit split so that all workers
together allow no more than configured, /metrics summing every worker's request counters, webhook
replays recognised across workers (the job queue is the store's), a worker that dies restarted,
a port in use refused before any worker starts, SIGTERM stopping every worker.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from artifacts.jobs import JobQueue
from artifacts.store import Store
from indexer.build import build_bundle
from query.server.workers import (
    WORKER_BASE_BYTES,
    WORKER_BUNDLE_FACTOR,
    available_memory,
    bundle_bytes,
    default_worker_count,
    usable_cores,
    worker_count,
)
from tests.conftest import RepoBuilder

pytestmark = pytest.mark.e2e

GITRAG = str(Path(sys.executable).with_name("gitrag"))
ADMIN_KEY = "admin-key-" + "a" * 30
SEARCH_KEY = "search-key-" + "s" * 30
SECRET = "webhook-secret-" + "w" * 30


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _two_bundles(repo: RepoBuilder, store: Store, embedder: Any) -> tuple[dict[str, str], dict[str, set[str]]]:
    """Bundles ``alpha`` and ``beta`` (6 documents each, one shared path); returns ids and paths per commit."""
    ids: dict[str, str] = {}
    docs: dict[str, set[str]] = {}
    for name in ("alpha", "beta"):
        for old in (repo.path / "wiki").glob("*.md") if (repo.path / "wiki").exists() else []:
            old.unlink()
        repo.write("wiki/common.md", "# Spoločné\n\nSpoločné slovo pre oba zväzky.\n")
        for i in range(5):
            repo.write(f"wiki/{name}-{i}.md", f"# {name} {i}\n\nSpoločné slovo a {name} číslo {i}.\n")
        commit = repo.commit(name)
        ids[name] = build_bundle(repo.path, store.root, embedder=embedder).bundle_id
        docs[commit] = {"wiki/common.md", *(f"wiki/{name}-{i}.md" for i in range(5))}
    return ids, docs


class Serve:
    """``gitrag serve --workers N`` (``None``: no ``--workers``) as a child process, its JSON log in a file."""

    def __init__(self, store: Store, tmp_path: Path, workers: int | None = 2, *args: str,
                 config: str | None = None) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / f"serve-{self.port}.log"
        argv = [GITRAG, "serve", "--store", str(store.root), "--port", str(self.port),
                *(["--workers", str(workers)] if workers is not None else []), *args]
        if config is not None:
            path = tmp_path / f"server-{self.port}.toml"
            path.write_text(config, encoding="utf-8")
            argv += ["--config", str(path)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITRAG_")}
        self._log = open(self.log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=self._log)

    def log_lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def ready_workers(self) -> set[int]:
        return {line["worker"] for line in self.log_lines() if line.get("event") == "listening" and "worker" in line}

    def wait_listening(self, count: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.ready_workers()) < count:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(self.log_path.read_text(encoding="utf-8"))
            time.sleep(0.05)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=40)
        finally:
            self._log.close()


async def _fresh(method: str, url: str, **kwargs: Any) -> tuple[int, Any]:
    """One request on a new connection (so that the kernel may pick any worker)."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
        async with http.request(method, url, **kwargs) as resp:
            text = await resp.text()
            try:
                return resp.status, json.loads(text)
            except ValueError:
                return resp.status, text


async def _workers_serving(base: str, tries: int = 40, headers: dict[str, str] | None = None) -> dict[int, str]:
    """Worker index -> served bundle id, from /health on fresh connections."""
    seen: dict[int, str] = {}
    for _ in range(tries):
        status, body = await _fresh("GET", base + "/health", headers=headers)
        assert status == 200, body
        seen[body["worker"]["index"]] = body["bundle"]["bundle_id"]
    return seen


def _run(serve: Serve, scenario: Callable[[], Awaitable[None]]) -> None:
    try:
        asyncio.run(scenario())
    finally:
        status = serve.stop()
    assert status == 0, serve.log_path.read_text(encoding="utf-8")


def test_current_flips_under_load_with_zero_failures_on_two_workers(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                   hash_embedder) -> None:
    """Eight clients search while CURRENT flips 40 times (reload on one worker, broadcast to the other,
    and polling every 0.2 s): no failed request, no response mixing two bundles, both workers answer,
    and both end on the last CURRENT."""
    store = Store(tmp_path / "store")
    ids, docs = _two_bundles(repo, store, hash_embedder)
    serve = Serve(store, tmp_path, 2, "--poll-interval", "0.2")
    serve.wait_listening(2)

    async def scenario() -> None:
        failures: list[str] = []
        mixed: list[str] = []
        seen: set[str] = set()
        stop = asyncio.Event()
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
            query = {"query": "spoločné slovo", "limit": 20}

            async def client() -> int:
                done = 0
                while not stop.is_set():
                    try:
                        async with http.post(serve.base + "/search", json=query) as resp:
                            body = await resp.json()
                            ok = resp.status == 200
                    except aiohttp.ClientError as exc:
                        failures.append(type(exc).__name__)
                        continue
                    done += 1
                    if not ok:
                        failures.append(str(body.get("reason")))
                        continue
                    commit = body["index_version"]["commit"]
                    seen.add(commit)
                    if not {r["document_path"] for r in body["results"]} <= docs[commit]:
                        mixed.append(commit)
                return done

            async def flipper() -> None:
                for i in range(40):
                    store.set_current(ids["alpha" if i % 2 == 0 else "beta"])
                    async with http.post(serve.base + "/admin/reload") as resp:
                        assert resp.status == 200
                    await asyncio.sleep(0.05)
                store.set_current(ids["beta"])
                await asyncio.sleep(1.0)
                stop.set()

            counts = await asyncio.gather(flipper(), *(client() for _ in range(8)))
        assert failures == [] and mixed == []
        assert sum(c for c in counts[1:] if c) > 100 and len(seen) == 2
        assert await _workers_serving(serve.base) == {0: ids["beta"], 1: ids["beta"]}

    _run(serve, scenario)
    swaps = [line for line in serve.log_lines() if line.get("event") == "swap"]
    assert {line["worker"] for line in swaps} == {0, 1}


def test_admin_reload_reaches_every_worker_at_once(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                  hash_embedder) -> None:
    """With polling every 60 s, only the broadcast can move the worker that did not get POST /admin/reload."""
    store = Store(tmp_path / "store")
    ids, _ = _two_bundles(repo, store, hash_embedder)
    serve = Serve(store, tmp_path, 2, "--poll-interval", "60")
    serve.wait_listening(2)

    async def scenario() -> None:
        assert await _workers_serving(serve.base) == {0: ids["beta"], 1: ids["beta"]}
        store.set_current(ids["alpha"])
        status, body = await _fresh("POST", serve.base + "/admin/reload")
        assert status == 200 and body["served"] == ids["alpha"] and body["swapped"] is True
        deadline = time.monotonic() + 10
        while await _workers_serving(serve.base, tries=12) != {0: ids["alpha"], 1: ids["alpha"]}:
            assert time.monotonic() < deadline, "the other worker did not reload"
            await asyncio.sleep(0.1)

    _run(serve, scenario)


def test_failed_key_limit_is_split_between_workers(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                   hash_embedder) -> None:
    """auth_failures_burst = 4 over 2 workers: 30 wrong keys on fresh connections get at most 4
    answers 401 (the rest 429), as one process would allow; then that address is refused by both for
    keys with that prefix (the failed-key buckets are per address and key prefix), a good key passes."""
    store = Store(tmp_path / "store")
    _two_bundles(repo, store, hash_embedder)
    config = (f'search_key = "{SEARCH_KEY}"\nadmin_key = "{ADMIN_KEY}"\nauth_failures_per_minute = 1\n'
              'auth_failures_burst = 4\nrate_limit_per_minute = 100000\nrate_limit_burst = 10000\n')
    serve = Serve(store, tmp_path, 2, config=config)
    serve.wait_listening(2)

    async def scenario() -> None:
        statuses = [(await _fresh("POST", serve.base + "/search", json={"query": "slovo"},
                                  headers={"X-API-Key": SEARCH_KEY[:4] + "wrong-key-" + "x" * 30}))[0]
                    for _ in range(30)]
        assert set(statuses) <= {401, 429} and 2 <= statuses.count(401) <= 4, statuses
        right = [(await _fresh("POST", serve.base + "/search", json={"query": "slovo"},
                               headers={"X-API-Key": SEARCH_KEY}))[0] for _ in range(10)]
        assert right == [429] * 10  # this address has spent the attempts of this prefix on every worker
        other = [(await _fresh("POST", serve.base + "/search", json={"query": "slovo"},
                               headers={"X-API-Key": ADMIN_KEY}))[0] for _ in range(4)]
        assert other == [200] * 4  # another key at the same address is not locked out

    _run(serve, scenario)
    refused = [line for line in serve.log_lines() if line.get("route") == "/search" and line.get("status") == 401]
    assert {line["worker"] for line in refused} == {0, 1}  # both workers took (and limited) attempts


def test_metrics_sum_the_requests_of_every_worker(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                  hash_embedder) -> None:
    store = Store(tmp_path / "store")
    _two_bundles(repo, store, hash_embedder)
    serve = Serve(store, tmp_path, 2)
    serve.wait_listening(2)

    async def scenario() -> None:
        answered_by: set[int] = set()
        for _ in range(20):
            status, body = await _fresh("POST", serve.base + "/search", json={"query": "spoločné slovo"})
            assert status == 200
        for _ in range(10):
            _, health = await _fresh("GET", serve.base + "/health")
            answered_by.add(health["worker"]["index"])
        assert answered_by == {0, 1}  # twenty fresh connections did reach both
        workers_scraped: set[str] = set()
        for _ in range(10):
            status, text = await _fresh("GET", serve.base + "/metrics")
            assert status == 200
            families = {f.name: f for f in text_string_to_metric_families(text)}
            searches = sum(s.value for s in families["gitrag_http_requests"].samples
                           if s.name.endswith("_total") and s.labels.get("route") == "/search")
            assert searches == 20  # both workers' requests, whichever answered the scrape
            ready = families["gitrag_bundle_ready"].samples
            assert len(ready) == 1 and ready[0].value == 1
            workers_scraped.add(ready[0].labels["worker"])
        assert workers_scraped <= {"0", "1"} and workers_scraped

    _run(serve, scenario)


def test_webhook_replays_are_recognised_across_workers(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                       hash_embedder) -> None:
    """The job queue and its replay keys are the store's (SQLite), so a signed push replayed on fresh
    connections, whichever worker gets it, is one job."""
    store = Store(tmp_path / "store")
    _two_bundles(repo, store, hash_embedder)
    upstream = tmp_path / "upstream.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.path), str(upstream)], check=True)
    config = (f'admin_key = "{ADMIN_KEY}"\nspawn_worker = false\n[webhook]\nsecret = "{SECRET}"\n'
              f'repository = "owner/wiki"\nbranch = "main"\nremote = "{upstream}"\n'
              f'mirror = "{tmp_path / "mirror.git"}"\n')
    serve = Serve(store, tmp_path, 2, config=config)
    serve.wait_listening(2)
    body = json.dumps({"ref": "refs/heads/main", "before": "0" * 40, "after": "c" * 40,
                       "repository": {"full_name": "owner/wiki"}}).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()

    async def scenario() -> None:
        replies = []
        for n in range(12):
            headers = {"Content-Type": "application/json", "X-GitHub-Event": "push", "X-GitHub-Delivery": f"r-{n}",
                       "X-Hub-Signature-256": signature}
            status, reply = await _fresh("POST", serve.base + "/webhook/github", data=body, headers=headers)
            assert status == 202, reply
            replies.append(reply)
        assert len({r["job_id"] for r in replies}) == 1
        assert [r["duplicate"] for r in replies] == [False] + [True] * 11

    _run(serve, scenario)
    assert len(JobQueue(store.root).list_jobs()) == 1
    webhook_lines = [line for line in serve.log_lines() if line.get("route") == "/webhook/github"]
    assert {line["worker"] for line in webhook_lines} == {0, 1}  # both workers took deliveries


def test_a_dead_worker_is_restarted_and_sigterm_stops_all(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                          hash_embedder) -> None:
    store = Store(tmp_path / "store")
    _two_bundles(repo, store, hash_embedder)
    serve = Serve(store, tmp_path, 2)
    serve.wait_listening(2)
    pids = {line["worker"]: line for line in serve.log_lines() if line.get("event") == "worker_ready"}
    assert set(pids) == {0, 1}
    children = _children(serve.proc.pid)
    assert len(children) == 2
    os.kill(children[0], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while len([line for line in serve.log_lines() if line.get("event") == "listening"]) < 3:
        assert time.monotonic() < deadline, serve.log_path.read_text(encoding="utf-8")
        time.sleep(0.1)
    assert any(line.get("event") == "worker_restart" for line in serve.log_lines())

    async def scenario() -> None:
        assert set(await _workers_serving(serve.base)) == {0, 1}

    asyncio.run(scenario())
    now = _children(serve.proc.pid)
    assert len(now) == 2 and children[0] not in now
    assert serve.stop() == 0
    for pid in now:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


def test_a_port_in_use_stops_before_any_worker_starts(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                      hash_embedder) -> None:
    store = Store(tmp_path / "store")
    _two_bundles(repo, store, hash_embedder)
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # even a SO_REUSEPORT listener is noticed
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([GITRAG, "serve", "--store", str(store.root), "--port", str(port), "--workers", "2"],
                              capture_output=True, text=True, timeout=60,
                              env={k: v for k, v in os.environ.items() if not k.startswith("GITRAG_")})
    assert done.returncode == 1 and "cannot listen" in done.stderr
    assert "worker_ready" not in done.stderr


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return sorted(found)


def test_default_worker_count_is_the_usable_cores_capped_by_memory() -> None:
    """One worker per usable core while the available memory holds one opened bundle per worker; at least 1."""
    gib = 2**30
    base = WORKER_BASE_BYTES
    assert worker_count(2, 24 * gib, 300 * 2**20).count == 2
    assert worker_count(8, None, 10 * gib).count == 8  # memory unknown: no cap
    per_worker = int(base + WORKER_BUNDLE_FACTOR * gib)
    assert worker_count(8, 3 * per_worker + 1, gib).count == 3  # memory for three
    assert worker_count(4, per_worker // 2, gib).count == 1  # never below one
    assert worker_count(0, 24 * gib, 0).count == 1
    assert worker_count(2, 24 * gib, gib).per_worker == per_worker


def test_available_memory_and_bundle_bytes_read_the_system(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   20000000 kB\n",
                       encoding="ascii")
    assert available_memory(str(meminfo)) == 20000000 * 1024
    assert available_memory(str(tmp_path / "missing")) is None
    (tmp_path / "bundle" / "text").mkdir(parents=True)
    (tmp_path / "bundle" / "manifest.json").write_bytes(b"x" * 10)
    (tmp_path / "bundle" / "text" / "seg").write_bytes(b"y" * 32)
    assert bundle_bytes(tmp_path / "bundle") == 42
    assert bundle_bytes(None) == 0 and bundle_bytes(tmp_path / "missing") == 0
    assert usable_cores() == len(os.sched_getaffinity(0))


def test_serve_without_workers_starts_one_per_core_the_first_alone(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                    hash_embedder) -> None:
    """``gitrag serve`` with no ``--workers`` runs :func:`default_worker_count` processes; worker 0 listens
    before any other worker starts (so the first answer is not delayed by the others' start-up)."""
    store = Store(tmp_path / "store")
    ids, _docs = _two_bundles(repo, store, hash_embedder)
    expected = default_worker_count(store.current_path()).count
    if expected < 2:
        pytest.skip("one usable core (or too little memory): the default is a single process")
    serve = Serve(store, tmp_path, None)
    serve.wait_listening(expected)

    async def scenario() -> None:
        status, body = await _fresh("GET", serve.base + "/health")
        assert status == 200 and body["worker"]["count"] == expected
        assert set(await _workers_serving(serve.base)) == set(range(expected))

    _run(serve, scenario)
    lines = serve.log_lines()
    first_listening = next(i for i, line in enumerate(lines)
                           if line.get("event") == "listening" and line.get("worker") == 0)
    first_other = next(i for i, line in enumerate(lines) if line.get("worker", 0) != 0)
    assert first_listening < first_other
