"""The aiohttp server over real HTTP on 127.0.0.1: /health, /search, error envelope, hot swap."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from artifacts.store import Store
from indexer.build import build_bundle
from query.server.app import create_app
from query.server.runner import start_server
from tests.conftest import RepoBuilder

ENVELOPE = {"status", "reason", "sources", "index_version", "complete", "truncated", "truncation_reasons"}


@pytest.fixture
def store(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> Path:  # type: ignore[no-untyped-def]
    repo.write("wiki/holp.md", "---\ntitle: Ján Holp\n---\n# Ján Holp\n\nDiplomová práca o zebraplanktóne.\n")
    repo.write("wiki/other.md", "# Iné\n\nNiečo úplne iné o horách.\n")
    repo.commit()
    build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    return tmp_path / "store"


async def _serve(store: Path, embedder, poll: float = 0.2):  # type: ignore[no-untyped-def]
    server = TestServer(create_app(store, embedder=embedder, poll_interval=poll), host="127.0.0.1")
    await server.start_server()
    return server


def test_health_and_search_over_loopback(store: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        server = await _serve(store, hash_embedder)
        base = f"http://127.0.0.1:{server.port}"
        try:
            async with aiohttp.ClientSession() as http:
                async with http.get(base + "/health") as resp:
                    health = await resp.json()
                    assert resp.status == 200 and health["ready"] is True
                    assert health["bundle"]["bundle_id"] == Store(store).current_id()
                    assert health["bundle"]["counts"]["documents"] == 2
                async with http.post(base + "/search", json={"query": "zebraplankton holp", "limit": 5}) as resp:
                    body = await resp.json()
                    assert resp.status == 200 and ENVELOPE <= set(body)
                    assert body["results"][0]["document_path"] == "wiki/holp.md"
                    assert body["index_version"]["bundle_id"] == health["bundle"]["bundle_id"]
        finally:
            await server.close()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("method", "path", "data", "status", "reason"),
    [
        ("POST", "/search", b'{"query": ""}', 400, "invalid_query"),
        ("POST", "/search", b'{"query": "' + b"x" * 2000 + b'"}', 400, "invalid_query"),
        ("POST", "/search", b"{not json /etc/passwd", 400, "invalid_request"),
        ("POST", "/search", b'{"query": "ok", "limit": -1}', 400, "invalid_request"),
        ("POST", "/search", b'{"query": "' + b"y" * 70000 + b'"}', 413, "payload_too_large"),
        ("GET", "/nowhere", None, 404, "not_found"),
        ("GET", "/search", None, 405, "method_not_allowed"),
    ],
)
def test_errors_use_the_envelope_and_echo_nothing(store: Path, hash_embedder, method, path, data, status,
                                                  reason) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        server = await _serve(store, hash_embedder)
        try:
            async with aiohttp.ClientSession() as http:
                async with http.request(method, f"http://127.0.0.1:{server.port}{path}", data=data,
                                        headers={"Content-Type": "application/json"}) as resp:
                    body = await resp.json()
                    text = await resp.text()
            assert resp.status == status
            assert body["status"] == "error" and body["reason"] == reason and ENVELOPE <= set(body)
            assert body["index_version"] is None
            assert "passwd" not in text and "Traceback" not in text and str(store) not in text
        finally:
            await server.close()

    asyncio.run(scenario())


def test_server_swaps_to_a_new_current_bundle(store: Path, repo: RepoBuilder, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        server = await _serve(store, hash_embedder, poll=0.1)
        base = f"http://127.0.0.1:{server.port}"
        try:
            async with aiohttp.ClientSession() as http:
                old = (await (await http.get(base + "/health")).json())["bundle"]["bundle_id"]
                repo.write("wiki/new.md", "# Nové\n\nKvantová kryptografia.\n")
                repo.commit("add new page")
                new = await asyncio.to_thread(build_bundle, repo.path, store, embedder=hash_embedder)
                for _ in range(50):
                    health = await (await http.get(base + "/health")).json()
                    if health["bundle"]["bundle_id"] != old:
                        break
                    await asyncio.sleep(0.1)
                assert health["bundle"]["bundle_id"] == new.bundle_id
                body = await (await http.post(base + "/search", json={"query": "kvantova kryptografia"})).json()
                assert body["results"][0]["document_path"] == "wiki/new.md"
        finally:
            await server.close()

    asyncio.run(scenario())


def test_health_without_any_bundle_is_503(tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        server = await _serve(tmp_path / "empty-store", hash_embedder)
        try:
            async with aiohttp.ClientSession() as http:
                async with http.get(f"http://127.0.0.1:{server.port}/health") as resp:
                    assert resp.status == 503 and (await resp.json())["ready"] is False
                async with http.post(f"http://127.0.0.1:{server.port}/search", json={"query": "x"}) as resp:
                    body = await resp.json()
                    assert resp.status == 503 and body["reason"] == "retrieval_unavailable"
        finally:
            await server.close()

    asyncio.run(scenario())


# -- helpers shared by the other test_server_* modules ----------------------------------------------

SEARCH_KEY = "s" * 16 + "search-key-0123456789"
ADMIN_KEY = "a" * 16 + "admin-key-0123456789ab"
SYNC_KEY = "y" * 16 + "sync-key-0123456789abcd"
WEBHOOK_SECRET = "w" * 16 + "webhook-secret-0123456789"


def with_server(store: Path, embedder, scenario, *, config=None, poll: float = 0.2):  # type: ignore[no-untyped-def]
    """Run ``await scenario(base_url, http_session, app)`` against the server on a loopback port.

    The server runs as ``gitrag serve`` runs it (:func:`query.server.runner.start_server`, whose runner
    answers aiohttp's parser errors with the envelope).
    """

    async def main() -> None:
        app = create_app(store, embedder=embedder, poll_interval=poll, config=config)
        runner, port = await start_server(app, "127.0.0.1", 0)
        try:
            async with aiohttp.ClientSession() as http:
                await scenario(f"http://127.0.0.1:{port}", http, app)
        finally:
            await runner.cleanup()

    asyncio.run(main())
