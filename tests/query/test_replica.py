"""Query replicas following a remote CURRENT on a real S3 server (moto's, on 127.0.0.1) over real HTTP.

Covered: a replica starting from an empty cache, swaps on a new remote CURRENT under concurrent
/search and /answer load (0 failed, 0 mixed), a corrupted remote object (refused, the old bundle
keeps serving, /health says why), two replicas converging, ``at=`` of an old commit fetched on
demand into the bounded cache, and credentials never in the logs of a `gitrag serve --from` process.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from artifacts.remote import RemoteStore, publish_store
from artifacts.store import Store
from indexer.build import build_bundle
from query.server import replica as replica_module
from query.server.app import create_app
from query.server.replica import Replica
from query.server.runner import start_server
from tests.conftest import TEST_AWS_KEY_ID, TEST_AWS_SECRET, RepoBuilder

ROOT = Path(__file__).resolve().parents[2]
POLL = 0.1


def _commit(repo: RepoBuilder, store: Path, embedder, name: str, pages: int = 4):  # type: ignore[no-untyped-def]
    """Replace the wiki with ``pages`` pages named after ``name``; build; return (commit, bundle id, paths)."""
    for old in (repo.path / "wiki").glob("*.md") if (repo.path / "wiki").exists() else []:
        old.unlink()
    repo.write("wiki/common.md", "# Spoločné\n\nSpoločné slovo pre všetky zväzky.\n")
    for i in range(pages):
        repo.write(f"wiki/{name}-{i}.md", f"# {name} {i}\n\nSpoločné slovo a {name} číslo {i}.\n")
    commit = repo.commit(name)
    result = build_bundle(repo.path, store, embedder=embedder)
    return commit, result.bundle_id, {"wiki/common.md", *(f"wiki/{name}-{i}.md" for i in range(pages))}


def _paths(body: Any) -> set[str]:
    """Every ``document_path`` anywhere in a response body."""
    found: set[str] = set()
    if isinstance(body, dict):
        for key, value in body.items():
            if key == "document_path" and isinstance(value, str):
                found.add(value)
            else:
                found |= _paths(value)
    elif isinstance(body, list):
        for item in body:
            found |= _paths(item)
    return found


class Replicas:
    """N in-process replica servers (each its own cache, follower and aiohttp server on a loopback port)."""

    def __init__(self, url: str, endpoint: str, caches: list[Path], embedder: Any, **replica_options: Any) -> None:
        self.followers = [Replica(RemoteStore(url, endpoint_url=endpoint), Store(c), poll_interval=POLL,
                                  **replica_options) for c in caches]
        self.embedder = embedder
        self.runners: list[Any] = []
        self.bases: list[str] = []

    async def __aenter__(self) -> Replicas:
        for follower in self.followers:
            app = create_app(follower.cache.root, embedder=self.embedder, poll_interval=3600, replica=follower)
            runner, port = await start_server(app, "127.0.0.1", 0)
            self.runners.append(runner)
            self.bases.append(f"http://127.0.0.1:{port}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        for runner in self.runners:
            await runner.cleanup()


async def _health(http: aiohttp.ClientSession, base: str) -> dict[str, Any]:
    async with http.get(base + "/health") as resp:
        return dict(await resp.json())


async def _until(predicate: Any, timeout: float = 20.0) -> float:
    """Await ``predicate()`` (async) until true; return the seconds it took; fail after ``timeout``."""
    started = time.monotonic()
    while not await predicate():
        if time.monotonic() - started > timeout:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def _serving(http: aiohttp.ClientSession, base: str, bundle_id: str) -> bool:
    health = await _health(http, base)
    return bool(health.get("bundle") and health["bundle"]["bundle_id"] == bundle_id)


def test_replica_from_an_empty_cache_then_two_replicas_converge(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    remote = RemoteStore(url, endpoint_url=endpoint)
    c1, b1, docs1 = _commit(repo, store.root, hash_embedder, "alfa")

    async def scenario() -> None:
        async with Replicas(url, endpoint, [tmp_path / "cache1", tmp_path / "cache2"], hash_embedder) as rs, \
                aiohttp.ClientSession() as http:
            await _until(lambda: asyncio.to_thread(lambda: rs.followers[0].polls > 0 and rs.followers[0].last_error))
            before = await _health(http, rs.bases[0])
            assert before["ready"] is False and before["replica"]["remote_current"] is None
            assert "gitrag publish" in before["replica"]["last_error"]
            await asyncio.to_thread(publish_store, store, remote)
            for base in rs.bases:
                await _until(lambda base=base: _serving(http, base, b1))
            async with http.post(rs.bases[0] + "/search", json={"query": "spoločné slovo", "limit": 20}) as resp:
                body = await resp.json()
            assert resp.status == 200 and body["index_version"]["commit"] == c1 and _paths(body) == docs1

            c2, b2, _docs2 = await asyncio.to_thread(_commit, repo, store.root, hash_embedder, "beta")
            await asyncio.to_thread(publish_store, store, remote)
            took = [await _until(lambda base=base: _serving(http, base, b2)) for base in rs.bases]
            for base in rs.bases:
                health = await _health(http, base)
                rep = health["replica"]
                assert (rep["serving"], rep["remote_current"], rep["in_sync"], rep["fetching"]) == (b2, b2, True, None)
                assert rep["fetches"] == 2 and rep["bytes_downloaded"] > 0 and rep["last_error"] is None
                assert rep["source"] == {"url": url, "endpoint": endpoint}
                assert health["bundle"]["commit"] == c2
            print(f"\nconverged in {max(took):.2f} s (poll {POLL} s)")

    asyncio.run(scenario())


def test_swap_on_a_new_remote_current_under_search_and_answer_load(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                   hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    remote = RemoteStore(url, endpoint_url=endpoint)
    docs: dict[str, set[str]] = {}
    ids: dict[str, str] = {}
    for name in ("alfa", "beta"):
        commit, bundle_id, paths = _commit(repo, store.root, hash_embedder, name)
        docs[commit], ids[name] = paths, bundle_id
    publish_store(store, remote)  # both bundles up; CURRENT = beta
    moves = 4

    async def scenario() -> None:
        failures: list[str] = []
        mixed: list[str] = []
        seen: set[str] = set()
        answered = 0
        stop = asyncio.Event()
        async with Replicas(url, endpoint, [tmp_path / "cache"], hash_embedder) as rs, \
                aiohttp.ClientSession() as http:
            base = rs.bases[0]
            await _until(lambda: _serving(http, base, ids["beta"]))

            async def client(n: int) -> None:
                nonlocal answered
                while not stop.is_set():
                    route, payload = ("/answer", {"query": "Čo je spoločné slovo?", "mode": "retrieve"}) if n % 2 \
                        else ("/search", {"query": "spoločné slovo", "limit": 20})
                    try:
                        async with http.post(base + route, json=payload) as resp:
                            body = await resp.json()
                            status = resp.status
                    except aiohttp.ClientError as exc:
                        failures.append(type(exc).__name__)
                        continue
                    if status != 200:
                        failures.append(f"{route} {status} {body.get('reason')}")
                        continue
                    commit = body["index_version"]["commit"]
                    seen.add(commit)
                    answered += route == "/answer" and bool(_paths(body))  # the answer's evidence names documents
                    if not _paths(body) <= docs[commit]:
                        mixed.append(commit)

            async def mover() -> None:
                for i in range(moves):
                    target = ids["alfa" if i % 2 == 0 else "beta"]
                    await asyncio.to_thread(remote.write_current, target)  # what `gitrag use --to` writes
                    await _until(lambda target=target: _serving(http, base, target))
                await asyncio.sleep(0.2)
                stop.set()

            await asyncio.gather(mover(), *(client(n) for n in range(6)))
            health = await _health(http, base)
        assert failures == [] and mixed == []
        assert len(seen) == 2 and answered > 0
        assert health["swaps"] >= moves + 1 and health["last_reload_error"] is None
        assert health["replica"]["fetches"] == 2  # each bundle downloaded once, then swapped from the cache

    asyncio.run(scenario())


def test_a_corrupted_remote_object_is_refused_and_the_old_bundle_keeps_serving(  # type: ignore[no-untyped-def]
        repo: RepoBuilder, tmp_path: Path, hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    remote = RemoteStore(url, endpoint_url=endpoint)
    c1, b1, _ = _commit(repo, store.root, hash_embedder, "alfa")
    publish_store(store, remote)
    c2, b2, _ = _commit(repo, store.root, hash_embedder, "beta")
    manifest = store.list_bundles()[0].manifest
    assert manifest.bundle_id == b2
    publish_store(store, remote, move_current=False)
    parent = {f.sha256 for f in next(b for b in store.list_bundles() if b.bundle_id == b1).manifest.files}
    # a file with new bytes (one the replica cannot take from its cached parent bundle)
    victim = next(f for f in manifest.files if f.path.startswith("text/") and f.size > 100 and f.sha256 not in parent)
    data = bytearray((store.bundle_path(b2) / victim.path).read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte, same size
    remote.client.put_object(Bucket=remote.bucket, Key=remote.blob_key(victim.sha256), Body=bytes(data))

    async def scenario() -> None:
        async with Replicas(url, endpoint, [tmp_path / "cache"], hash_embedder) as rs, \
                aiohttp.ClientSession() as http:
            base = rs.bases[0]
            await _until(lambda: _serving(http, base, b1))
            await asyncio.to_thread(remote.write_current, b2)

            async def refused() -> bool:
                return b2 in (await _health(http, base))["replica"]["refused"]

            await _until(refused)
            health = await _health(http, base)
            assert health["bundle"]["bundle_id"] == b1 and health["status"] == "ok"
            assert victim.path in health["replica"]["refused"][b2]["reason"]
            assert victim.path in health["replica"]["last_error"] and health["replica"]["in_sync"] is False
            assert not (tmp_path / "cache" / "bundles" / b2).exists()  # never installed, never served
            async with http.post(base + "/search", json={"query": "spoločné slovo"}) as resp:
                assert resp.status == 200 and (await resp.json())["index_version"]["commit"] == c1
            async with http.post(base + "/search", json={"query": "spoločné slovo", "at": c2[:10]}) as resp:
                body = await resp.json()
            assert resp.status == 422 and body["reason"] == "bundle_corrupt"  # at= refuses it the same way

    asyncio.run(scenario())


def test_at_an_old_commit_is_fetched_on_demand_into_a_bounded_cache(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                    hash_embedder, s3_bucket, monkeypatch) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    remote = RemoteStore(url, endpoint_url=endpoint)
    built = [_commit(repo, store.root, hash_embedder, name) for name in ("alfa", "beta", "gama")]
    publish_store(store, remote)  # all three up; CURRENT = gama
    size = sum(f.size for f in store.list_bundles()[0].manifest.files)
    monkeypatch.setattr(replica_module, "EVICT_GRACE", 0.0)

    async def scenario() -> None:
        # room for about two bundles: the served one and one historical
        async with Replicas(url, endpoint, [tmp_path / "cache"], hash_embedder, cache_bytes=int(size * 2.5)) as rs, \
                aiohttp.ClientSession() as http:
            base = rs.bases[0]
            follower = rs.followers[0]
            await _until(lambda: _serving(http, base, built[2][1]))
            assert follower.cached_bundles() == [built[2][1]]
            for commit, bundle_id, docs in (built[0], built[1]):
                async with http.post(base + "/search", json={"query": "spoločné slovo", "limit": 20,
                                                             "at": commit[:8]}) as resp:
                    body = await resp.json()
                assert resp.status == 200, body
                assert body["index_version"]["bundle_id"] == bundle_id and _paths(body) <= docs
            health = await _health(http, base)
            assert health["bundle"]["bundle_id"] == built[2][1]  # time travel never moves the served bundle
            cache = health["replica"]["cache"]
            assert cache["bytes"] <= cache["max_bytes"] and cache["evicted"] == 1
            assert set(follower.cached_bundles()) == {built[2][1], built[1][1]}  # alfa: least recently used
            # alfa again: evicted from disk while still open in the server's history LRU: fetched again
            async with http.post(base + "/search", json={"query": "spoločné slovo", "at": built[0][0]}) as resp:
                body = await resp.json()
            assert resp.status == 200 and body["index_version"]["bundle_id"] == built[0][1]
            assert _paths(body) <= built[0][2] and (await _health(http, base))["replica"]["fetches"] == 4
            async with http.post(base + "/search", json={"query": "x", "at": "0" * 12}) as resp:
                assert resp.status == 404  # no such commit, locally or remotely

    asyncio.run(scenario())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.e2e
def test_a_serve_from_process_never_logs_credentials(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                     hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    remote = RemoteStore(url, endpoint_url=endpoint)
    _c1, b1, _ = _commit(repo, store.root, hash_embedder, "alfa")
    publish_store(store, remote)
    port = _free_port()
    log_path = tmp_path / "replica.log"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GITRAG_")}, "PYTHONPATH": str(ROOT)}
    userinfo = "AKIAUSERINFO0023:se/cr@t:x-0023"  # user info in the endpoint URL: ignored, never shown
    argv = [sys.executable, "-c", "from query.cli.main import serve_command; serve_command()",
            "--from", url, "--cache", str(tmp_path / "cache"), "--endpoint-url",
            endpoint.replace("http://", f"http://{userinfo}@"), "--port", str(port),
            "--remote-poll-interval", "0.2", "--log-level", "debug"]
    with open(log_path, "w", encoding="utf-8") as log_file:
        proc = subprocess.Popen(argv, env=env, stdout=log_file, stderr=subprocess.STDOUT)
        try:
            async def scenario() -> dict[str, Any]:
                async with aiohttp.ClientSession() as http:
                    async def up() -> bool:
                        try:
                            return await _serving(http, f"http://127.0.0.1:{port}", b1)
                        except aiohttp.ClientError:
                            return False

                    await _until(up, timeout=60)
                    await asyncio.to_thread(remote.write_current, "0" * 40 + ".deadbeef")  # a failing fetch, logged
                    await asyncio.sleep(1.0)
                    return await _health(http, f"http://127.0.0.1:{port}")

            health = asyncio.run(scenario())
        finally:
            stopping = time.monotonic()
            proc.terminate()
            proc.wait(timeout=20)
            stopped_in = time.monotonic() - stopping
    text = log_path.read_text(encoding="utf-8")
    events = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert {"stopping", "stopped"} <= {e.get("event") for e in events}  # SIGTERM: said, and done promptly
    assert stopped_in < 8, stopped_in
    assert any(e.get("event") == "replica_fetched" for e in events)
    assert any(e.get("event") == "replica_error" for e in events)  # the failure was logged ...
    assert "no remote bundle" in health["replica"]["last_error"]
    assert health["replica"]["source"]["endpoint"] == endpoint
    assert any(e.get("event") == "endpoint_userinfo_ignored" for e in events)
    for secret in (TEST_AWS_KEY_ID, TEST_AWS_SECRET, "se/cr@t", "AKIAUSERINFO0023"):
        assert secret not in text and secret not in json.dumps(health)  # ... and no line, nor /health, holds one


def test_serve_takes_a_store_or_a_remote_with_a_cache(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from query.cli.main import serve_command

    runner = CliRunner()
    for argv, message in (([], "give --store DIR, or --from"),
                          (["--from", "s3://bucket/p"], "--cache DIR"),
                          (["--store", str(tmp_path), "--cache", str(tmp_path / "c")], "--cache goes with --from"),
                          (["--store", str(tmp_path), "--from", "s3://bucket/p", "--cache", str(tmp_path / "c")],
                           "not --store")):
        result = runner.invoke(serve_command, argv)
        assert result.exit_code == 2 and message in result.output, (argv, result.output)
    result = runner.invoke(serve_command, ["--from", "http://bucket/p", "--cache", str(tmp_path / "c")])
    assert result.exit_code == 1 and "not an s3://BUCKET/PREFIX address" in result.output


def test_replica_errors_never_show_the_endpoint_user_info(tmp_path: Path, hash_embedder,  # type: ignore[no-untyped-def]
                                                          s3_endpoint) -> None:
    # s3_endpoint: the test credentials in the environment (the requests go to a closed port)
    secret = "se/cr@t:x-0023"
    dead = f"http://AKIAUSERINFO0023:{secret}@127.0.0.1:{_free_port()}"  # nothing listens there

    async def scenario() -> None:
        async with Replicas("s3://bucket-0023/wiki", dead, [tmp_path / "cache"], hash_embedder) as rs, \
                aiohttp.ClientSession() as http:
            rs.followers[0].remote.client.meta.config.retries["total_max_attempts"] = 1
            await _until(lambda: asyncio.to_thread(lambda: rs.followers[0].last_error is not None))
            async with http.get(rs.bases[0] + "/health") as resp:
                health_text = await resp.text()
                assert resp.status == 503  # not a 500: nothing raises on the secret's characters
            health = json.loads(health_text)
            assert "127.0.0.1" in health["replica"]["last_error"]
            async with http.post(rs.bases[0] + "/search", json={"query": "x", "at": "0" * 12}) as resp:
                search_text = await resp.text()
            for text in (health_text, search_text):
                assert secret not in text and "AKIAUSERINFO0023" not in text

    asyncio.run(scenario())


def test_a_partial_remote_bundle_is_refused_not_downloaded_at_every_poll_and_retried_when_repaired(  # type: ignore[no-untyped-def]
        repo: RepoBuilder, tmp_path: Path, hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    remote = RemoteStore(url, endpoint_url=endpoint)
    _c1, b1, _ = _commit(repo, store.root, hash_embedder, "alfa")
    publish_store(store, remote)
    _c2, b2, _ = _commit(repo, store.root, hash_embedder, "beta")
    publish_store(store, remote, move_current=False)
    parent = {f.sha256 for f in next(b for b in store.list_bundles() if b.bundle_id == b1).manifest.files}
    victim = next(f for f in store.list_bundles()[0].manifest.files if f.sha256 not in parent and f.size > 100)
    remote.client.delete_object(Bucket=remote.bucket, Key=remote.blob_key(victim.sha256))
    raw_manifest = remote.read_manifest_bytes(b2)

    async def scenario() -> None:
        async with Replicas(url, endpoint, [tmp_path / "cache"], hash_embedder, retry_refused=3600.0) as rs, \
                aiohttp.ClientSession() as http:
            base, follower = rs.bases[0], rs.followers[0]
            await _until(lambda: _serving(http, base, b1))
            before = follower.bytes_downloaded
            await asyncio.to_thread(remote.write_current, b2)
            await _until(lambda: asyncio.to_thread(lambda: b2 in follower.refused))
            polls = follower.polls
            await _until(lambda: asyncio.to_thread(lambda: follower.polls >= polls + 10))
            health = await _health(http, base)
            rep = health["replica"]
            assert health["bundle"]["bundle_id"] == b1 and rep["remote_current"] == b2 and not rep["in_sync"]
            assert f"{victim.path}: missing from the remote store" in rep["refused"][b2]["reason"]
            assert victim.path in rep["last_error"]
            assert rep["bytes_downloaded"] == before and rep["fetches"] == 1  # refused by HEADs, not re-fetched
            # a re-publish repairs the blob; the manifest's bytes are unchanged, so the refusal holds ...
            report = await asyncio.to_thread(publish_store, store, remote, move_current=False)
            assert report.files_repaired == 1
            await asyncio.sleep(10 * POLL)
            assert (await _health(http, base))["bundle"]["bundle_id"] == b1
            # ... until the manifest changes (here: put back with other bytes, the same content), or retry_refused
            await asyncio.to_thread(remote.put_manifest, b2, raw_manifest + b"\n")
            await _until(lambda: _serving(http, base, b2))
            rep = (await _health(http, base))["replica"]
            assert rep["in_sync"] and rep["last_error"] is None and rep["fetches"] == 2

    asyncio.run(scenario())


def test_the_cache_bound_holds_after_on_demand_downloads(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                          hash_embedder, s3_bucket, monkeypatch) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    remote = RemoteStore(url, endpoint_url=endpoint)
    built = [_commit(repo, store.root, hash_embedder, name) for name in ("alfa", "beta", "gama", "delta")]
    publish_store(store, remote)  # CURRENT = delta
    size = sum(f.size for f in store.list_bundles()[0].manifest.files)
    monkeypatch.setattr(replica_module, "EVICT_GRACE", 0.5)  # the default grace, shortened for the test

    async def scenario() -> None:
        async with Replicas(url, endpoint, [tmp_path / "cache"], hash_embedder, cache_bytes=int(size * 1.5)) as rs, \
                aiohttp.ClientSession() as http:
            base, follower = rs.bases[0], rs.followers[0]
            await _until(lambda: _serving(http, base, built[3][1]))
            for commit, bundle_id, _docs in built[:3]:  # three old commits at once: all in their grace
                async with http.post(base + "/search", json={"query": "spoločné slovo", "at": commit[:8]}) as resp:
                    assert resp.status == 200 and (await resp.json())["index_version"]["bundle_id"] == bundle_id

            async def bounded() -> bool:
                cache = (await _health(http, base))["replica"]["cache"]
                return bool(cache["bytes"] <= cache["max_bytes"])

            took = await _until(bounded, timeout=10)  # the polls evict once the grace is over
            assert took < 5
            assert built[3][1] in follower.cached_bundles()  # never the served bundle
            assert (await _health(http, base))["replica"]["cache"]["evicted"] >= 2

    asyncio.run(scenario())


def test_after_a_current_glitch_the_next_good_poll_clears_the_error(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                     hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    remote = RemoteStore(url, endpoint_url=endpoint)
    _c1, b1, _ = _commit(repo, store.root, hash_embedder, "alfa")
    publish_store(store, remote)

    async def scenario() -> None:
        async with Replicas(url, endpoint, [tmp_path / "cache"], hash_embedder) as rs, \
                aiohttp.ClientSession() as http:
            base, follower = rs.bases[0], rs.followers[0]
            await _until(lambda: _serving(http, base, b1))
            for glitch, error in ((b"", "no CURRENT"), (b"not a bundle id\n", "does not name a bundle id")):
                await asyncio.to_thread(remote.client.put_object, Bucket=remote.bucket, Key=remote.current_key,
                                        Body=glitch)
                await _until(lambda error=error: asyncio.to_thread(lambda: error in (follower.last_error or "")))
                assert not (await _health(http, base))["replica"]["in_sync"]
                await asyncio.to_thread(remote.write_current, b1)  # restored: the same bytes, the same ETag

                async def healed() -> bool:
                    rep = (await _health(http, base))["replica"]
                    return bool(rep["remote_current"] == b1 and rep["in_sync"] and rep["last_error"] is None)

                await _until(healed, timeout=10)

    asyncio.run(scenario())


def test_a_replica_lists_the_published_bundles_and_serves_a_lexical_one(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                        hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    remote = RemoteStore(url, endpoint_url=endpoint)
    _c1, b1, docs1 = _commit(repo, store.root, hash_embedder, "alfa")
    repo.write("wiki/lex.md", "# Lex\n\nSpoločné slovo v lexikálnom zväzku.\n")
    c2 = repo.commit("lexical")
    result = build_bundle(repo.path, store.root, embedder=hash_embedder, lexical_first=True)
    assert result.lexical is not None
    lexical = result.lexical.bundle_id
    publish_store(store, remote)  # three bundles; CURRENT = the complete bundle of c2

    async def scenario() -> None:
        async with Replicas(url, endpoint, [tmp_path / "cache"], hash_embedder) as rs, \
                aiohttp.ClientSession() as http:
            base = rs.bases[0]
            await _until(lambda: _serving(http, base, result.bundle_id))
            async with http.get(base + "/bundles") as resp:
                body = await resp.json()
            assert resp.status == 200
            listed = {b["bundle_id"]: b for b in body["bundles"]}
            assert set(listed) == {b1, lexical, result.bundle_id}  # the published ones, not only the cached one
            assert listed[result.bundle_id]["served"] and listed[result.bundle_id]["cached"]
            assert not listed[b1]["cached"] and listed[lexical]["stage"] == "lexical"
            assert body["current"] == result.bundle_id
            async with http.post(base + "/search", json={"query": "spoločné slovo", "at": lexical}) as resp:
                found = await resp.json()
            assert resp.status == 200, found
            assert found["index_version"]["bundle_id"] == lexical and found["index_version"]["commit"] == c2
            async with http.get(base + "/bundles") as resp:
                assert {b["bundle_id"] for b in (await resp.json())["bundles"] if b["cached"]} >= {lexical}

    asyncio.run(scenario())


def test_a_missing_bucket_is_named_on_the_replica(tmp_path: Path, s3_endpoint) -> None:  # type: ignore[no-untyped-def]
    follower = Replica(RemoteStore("s3://no-such-bucket-0023/wiki", endpoint_url=s3_endpoint), Store(tmp_path / "c"))
    assert follower.poll_once() is False
    assert "NoSuchBucket" in (follower.last_error or "") and "gitrag publish" not in (follower.last_error or "")
