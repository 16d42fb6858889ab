"""The keys of the server's shared state: what :func:`query.server.app.create_app` puts on the
application (``app[HOLDER]``, ...) and on a request (``request[BUNDLE_ID]``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from query.answer.cache import AnswerCache
from query.answer.evidence import Generator
from query.search.request import SearchOptions
from query.server.holder import BundleHolder
from query.server.workers import WorkerSlot

BUNDLE_ID = web.RequestKey("bundle_id", str)
"""The bundle that answered a request, for its access-log line."""
HOLDER = web.AppKey("holder", BundleHolder)
CONNECTION_LIMITS = web.AppKey("connection_limits", object)
OPTIONS = web.AppKey("options", SearchOptions)
ANSWER_CACHE = web.AppKey("answer_cache", AnswerCache)
# name -> generator (query.server.answers.default_generators); a Callable is no class, so the key names its type here
GENERATORS: web.AppKey[Callable[[str | None], Generator]] = web.AppKey("generators", Callable)  # type: ignore[arg-type]
WATCHER = web.AppKey("watcher", asyncio.Task)
WORKER = web.AppKey("worker", WorkerSlot)
"""Set on a worker of ``gitrag serve --workers N`` (:mod:`query.server.workers`); absent on a single server."""
STORE_ROOT = web.AppKey("store_root", Path)
OPENAPI_DOC = web.AppKey("openapi", dict)
MCP_START = web.AppKey("mcp_start", asyncio.Task)
"""Starts the MCP session manager once the server listens (see :func:`query.server.mcp_mount.start_mcp`)."""
MCP_SESSION = web.AppKey("mcp_session", dict)
"""``{"manager": StreamableHTTPSessionManager}`` once :mod:`query.server.mcp` has started it."""
