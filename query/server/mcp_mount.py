"""Mounting the MCP transport (:mod:`query.server.mcp`) at ``POST /mcp``: started after the server
listens, the body read under the server's limits first."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from typing import Any

from aiohttp import web

from query.errors import (
    InvalidRequestError,
)
from query.server.body import decode_json, read_body
from query.server.security import (
    CONFIG,
)
from query.server.state import MCP_START

log = logging.getLogger("gitrag.server")


async def start_mcp(app: web.Application) -> Any:
    """Import :mod:`query.server.mcp` in a thread and start its session manager; return its context.

    The ``mcp`` package is large (about a second of imports): loading it after the server listens
    keeps ``gitrag serve`` ready in that second less; ``POST /mcp`` waits for it.
    """
    module = await asyncio.to_thread(importlib.import_module, "query.server.mcp")
    context = module.mcp_context(app)
    await context.__anext__()
    return context


def _invalid_json_rpc_ids(payload: Any) -> bool:
    """True when a JSON-RPC message (or one of a batch) has an ``id`` that is neither a string, an integer
    nor null (JSON-RPC 2.0 section 4; the SDK would otherwise answer 202 with no body)."""
    messages = payload if isinstance(payload, list) else [payload]
    return any(isinstance(m, dict) and "id" in m and not (m["id"] is None or isinstance(m["id"], str)
                                                       or (isinstance(m["id"], int) and not isinstance(m["id"], bool)))
               for m in messages)


async def handle_mcp(request: web.Request) -> web.StreamResponse:
    """``POST /mcp``: the MCP streamable HTTP transport (:func:`query.server.mcp.handle_mcp`).

    Before the SDK sees it, the body is read here under the server's limits (``max_body_bytes``: 413 in
    the contract's envelope; ``body_timeout``), and a message whose ``id`` is an object, array, float
    or boolean is answered with JSON-RPC error ``-32600`` (HTTP 400).
    """
    if request.method == "POST":
        raw = await read_body(request, request.app[CONFIG].max_body_bytes)  # cached: the SDK reads it again
        with contextlib.suppress(InvalidRequestError):
            if _invalid_json_rpc_ids(decode_json(raw)):
                return web.json_response({"jsonrpc": "2.0", "id": None,
                                          "error": {"code": -32600, "message": "Invalid Request: bad id"}},
                                         status=400)
    await asyncio.shield(request.app[MCP_START])
    from query.server.mcp import handle_mcp as handle

    return await handle(request)


async def stop_mcp(app: web.Application) -> None:
    task = app.get(MCP_START)
    if task is None:
        return
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        return
    if task.cancelled() or task.exception() is not None:
        return
    with contextlib.suppress(StopAsyncIteration):
        await task.result().__anext__()


def log_mcp_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the MCP transport failed to start", exc_info=task.exception(), extra={"event": "mcp_failed"})
