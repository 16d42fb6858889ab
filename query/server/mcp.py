"""MCP (Model Context Protocol) tools for assistants: ``search``, ``graph``, ``answer``, ``list_bundles``.

Built on the official ``mcp`` SDK's low-level :class:`mcp.server.lowlevel.Server`, so that each
tool's input schema *is* the JSON schema of its HTTP body (``openapi.SearchBody``,
``GraphRequest``, the ``/answer`` route's model) and each result *is* the contract JSON the HTTP
API returns: a tool call goes through :func:`query.server.retrieval.run_retrieval`, exactly like ``POST
/search``.  An error is the contract's error envelope with ``isError`` set.

Two transports:

* stdio: ``gitrag mcp --store DIR`` (:func:`serve_stdio`), for Claude Desktop / Claude Code;
* streamable HTTP at ``/mcp`` on the aiohttp query server (:func:`handle_mcp`), behind the same
  API keys (role ``search``), rate limits and security headers as the other routes.  The SDK's
  session manager is an ASGI app; :func:`handle_mcp` hands it one aiohttp request as an ASGI call
  (a route of our own rather than an ASGI mount, so that the role check, which looks up the
  matched route, covers it).  It runs stateless with JSON responses: every tool call is one
  self-contained POST, which any replica behind a load balancer can answer; there is no
  server-sent stream, so ``GET /mcp`` answers 405 as the transport specification allows.

The ``answer`` tool runs :func:`query.server.answers.run_answer` (no streaming, no admin debug report).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import mcp_types as types
from aiohttp import web
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from artifacts import __version__
from artifacts.errors import ArtifactError
from query.answer.cache import AnswerCache
from query.config import ServerConfig
from query.contract import error_body
from query.errors import QueryError
from query.search.request import SearchOptions
from query.server import openapi
from query.server.admin import list_bundles
from query.server.answers import AnswerContext, answer_context, run_answer
from query.server.holder import BundleHolder
from query.server.retrieval import RETRIEVAL_ROUTES, RetrievalRoute, run_retrieval
from query.server.security import CONFIG, SECURITY_HEADERS
from query.server.state import HOLDER, MCP_SESSION, OPTIONS

log = logging.getLogger("gitrag.mcp")

INSTRUCTIONS = (
    "gitrag searches a Git-versioned Markdown knowledge base and answers from it. Every result names the "
    "bundle (commit) that answered in index_version and its sources as S1, S2, ... with document_path and "
    "source_url. Quote answers as they were checked; do not add facts the results do not contain; cite the "
    "source ids you use. When status is no_answer or ambiguous, say so instead of guessing."
)

_CHECKED = ("Quote the result as returned (it was checked against the sources); do not add facts that are not in it, "
            "and cite the source ids (S1, S2, ...) you rely on. status no_answer or ambiguous is an honest answer: "
            "report it, do not guess. ")
_AT = "Optional `at`: a commit id, short commit, branch or tag, to answer from that commit's bundle (time travel). "

DESCRIPTIONS = {
    "search": ("Hybrid search (BM25 + vectors) over the knowledge base. Returns ranked passages (results: title, "
               "heading_path, text, snippet, match, document_path, source_url, source_id; match 'semantic' means only "
               "the vector search found it, no query word occurs in it) in the gitrag response contract. "
               + _CHECKED + _AT),
    "graph": ("Ask the knowledge graph a factual question (who wrote what, works of a person with type and year, "
              "exact counts, shared tags or topics, links between pages). Returns facts, an exact aggregation and "
              "sources in the gitrag response contract; unsupported_question means: use the search tool. "
              + _CHECKED + _AT),
    "answer": ("A checked answer to a question: text with [S1]-style citations, claims with their evidence and "
               "answer_coverage warnings. The answer was verified against its evidence; quote it, keep its "
               "citations and warnings, and add nothing to it. " + _CHECKED + _AT),
    "list_bundles": ("List the published bundles (one per indexed commit, newest first) with commit, summary, "
                     "time and which one is served; use a commit from here as `at` in the other tools."),
}
_LIST_BUNDLES_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def tool_routes() -> dict[str, RetrievalRoute]:
    """Return ``{tool name: retrieval route}`` for the tools backed by a retrieval route of this server."""
    by_path = {r.path: r for r in RETRIEVAL_ROUTES}
    return {name: by_path[f"/{name}"] for name in ("search", "graph") if f"/{name}" in by_path}


def _input_schema(name: str, route: RetrievalRoute) -> dict[str, Any]:
    model = openapi.SearchBody if name == "search" else route.request_model
    if model is None:
        return {"type": "object"}
    schema = model.model_json_schema()
    properties = schema.setdefault("properties", {})
    properties.setdefault("at", {"type": "string", "maxLength": 200, "description": openapi.AT_DESCRIPTION})
    return schema


def tool_definitions() -> list[types.Tool]:
    """Return the MCP tool list: one tool per retrieval route named above, plus ``list_bundles``."""
    read_only = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                      open_world_hint=False)
    tools = [types.Tool(name=name, description=DESCRIPTIONS[name], input_schema=_input_schema(name, route),
                        annotations=read_only) for name, route in tool_routes().items()]
    answer_schema = openapi.AnswerBody.model_json_schema()
    answer_schema.setdefault("properties", {}).pop("debug", None)  # the admin report is not for assistants
    answer_schema["properties"].setdefault("at", {"type": "string", "maxLength": 200,
                                                  "description": openapi.AT_DESCRIPTION})
    tools.append(types.Tool(name="answer", description=DESCRIPTIONS["answer"], input_schema=answer_schema,
                            annotations=read_only))
    tools.append(types.Tool(name="list_bundles", description=DESCRIPTIONS["list_bundles"],
                            input_schema=_LIST_BUNDLES_SCHEMA, annotations=read_only))
    return tools


def error_envelope(exc: BaseException) -> dict[str, Any]:
    """Return the contract's error body for ``exc`` (the reason the HTTP API would give; nothing echoed)."""
    if isinstance(exc, QueryError):
        body = error_body(exc.reason, exc.public_message)
        if exc.fields:
            body["errors"] = exc.fields
        return body
    if isinstance(exc, ArtifactError):
        return error_body("retrieval_unavailable")
    log.error("MCP tool failed", exc_info=exc)
    return error_body("internal_error")


async def call_tool(holder: BundleHolder, options: SearchOptions, name: str,
                    arguments: dict[str, Any] | None, answers: AnswerContext | None = None) -> dict[str, Any]:
    """Run tool ``name`` with ``arguments`` (the HTTP body) and return the contract JSON, errors included."""
    try:
        if name == "list_bundles":
            if arguments:
                return error_body("invalid_request")
            return await list_bundles(holder)
        if name == "answer":
            if answers is None:
                return error_body("not_found")
            return await run_answer(holder, options, answers, arguments or {})
        route = tool_routes().get(name)
        if route is None:
            return error_body("not_found")
        return await run_retrieval(holder, options, route, arguments or {})
    except Exception as exc:  # noqa: BLE001 - converted to the envelope like the HTTP middleware does
        return error_envelope(exc)


def build_server(holder: BundleHolder, options: SearchOptions, *, refresh_seconds: float | None = None,
                 answers: AnswerContext | None = None) -> Server:
    """Return the MCP server answering from ``holder``'s bundles.

    :param refresh_seconds: when set (stdio), re-read ``CURRENT`` before a tool call at most this
        often, so a long-lived assistant session follows new builds; the HTTP server has its own poller.
    """
    checked = [0.0]

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_definitions())

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if refresh_seconds is not None and time.monotonic() - checked[0] >= refresh_seconds:
            checked[0] = time.monotonic()
            await asyncio.to_thread(holder.load_current)
        body = await call_tool(holder, options, params.name, params.arguments, answers)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
            structured_content=body, is_error=body.get("status") == "error")

    return Server("gitrag", version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def serve_stdio(holder: BundleHolder, options: SearchOptions, refresh_seconds: float = 2.0) -> None:
    """Serve MCP over this process's stdin/stdout until the client closes it."""
    from mcp.server.stdio import stdio_server

    from query.server.answers import default_generators

    config = ServerConfig()
    answers = AnswerContext(default_generators(config),
                            AnswerCache(config.answer.cache_entries, config.answer.cache_megabytes * 1024 * 1024),
                            config.answer.coverage_threshold)
    server = build_server(holder, options, refresh_seconds=refresh_seconds, answers=answers)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


# -- streamable HTTP on the aiohttp server ---------------------------------------------------------

LOOPBACK_SECURITY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)


def mcp_manager(holder: BundleHolder, options: SearchOptions, config: ServerConfig,
                answers: AnswerContext | None = None) -> StreamableHTTPSessionManager:
    """Return the SDK's session manager for ``/mcp`` (stateless, JSON responses).

    Without API keys the server is loopback-only, and the SDK's DNS-rebinding guard (Host and
    Origin must be loopback) keeps web pages from reaching it through a rebound name.
    """
    return StreamableHTTPSessionManager(
        build_server(holder, options, answers=answers), json_response=True, stateless=True,
        security_settings=None if config.keys_configured else LOOPBACK_SECURITY,
        max_request_body_size=config.max_body_bytes)


async def mcp_context(app: web.Application) -> AsyncIterator[None]:
    """aiohttp ``cleanup_ctx``: run the session manager for the app's lifetime.

    The manager's ``run()`` holds an anyio task group, which must be entered and left in one
    task: it gets a task of its own that lives until cleanup.
    """
    manager = mcp_manager(app[HOLDER], app[OPTIONS], app[CONFIG], answer_context(app))
    ready, stop = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        async with manager.run():
            ready.set()
            await stop.wait()

    task = asyncio.create_task(run())
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()  # raises the start-up failure
    app[MCP_SESSION]["manager"] = manager  # a slot made by create_app: the app has started by now
    try:
        yield
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def handle_mcp(request: web.Request) -> web.StreamResponse:
    """``POST /mcp``: the MCP streamable HTTP transport (JSON-RPC in, JSON out)."""
    manager: StreamableHTTPSessionManager = request.app[MCP_SESSION]["manager"]
    body = await request.read()
    delivered = False
    finished = asyncio.Event()
    response: web.StreamResponse | None = None

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        while not finished.is_set():  # nothing more to read: wait for the end or the client leaving
            transport = request.transport
            if transport is None or transport.is_closing():
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finished.wait(), 0.5)
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for key, value in message.get("headers", []):
                response.headers.add(key.decode("latin-1"), value.decode("latin-1"))
            for key, value in SECURITY_HEADERS.items():  # headers are sent on prepare, before the middleware sees them
                response.headers.setdefault(key, value)
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None:
            await response.write(message.get("body", b""))
            if not message.get("more_body", False):
                await response.write_eof()

    host = request.url.host or "127.0.0.1"
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
        "scheme": request.scheme, "path": request.path, "raw_path": request.raw_path.encode("latin-1"),
        "root_path": "", "query_string": request.query_string.encode("latin-1"),
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": (request.remote or "", 0), "server": (host, request.url.port or 80),
    }
    try:
        await manager.handle_request(scope, receive, send)
    finally:
        finished.set()
    if response is None:
        raise RuntimeError("the MCP transport sent no response")
    return response


__all__ = ["DESCRIPTIONS", "INSTRUCTIONS", "build_server", "call_tool", "handle_mcp", "mcp_context",
           "serve_stdio", "tool_definitions", "tool_routes"]
