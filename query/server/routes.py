"""Every route of the server with its role and OpenAPI models (:func:`route_table`), and ``/openapi.json``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from pydantic import BaseModel

from query.server import openapi
from query.server.admin import handle_bundles, handle_health, handle_reload, handle_root, handle_use
from query.server.answers import handle_answer
from query.server.mcp_mount import handle_mcp
from query.server.prom import handle_metrics
from query.server.retrieval import RETRIEVAL_ROUTES, retrieval_handler
from query.server.state import OPENAPI_DOC
from query.server.sync import handle_job, handle_sync, webhook_handler
from query.server.webpage import handle_asset, handle_page


async def handle_openapi(request: web.Request) -> web.Response:
    return web.json_response(request.app[OPENAPI_DOC])


@dataclass(frozen=True)
class Route:
    """One HTTP route: method, path, handler, role (see :mod:`query.server.security`) and OpenAPI models."""

    method: str
    path: str
    handler: Callable[[web.Request], Any]
    role: str
    summary: str
    request_model: type[BaseModel] | None = None
    response_model: type[BaseModel] | None = None
    status: int = 200


def route_table() -> list[Route]:
    """Return every route of the server (the source of ``/openapi.json``)."""
    routes = [
        Route("GET", "/", handle_root, "public", "Links to /health, /openapi.json and the other entry points"),
        Route("GET", "/health", handle_health, "public", "Readiness, served bundle and last reload failure",
              None, openapi.HealthResponse),
        Route("GET", "/openapi.json", handle_openapi, "public", "This OpenAPI 3 document"),
    ]
    routes += [Route("POST", r.path, retrieval_handler(r), "search", r.summary, r.request_model, r.response_model)
               for r in RETRIEVAL_ROUTES]
    routes.append(Route("POST", "/answer", handle_answer, "search",
                        "Checked answer: graph or text evidence, every claim verified against its citation",
                        openapi.AnswerBody, openapi.AnswerResponse))
    routes += [
        Route("GET", "/bundles", handle_bundles, "search", "List published bundles (newest commit first)",
              None, openapi.BundlesResponse),
        Route("GET", "/metrics", handle_metrics, "admin", "Prometheus metrics (text format)"),
        Route("POST", "/admin/reload", handle_reload, "admin", "Re-read CURRENT now and swap if it changed",
              None, openapi.ReloadResponse),
        Route("POST", "/admin/use", handle_use, "admin", "Point CURRENT at a bundle (rollback) and serve it",
              openapi.UseBody, openapi.ReloadResponse),
        Route("POST", "/sync", handle_sync, "sync", "Fetch the configured remote into the mirror and build",
              None, openapi.JobAccepted, 202),
        Route("GET", "/sync/jobs/{job_id:\\d+}", handle_job, "sync", "Status of a build job",
              None, openapi.JobResponse),
        Route("POST", "/webhook/github", webhook_handler("github"), "webhook",
              "GitHub push webhook (HMAC-SHA256 in X-Hub-Signature-256)", None, openapi.JobAccepted, 202),
        Route("POST", "/webhook/gitea", webhook_handler("gitea"), "webhook",
              "Gitea push webhook (HMAC-SHA256 in X-Gitea-Signature)", None, openapi.JobAccepted, 202),
    ]
    return routes


def unlisted_routes() -> list[Route]:
    """Routes left out of ``/openapi.json`` (they are not tools for OpenWebUI): the web page and MCP."""
    return [
        Route("GET", "/ui/", handle_page, "public", "The web page (query/server/web/)"),
        Route("GET", "/ui/{name}", handle_asset, "public", "The web page's script and style sheet"),
        # POST only: the transport is stateless, so there is no server-sent stream (GET answers 405).
        Route("POST", "/mcp", handle_mcp, "search", "MCP streamable HTTP transport (query.server.mcp)"),
    ]
