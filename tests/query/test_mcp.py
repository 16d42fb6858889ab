"""MCP tools with the SDK's own client: over stdio (`gitrag mcp`) and streamable HTTP at /mcp on loopback."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from indexer.build import build_bundle
from query.config import ServerConfig
from query.search.request import SearchRequest
from query.server.mcp import DESCRIPTIONS, tool_routes
from tests.conftest import RepoBuilder
from tests.query.test_server import ADMIN_KEY, SEARCH_KEY, with_server

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def wiki(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Two commits with bundles: c1 has a page the second commit deletes."""
    repo.write("wiki/holp.md", "---\ntitle: Ján Holp\nauthor: Eva Nová\n---\n# Ján Holp\n\n"
                               "Diplomová práca o zebraplanktóne.\n")
    repo.write("wiki/stary.md", "# Starý návod\n\nPostup pre archeopteryx kalibráciu.\n")
    c1 = repo.commit("one")
    build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder, branch="main")
    repo.remove("wiki/stary.md")
    repo.write("wiki/hory.md", "# Hory\n\nNiečo úplne iné o horách.\n")
    c2 = repo.commit("two")
    build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder, branch="main")
    return {"c1": c1, "c2": c2, "store": str(tmp_path / "store")}


def _expected_tools() -> set[str]:
    return set(tool_routes()) | {"answer", "list_bundles"}


async def _exercise(client: Client, wiki: dict[str, str]) -> dict[str, Any]:
    """Call every tool through ``client``; return the structured results for comparison with HTTP."""
    listed = await client.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == _expected_tools()
    search_schema = tools["search"].input_schema
    assert set(SearchRequest.model_fields) | {"at"} == set(search_schema["properties"])
    assert "query" in search_schema["required"]
    for name, tool in tools.items():
        assert tool.description == DESCRIPTIONS[name]
    assert "do not add facts" in tools["search"].description

    out: dict[str, Any] = {}
    result = await client.call_tool("search", {"query": "zebraplanktón", "limit": 3})
    assert result.is_error is False
    out["search"] = result.structured_content
    assert out["search"]["results"][0]["document_path"] == "wiki/holp.md"
    assert out["search"]["index_version"]["commit"] == wiki["c2"]
    assert result.content[0].type == "text" and "wiki/holp.md" in result.content[0].text

    old = await client.call_tool("search", {"query": "archeopteryx kalibrácia", "at": wiki["c1"][:8]})
    out["search_old"] = old.structured_content
    assert old.structured_content["index_version"]["commit"] == wiki["c1"]
    assert old.structured_content["results"][0]["document_path"] == "wiki/stary.md"

    graph = await client.call_tool("graph", {"question": "Kto napísal Ján Holp?"})
    out["graph"] = graph.structured_content
    assert graph.structured_content["status"] in ("ok", "no_answer", "ambiguous")
    assert {"status", "reason", "sources", "index_version", "complete"} <= set(graph.structured_content)

    answered = await client.call_tool("answer", {"query": "Čo je zebraplanktón v diplomovej práci?",
                                                 "mode": "retrieve"})
    out["answer"] = answered.structured_content
    assert answered.is_error is False and out["answer"]["status"] in ("ok", "no_answer")
    assert {"engine", "answer", "claims", "answer_coverage", "index_version"} <= set(out["answer"])
    assert "debug" not in tools["answer"].input_schema["properties"]
    assert "at" in tools["answer"].input_schema["properties"]
    debug = await client.call_tool("answer", {"query": "zebraplanktón", "debug": True})
    assert debug.is_error is True and debug.structured_content["reason"] == "forbidden"

    bundles = await client.call_tool("list_bundles", {})
    commits = [b["commit"] for b in bundles.structured_content["bundles"]]
    assert commits == [wiki["c2"], wiki["c1"]]
    out["list_bundles"] = bundles.structured_content

    bad = await client.call_tool("search", {"query": ""})
    assert bad.is_error is True
    assert bad.structured_content["status"] == "error" and bad.structured_content["reason"] == "invalid_query"
    unknown = await client.call_tool("search", {"query": "x", "at": "../../etc/passwd"})
    assert unknown.is_error is True and unknown.structured_content["reason"] == "invalid_at"
    assert "passwd" not in unknown.content[0].text
    extra = await client.call_tool("search", {"query": "x", "nonsense": 1})
    assert extra.structured_content["reason"] == "invalid_request"
    return out


def _gitrag() -> str:
    found = shutil.which("gitrag", path=str(Path(sys.executable).parent))
    assert found, "the gitrag entry point is not installed in this environment"
    return found


def test_stdio_tools_with_the_sdk_client(wiki: dict[str, str]) -> None:
    import anyio

    params = StdioServerParameters(
        command=_gitrag(), args=["mcp", "--store", wiki["store"]],
        env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
             "PATH": os.environ.get("PATH", "")})

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await _exercise(client, wiki)

    anyio.run(main)


def test_http_tools_match_the_http_api(wiki: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with Client(base + "/mcp", read_timeout_seconds=60) as client:
            out = await _exercise(client, wiki)
        async with http.post(base + "/search", json={"query": "zebraplanktón", "limit": 3}) as resp:
            assert out["search"] == await resp.json()
        async with http.post(base + "/search", json={"query": "archeopteryx kalibrácia", "at": wiki["c1"][:8]}) as r:
            assert out["search_old"] == await r.json()
        async with http.post(base + "/graph", json={"question": "Kto napísal Ján Holp?"}) as resp:
            assert out["graph"] == await resp.json()
        async with http.get(base + "/bundles") as resp:
            assert out["list_bundles"] == await resp.json()
        async with http.post(base + "/answer", json={"query": "Čo je zebraplanktón v diplomovej práci?",
                                                     "mode": "retrieve"}) as resp:
            body = await resp.json()
        assert {k: v for k, v in out["answer"].items() if k not in ("timings", "cached")} == \
            {k: v for k, v in body.items() if k not in ("timings", "cached")}
        # Stateless: no server-sent stream, so GET is 405 in the contract's envelope (the SDK client copes).
        async with http.get(base + "/mcp", headers={"Accept": "text/event-stream"}) as resp:
            assert resp.status == 405 and (await resp.json())["reason"] == "method_not_allowed"
        # /mcp is not an OpenWebUI tool: it stays out of the OpenAPI document.
        async with http.get(base + "/openapi.json") as resp:
            assert "/mcp" not in (await resp.json())["paths"]

    with_server(Path(wiki["store"]), hash_embedder, scenario)


def test_http_mcp_needs_a_search_key_when_keys_are_set(wiki: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    config = ServerConfig(search_key=SEARCH_KEY, admin_key=ADMIN_KEY)

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "0"}}}
        headers = {"Accept": "application/json, text/event-stream"}
        async with http.post(base + "/mcp", json=init, headers=headers) as resp:
            assert resp.status == 401 and (await resp.json())["reason"] == "unauthorized"
        async with http.post(base + "/mcp", json=init, headers=headers | {"X-API-Key": "w" * 40}) as resp:
            assert resp.status == 401
        async with http.post(base + "/mcp", json=init, headers=headers | {"X-API-Key": SEARCH_KEY}) as resp:
            assert resp.status == 200, await resp.text()
            assert (await resp.json())["result"]["serverInfo"]["name"] == "gitrag"
            assert resp.headers["X-Content-Type-Options"] == "nosniff"

        transport = streamable_http_client(base + "/mcp", http_client=create_mcp_http_client(
            headers={"Authorization": f"Bearer {SEARCH_KEY}"}))
        async with Client(transport, read_timeout_seconds=60) as client:
            result = await client.call_tool("search", {"query": "zebraplanktón"})
            assert result.structured_content["results"][0]["document_path"] == "wiki/holp.md"

    with_server(Path(wiki["store"]), hash_embedder, scenario, config=config)


def test_http_mcp_without_keys_refuses_a_foreign_origin(wiki: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    """Loopback without keys: the SDK's DNS-rebinding guard refuses a web page's origin."""

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "0"}}}
        headers = {"Accept": "application/json, text/event-stream", "Origin": "http://evil.example"}
        async with http.post(base + "/mcp", json=init, headers=headers) as resp:
            assert resp.status in (400, 403)
        async with http.post(base + "/mcp", json=init, headers=headers | {"Origin": base}) as resp:
            assert resp.status == 200

    with_server(Path(wiki["store"]), hash_embedder, scenario)
