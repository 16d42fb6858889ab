"""Issue 27 on a real server on 127.0.0.1: unpublished pages need the admin key (3), recovery from a corrupt
``CURRENT`` (4), connection limits (5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.build import build_bundle
from query.config import ServerConfig
from tests.conftest import RepoBuilder
from tests.query.test_server import ADMIN_KEY, SEARCH_KEY, with_server

SECRET_WORD = "zyxquorpel"


@pytest.fixture
def private_store(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> Path:  # type: ignore[no-untyped-def]
    repo.write("wiki/open.md", "# Open\n\nA public page about mountains.\n")
    repo.write("wiki/secret.md", f"---\npublished: false\n---\n# Secret\n\nThe {SECRET_WORD} plan.\n")
    repo.commit("pages")
    build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    return tmp_path / "store"


# --- finding 3: published: false is access control -------------------------------------------------------

UNPUBLISHED_BODIES = [
    ("/search", {"query": SECRET_WORD, "published_only": False}),
    ("/document", {"path": "wiki/secret.md", "published_only": False}),
    ("/graph", {"question": "documents", "published_only": False}),
    ("/answer", {"question": f"What is the {SECRET_WORD} plan?", "published_only": False, "mode": "retrieve"}),
]


def test_a_search_key_may_not_read_unpublished_pages(private_store: Path, hash_embedder) -> None:
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        for path, body in UNPUBLISHED_BODIES:
            async with http.post(base + path, json=body, headers={"X-API-Key": SEARCH_KEY}) as resp:
                reply = await resp.json()
                assert (resp.status, reply["reason"]) == (403, "unpublished_forbidden"), (path, reply)
                assert SECRET_WORD not in str(reply)
        # the default (published_only true) with a search key: the page does not exist, like an unknown one
        for path in ("wiki/secret.md", "wiki/none.md"):
            async with http.post(base + "/document", json={"path": path}, headers={"X-API-Key": SEARCH_KEY}) as resp:
                assert (resp.status, (await resp.json())["reason"]) == (404, "document_not_found")
        async with http.post(base + "/search", json={"query": SECRET_WORD}, headers={"X-API-Key": SEARCH_KEY}) as resp:
            assert resp.status == 200 and SECRET_WORD not in await resp.text()
        # the admin key reads it
        body = {"path": "wiki/secret.md", "published_only": False}
        async with http.post(base + "/document", json=body, headers={"X-API-Key": ADMIN_KEY}) as resp:
            reply = await resp.json()
            assert resp.status == 200 and SECRET_WORD in reply["document"]["markdown"]
        async with http.post(base + "/search", json={"query": SECRET_WORD, "published_only": False},
                             headers={"X-API-Key": ADMIN_KEY}) as resp:
            assert resp.status == 200 and SECRET_WORD in await resp.text()

    with_server(private_store, hash_embedder, scenario,
                config=ServerConfig(search_key=SEARCH_KEY, admin_key=ADMIN_KEY))


def test_unpublished_public_in_the_toml_lets_a_search_key_read_them(private_store: Path, hash_embedder) -> None:
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        body = {"path": "wiki/secret.md", "published_only": False}
        async with http.post(base + "/document", json=body, headers={"X-API-Key": SEARCH_KEY}) as resp:
            assert resp.status == 200 and SECRET_WORD in (await resp.json())["document"]["markdown"]

    with_server(private_store, hash_embedder, scenario,
                config=ServerConfig(search_key=SEARCH_KEY, admin_key=ADMIN_KEY, unpublished_public=True))


def test_mcp_tools_never_read_unpublished_pages(private_store: Path, hash_embedder) -> None:
    import asyncio

    from query.server.app import create_app
    from query.server.mcp import call_tool
    from query.server.state import HOLDER, OPTIONS

    async def scenario() -> None:
        app = create_app(private_store, embedder=hash_embedder, poll_interval=5)
        holder = app[HOLDER]
        holder.load_current()
        try:
            reply = await call_tool(holder, app[OPTIONS], "search", {"query": SECRET_WORD, "published_only": False})
            assert reply["reason"] == "unpublished_forbidden" and SECRET_WORD not in str(reply)
        finally:
            holder.close()

    asyncio.run(scenario())


# --- finding 4: recovery from a CURRENT that fails verification ------------------------------------------


def _corrupt(bundle_dir: Path) -> None:
    import os
    import stat

    target = bundle_dir / "chunks.jsonl"
    os.chmod(bundle_dir, stat.S_IRWXU)
    os.chmod(target, stat.S_IRUSR | stat.S_IWUSR)
    with open(target, "a", encoding="utf-8") as handle:
        handle.write("\n")


@pytest.fixture
def broken_current(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """A store of three bundles: CURRENT (the newest) fails verification, the one before verifies."""
    from artifacts.store import Store

    store = tmp_path / "store"
    ids = []
    for n in range(3):
        repo.write(f"wiki/p{n}.md", f"# Page {n}\n\nText of page {n} about rivers.\n")
        repo.commit(f"page {n}")
        ids.append(build_bundle(repo.path, store, embedder=hash_embedder).bundle_id)
    assert Store(store).current_id() == ids[2]
    _corrupt(store / "bundles" / ids[2])
    return {"store": str(store), "oldest": ids[0], "good": ids[1], "broken": ids[2]}


def test_fallback_verified_serves_the_newest_older_bundle_and_health_says_why(broken_current: dict[str, str],
                                                                             hash_embedder) -> None:
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(base + "/health") as resp:
            health = await resp.json()
        assert resp.status == 200 and health["ready"] is True and health["serving"] == "fallback"
        assert health["bundle"]["bundle_id"] == broken_current["good"]
        assert health["fallback"]["current"] == broken_current["broken"]
        assert "chunks.jsonl: sha256/size mismatch" in health["fallback"]["reason"]
        assert "repair-current" in health["message"]
        async with http.post(base + "/search", json={"query": "rivers"}) as resp:
            assert resp.status == 200 and (await resp.json())["index_version"]["bundle_id"] == broken_current["good"]

    with_server(Path(broken_current["store"]), hash_embedder, scenario, config=ServerConfig(fallback_verified=True))


def test_a_served_bundle_stays_when_current_moves_to_a_broken_one_and_health_says_previous(
        broken_current: dict[str, str], hash_embedder) -> None:
    from artifacts.store import Store

    store = Store(broken_current["store"])
    store.set_current(broken_current["good"])

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        store.set_current(broken_current["broken"])
        await (await http.post(base + "/admin/reload")).read()
        health = await (await http.get(base + "/health")).json()
        assert health["serving"] == "previous" and health["bundle"]["bundle_id"] == broken_current["good"]
        assert health["failed_bundle"] == broken_current["broken"]

    with_server(Path(broken_current["store"]), hash_embedder, scenario, poll=60)


def test_without_fallback_a_broken_current_is_503(broken_current: dict[str, str], hash_embedder) -> None:
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(base + "/health") as resp:
            health = await resp.json()
        assert resp.status == 503 and health["serving"] is None and health["failed_bundle"] == broken_current["broken"]

    with_server(Path(broken_current["store"]), hash_embedder, scenario)


def test_verify_repair_current_moves_current_to_the_newest_verified_bundle(broken_current: dict[str, str]) -> None:
    import json

    from click.testing import CliRunner

    from artifacts.cli import main
    from artifacts.store import Store

    runner = CliRunner()
    out = runner.invoke(main, ["verify", "--store", broken_current["store"]])
    assert out.exit_code == 1
    out = runner.invoke(main, ["verify", "--store", broken_current["store"], "--repair-current", "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["repaired"] is True and report["was"] == broken_current["broken"]
    assert report["current"] == broken_current["good"] == Store(broken_current["store"]).current_id()
    assert any("chunks.jsonl" in p for p in report["problems"])
    out = runner.invoke(main, ["verify", "--store", broken_current["store"], "--repair-current"])
    assert out.exit_code == 0 and "nothing to repair" in out.output


def test_serve_cli_has_the_fallback_flag() -> None:
    from click.testing import CliRunner

    from query.cli.main import serve_command

    out = CliRunner().invoke(serve_command, ["--help"])
    assert "--fallback-verified" in out.output


# --- finding 5: connection limits ------------------------------------------------------------------------


def _serve_raw(store: Path, embedder, scenario, config: ServerConfig) -> None:  # type: ignore[no-untyped-def]
    """Run ``await scenario(port, app)`` against the server as ``gitrag serve`` starts it (real socket)."""
    import asyncio

    from query.server.app import create_app
    from query.server.runner import start_server

    async def main() -> None:
        app = create_app(store, embedder=embedder, poll_interval=60, config=config)
        runner, port = await start_server(app, "127.0.0.1", 0)
        try:
            await scenario(port, app)
        finally:
            await runner.cleanup()

    asyncio.run(main())


async def _closed_within(reader, seconds: float) -> tuple[bool, bytes]:  # type: ignore[no-untyped-def]
    """Read until EOF; ``(closed within seconds, bytes read)``."""
    import asyncio

    data = b""
    try:
        async with asyncio.timeout(seconds):
            while chunk := await reader.read(65536):
                data += chunk
    except TimeoutError:
        return False, data
    except ConnectionResetError:
        pass
    return True, data


def test_partial_headers_and_bodies_are_closed_within_their_timeouts(private_store: Path, hash_embedder) -> None:
    import asyncio
    import json
    import time

    async def scenario(port: int, app) -> None:  # type: ignore[no-untyped-def]
        # headers never finished
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic")
        await writer.drain()
        started = time.monotonic()
        closed, _ = await _closed_within(reader, 5)
        assert closed and time.monotonic() - started < 3
        writer.close()
        # a body that never arrives: Content-Length, and chunked
        for head in (b"Content-Length: 100\r\n\r\n{\"query\": ", b"Transfer-Encoding: chunked\r\n\r\n5\r\n{\"que"):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + head)
            await writer.drain()
            started = time.monotonic()
            closed, data = await _closed_within(reader, 6)
            assert closed and time.monotonic() - started < 1 + 2 + 1.5, head  # body_timeout + lingering
            status_line, _, rest = data.partition(b"\r\n")
            assert status_line.startswith(b"HTTP/1.1 408"), data[:200]
            assert json.loads(rest.partition(b"\r\n\r\n")[2])["reason"] == "request_timeout"
            writer.close()

    _serve_raw(private_store, hash_embedder, scenario, ServerConfig(header_timeout=1, body_timeout=1))


def test_connections_are_capped_per_address_and_in_total(private_store: Path, hash_embedder) -> None:
    import asyncio
    import json

    async def scenario(port: int, app) -> None:  # type: ignore[no-untyped-def]
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        await asyncio.sleep(0.2)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        closed, data = await _closed_within(reader, 5)
        assert closed and data.startswith(b"HTTP/1.1 503")
        assert json.loads(data.partition(b"\r\n\r\n")[2])["reason"] == "too_many_connections"
        writer.close()
        held.pop()[1].close()
        await asyncio.sleep(0.2)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)  # a slot is free again
        writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        closed, data = await _closed_within(reader, 10)
        assert data.startswith(b"HTTP/1.1 200"), data[:100]
        for _, w in held:
            w.close()

    _serve_raw(private_store, hash_embedder, scenario, ServerConfig(max_connections_per_address=3))
    _serve_raw(private_store, hash_embedder, scenario, ServerConfig(max_connections=3))


def test_400_idle_partial_connections_are_closed_while_requests_stay_fast(private_store: Path,
                                                                          hash_embedder) -> None:
    import asyncio
    import time

    import aiohttp

    async def scenario(port: int, app) -> None:  # type: ignore[no-untyped-def]
        idle = []
        for n in range(400):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow-%d: " % n)
            idle.append((reader, writer))
        opened = time.monotonic()
        latencies = []
        async with aiohttp.ClientSession() as http:
            while time.monotonic() - opened < 2.5:
                started = time.monotonic()
                async with http.post(f"http://127.0.0.1:{port}/search", json={"query": "mountains"}) as resp:
                    assert resp.status == 200
                latencies.append(time.monotonic() - started)
        results = await asyncio.gather(*(_closed_within(reader, 6) for reader, _ in idle))
        assert all(closed for closed, _ in results)
        assert time.monotonic() - opened < 2 + 6
        latencies.sort()
        assert len(latencies) >= 5 and latencies[int(0.99 * (len(latencies) - 1))] < 1.0, latencies[-5:]
        for _, writer in idle:
            writer.close()

    _serve_raw(private_store, hash_embedder, scenario,
               ServerConfig(header_timeout=2, max_connections_per_address=1000, max_connections=2000))


def test_failed_keys_count_per_address_and_key_prefix(private_store: Path, hash_embedder) -> None:
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        statuses = []
        for _ in range(25):  # a bad client at this address (burst 20)
            async with http.post(base + "/search", json={"query": "x"}, headers={"X-API-Key": "w" * 40}) as resp:
                statuses.append(resp.status)
        assert statuses[0] == 401 and statuses[-1] == 429
        async with http.post(base + "/search", json={"query": "mountains"}, headers={"X-API-Key": SEARCH_KEY}) as resp:
            assert resp.status == 200  # the good key at the same address keeps working

    with_server(private_store, hash_embedder, scenario,
                config=ServerConfig(search_key=SEARCH_KEY, admin_key=ADMIN_KEY))


def test_x_forwarded_for_is_read_only_from_trusted_proxies(private_store: Path, hash_embedder) -> None:
    async def bad_keys(base, http, forwarded: str) -> list[int]:  # type: ignore[no-untyped-def]
        statuses = []
        for _ in range(22):
            headers = {"X-API-Key": "w" * 40, "X-Forwarded-For": forwarded}
            async with http.post(base + "/search", json={"query": "x"}, headers=headers) as resp:
                statuses.append(resp.status)
        return statuses

    async def trusted(base, http, app) -> None:  # type: ignore[no-untyped-def]
        assert (await bad_keys(base, http, "198.51.100.7, 203.0.113.5"))[-1] == 429
        assert (await bad_keys(base, http, "203.0.113.6"))[0] == 401  # another client behind the proxy

    async def untrusted(base, http, app) -> None:  # type: ignore[no-untyped-def]
        assert (await bad_keys(base, http, "203.0.113.5"))[-1] == 429
        assert (await bad_keys(base, http, "203.0.113.6"))[0] == 429  # the header is not believed

    keys = {"search_key": SEARCH_KEY, "admin_key": ADMIN_KEY}
    with_server(private_store, hash_embedder, trusted, config=ServerConfig(**keys, trusted_proxies=["127.0.0.0/8"]))
    with_server(private_store, hash_embedder, untrusted, config=ServerConfig(**keys))


def test_aiohttp_is_the_release_the_server_internals_were_tested_on() -> None:
    """query.server.connections.EnvelopeRunner reaches into aiohttp (``_make_server``, ``Server._kwargs``);
    pyproject pins aiohttp to 3.14.x.  A new release must be tested and the pin and this check moved together."""
    import aiohttp

    assert aiohttp.__version__.startswith("3.14."), \
        f"aiohttp {aiohttp.__version__}: re-test query.server.connections internals"
    from aiohttp import web

    assert callable(getattr(web.AppRunner, "_make_server", None))
    import inspect

    source = inspect.getsource(web.Server.__init__)
    assert "self._loop" in source and "self._kwargs" in source



def test_a_runner_without_connection_limits_serves_requests(private_store: Path, hash_embedder) -> None:
    """EnvelopeRunner without ``limits`` hands connections to the plain envelope handler; the log
    middleware's header-deadline call must work there too (it raised AttributeError: a 500 per request)."""
    import asyncio

    import aiohttp
    from aiohttp import web

    from query.server.app import create_app
    from query.server.connections import EnvelopeRunner

    async def main() -> None:
        app = create_app(private_store, embedder=hash_embedder, poll_interval=60)
        runner = EnvelopeRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/health") as response:
                assert response.status == 200, await response.text()
        finally:
            await runner.cleanup()

    asyncio.run(main())

# --- finding 8 (small items of the store) -----------------------------------------------------------------


def test_verify_accepts_an_empty_stray_graph_wal_and_refuses_other_strays(private_store: Path) -> None:
    import os
    import stat

    from artifacts.errors import BundleIntegrityError
    from artifacts.store import Store, verify_bundle

    bundle = Store(private_store).current_path()
    os.chmod(bundle / "graph", stat.S_IRWXU)
    (bundle / "graph" / "graph.wal").write_bytes(b"")
    assert verify_bundle(bundle).bundle_id == bundle.name
    (bundle / "graph" / "graph.wal").write_bytes(b"\x01" * 64)
    with pytest.raises(BundleIntegrityError) as caught:
        verify_bundle(bundle)
    assert caught.value.problems == ["graph/graph.wal: not in manifest"]


def test_use_verifies_a_bundle_once_and_again_after_it_changed(broken_current: dict[str, str]) -> None:
    """Finding 6, ``gitrag use``: a bundle that passed is not hashed again while its files are unchanged."""
    import os
    import stat

    from artifacts.errors import BundleIntegrityError
    from artifacts.store import Store, use_bundle

    store = Store(broken_current["store"])
    oldest = store.bundle_path(broken_current["oldest"])
    assert use_bundle(store, broken_current["oldest"]).bundle_id == broken_current["oldest"]
    assert (store.root / "verified" / broken_current["oldest"]).is_file()
    # bytes changed in place with size and mtime kept: the remembered pass holds (no file is read again)
    target = oldest / "docs.jsonl"
    before = target.stat()
    os.chmod(oldest, stat.S_IRWXU)
    os.chmod(target, stat.S_IRUSR | stat.S_IWUSR)
    data = target.read_bytes()
    target.write_bytes(data[:-2] + (b"X" if data[-2:-1] != b"X" else b"Y") + data[-1:])
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert use_bundle(store, broken_current["oldest"]).bundle_id == broken_current["oldest"]
    # a file written since (new mtime): verified again, and refused
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    with pytest.raises(BundleIntegrityError):
        use_bundle(store, broken_current["oldest"])


def test_mcp_refuses_big_bodies_in_the_envelope_and_object_ids_as_json_rpc_errors(private_store: Path,
                                                                                  hash_embedder) -> None:
    headers = {"Accept": "application/json, text/event-stream", "X-API-Key": SEARCH_KEY}
    init = {"jsonrpc": "2.0", "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        big = {**init, "id": 1, "padding": "x" * (65 * 1024)}
        async with http.post(base + "/mcp", json=big, headers=headers) as resp:
            assert resp.status == 413 and (await resp.json())["reason"] == "payload_too_large"
        for bad_id in ({"a": 1}, [1], 1.5, True):
            async with http.post(base + "/mcp", json={**init, "id": bad_id}, headers=headers) as resp:
                reply = await resp.json()
                assert resp.status == 400 and reply["error"]["code"] == -32600 and reply["id"] is None, bad_id
        async with http.post(base + "/mcp", json={**init, "id": 7}, headers=headers) as resp:
            assert resp.status == 200, await resp.text()

    with_server(private_store, hash_embedder, scenario,
                config=ServerConfig(search_key=SEARCH_KEY, admin_key=ADMIN_KEY))


def test_the_openapi_schema_refuses_what_the_server_refuses(private_store: Path, hash_embedder) -> None:
    """Empty ``query`` / ``at`` / ``bundle`` and ``/graph`` with both ``query`` and ``question`` are not valid
    by the schema either, so a client generated from it does not make calls that fail."""
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        doc = await (await http.get(base + "/openapi.json")).json()
        schemas = doc["components"]["schemas"]

        def prop(model: str, name: str) -> dict:
            value = schemas[model]["properties"][name]
            return next((v for v in value.get("anyOf", [value]) if v.get("type") == "string"), value)

        for model, name in (("SearchBody", "query"), ("SearchBody", "at"), ("AnswerBody", "query"),
                            ("AnswerBody", "at"), ("UseBody", "bundle"), ("GraphBody", "query"),
                            ("GraphBody", "question"), ("GraphBody", "at"), ("DocumentRequest", "at")):
            assert prop(model, name).get("minLength") == 1, (model, name)
        assert schemas["GraphBody"]["oneOf"] == [{"required": ["query"]}, {"required": ["question"]}]
        for body in ({"query": "", "limit": 3}, {"query": "x", "at": ""}):
            async with http.post(base + "/search", json=body) as resp:
                assert resp.status == 400
        async with http.post(base + "/graph", json={"query": "documents", "question": "documents"}) as resp:
            assert resp.status == 400

    with_server(private_store, hash_embedder, scenario)
