"""POST /answer over real HTTP on 127.0.0.1: envelope, validation, auth, retrieve mode, SSE, cache and swap."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from indexer.build import build_bundle
from query.config import ServerConfig
from query.server.app import create_app
from tests.query.answer_wiki import build_wiki

ENVELOPE = {"status", "reason", "sources", "index_version", "complete", "truncated", "truncation_reasons"}
ANSWER_FIELDS = ENVELOPE | {"query", "engine", "answer", "claims", "answer_coverage", "cached", "timings"}
ADMIN = "a" * 32
SEARCH = "s" * 32


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> dict[str, Any]:
    """One wiki for the tests that only read it."""
    return build_wiki(tmp_path_factory.mktemp("answerserver"), hash_embedder)


@pytest.fixture
def own_wiki(tmp_path: Path, hash_embedder: Any) -> dict[str, Any]:
    """A wiki the test may change (new commits, swaps)."""
    return build_wiki(tmp_path, hash_embedder)


async def _serve(store: Path, embedder: Any, **kwargs: Any) -> TestServer:
    server = TestServer(create_app(store, embedder=embedder, poll_interval=0.1, **kwargs), host="127.0.0.1")
    await server.start_server()
    return server


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_retrieve_mode_over_http(wiki: dict[str, Any], hash_embedder: Any) -> None:
    async def scenario() -> None:
        server = await _serve(wiki["store"], hash_embedder)
        try:
            async with aiohttp.ClientSession() as http:
                url = f"http://127.0.0.1:{server.port}/answer"
                async with http.post(url, json={"query": "Čo je v zadaní diplomovej práce Jána Holpa?",
                                                "mode": "retrieve"}) as resp:
                    body = await resp.json()
                assert resp.status == 200 and ANSWER_FIELDS <= set(body)
                assert (body["status"], body["engine"], body["answer"]) == ("ok", "graph+text", None)
                assert body["index_version"]["commit"] == wiki["commit"]
                assert all(e["commit"] == wiki["commit"] and e["chunk_id"] for e in body["evidence"])
                async with http.post(url, json={"query": "Aké práce má Ján Holp?", "mode": "retrieve",
                                                "at": wiki["commit"][:10]}) as resp:
                    assert resp.status == 200 and (await resp.json())["engine"] == "graph"
                async with http.post(url, json={"query": "Aké práce má Ján Holp?", "mode": "retrieve",
                                                "at": "f" * 40}) as resp:
                    assert resp.status == 404 and (await resp.json())["reason"] == "unknown_revision"
        finally:
            await server.close()

    run(scenario())


@pytest.mark.parametrize(("data", "status", "reason"), [
    (b'{"query": ""}', 400, "invalid_query"),
    ('{"query": "\u200b\ufeff"}'.encode(), 400, "invalid_query"),
    (b'{"query": "?!?"}', 400, "invalid_query"),
    (b'{"query": "' + b"x" * 1001 + b'"}', 400, "invalid_query"),
    (b'{"query": "ok", "mode": "chat"}', 400, "invalid_request"),
    (b'{"query": "ok", "max_context_tokens": 499}', 400, "invalid_request"),
    (b'{"query": "ok", "max_context_tokens": 12001}', 400, "invalid_request"),
    (b'{"query": "ok", "generator": "/etc/passwd"}', 400, "invalid_request"),
    (b'{"query": "ok", "secret_field": 1}', 400, "invalid_request"),
    (b"[1, 2]", 400, "invalid_request"),
    (b"{not json /etc/passwd", 400, "invalid_request"),
])
def test_answer_validation_errors_echo_nothing(wiki: dict[str, Any], hash_embedder: Any, data: bytes, status: int,
                                               reason: str) -> None:
    async def scenario() -> None:
        server = await _serve(wiki["store"], hash_embedder)
        try:
            async with aiohttp.ClientSession() as http:
                async with http.post(f"http://127.0.0.1:{server.port}/answer", data=data,
                                     headers={"Content-Type": "application/json"}) as resp:
                    text = await resp.text()
                    body = json.loads(text)
            assert resp.status == status and body["status"] == "error" and body["reason"] == reason
            assert ENVELOPE <= set(body)
            assert "passwd" not in text and "secret_field" not in text.replace('"field": "secret_field"', "")
            assert "Traceback" not in text and str(wiki["store"]) not in text
        finally:
            await server.close()

    run(scenario())


def test_answer_needs_a_key_and_debug_needs_the_admin_key(wiki: dict[str, Any], hash_embedder: Any) -> None:
    async def scenario() -> None:
        config = ServerConfig(search_key=SEARCH, admin_key=ADMIN)
        server = await _serve(wiki["store"], hash_embedder, config=config)
        url = f"http://127.0.0.1:{server.port}/answer"
        question = {"query": "Aké práce má Ján Holp?", "mode": "retrieve"}
        try:
            async with aiohttp.ClientSession() as http:
                async with http.post(url, json=question) as resp:
                    assert resp.status == 401 and (await resp.json())["reason"] == "unauthorized"
                async with http.post(url, json=question, headers={"X-API-Key": SEARCH}) as resp:
                    assert resp.status == 200 and (await resp.json())["status"] == "ok"
                async with http.post(url, json={**question, "debug": True}, headers={"X-API-Key": SEARCH}) as resp:
                    assert resp.status == 403 and (await resp.json())["reason"] == "forbidden"
                async with http.post(url, json={**question, "debug": True},
                                     headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
                    assert resp.status == 200
        finally:
            await server.close()

    run(scenario())


def test_openapi_lists_answer(wiki: dict[str, Any], hash_embedder: Any) -> None:
    async def scenario() -> None:
        server = await _serve(wiki["store"], hash_embedder)
        try:
            async with aiohttp.ClientSession() as http:
                doc = await (await http.get(f"http://127.0.0.1:{server.port}/openapi.json")).json()
            op = doc["paths"]["/answer"]["post"]
            assert op["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("AnswerBody")
            props = doc["components"]["schemas"]["AnswerBody"]["properties"]
            assert {"query", "mode", "generator", "max_context_tokens", "debug", "at", "filter"} <= set(props)
            assert "503" in op["responses"]
        finally:
            await server.close()

    run(scenario())


def test_a_swap_changes_the_cache_key(own_wiki: dict[str, Any], hash_embedder: Any) -> None:
    wiki = own_wiki

    async def scenario() -> None:
        server = await _serve(wiki["store"], hash_embedder)
        url = f"http://127.0.0.1:{server.port}"
        question = {"query": "Zapína sa tlačiareň v laboratóriu zeleným tlačidlom?", "mode": "retrieve"}
        try:
            async with aiohttp.ClientSession() as http:
                first = await (await http.post(url + "/answer", json=question)).json()
                again = await (await http.post(url + "/answer", json=question)).json()
                assert (first["cached"], again["cached"]) == (False, True)
                assert "zeleným" in first["evidence"][0]["text"]
                repo = wiki["repo"]
                repo.write("pages/info/sprievodca.md", "---\ntitle: Sprievodca\n---\n\n# Sprievodca laboratóriom\n\n"
                           "Tlačiareň v laboratóriu sa zapína modrým tlačidlom vpredu zelenej skrinky.\n")
                repo.commit("new printer")
                new = await asyncio.to_thread(build_bundle, repo.path, wiki["store"], embedder=hash_embedder)
                for _ in range(100):
                    health = await (await http.get(url + "/health")).json()
                    if health["bundle"]["bundle_id"] == new.bundle_id:
                        break
                    await asyncio.sleep(0.1)
                after = await (await http.post(url + "/answer", json=question)).json()
                assert after["cached"] is False
                assert after["index_version"]["bundle_id"] == new.bundle_id
                assert "modrým" in after["evidence"][0]["text"]
        finally:
            await server.close()

    run(scenario())
