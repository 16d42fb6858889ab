"""The retrieval routes: ``/search``, ``/graph`` and ``/document``.

Retrieval endpoints are rows of :data:`RETRIEVAL_ROUTES`: a path and a function
``(OpenedBundle, payload) -> dict``.  They all accept ``at`` (see :mod:`query.timetravel`), which
selects a historical bundle from a small LRU instead of the served one.  Adding ``/graph`` is one
row.  Every route, with its role and models, is listed in :func:`query.server.routes.route_table`,
which also feeds ``/openapi.json``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from pydantic import BaseModel

from query.bundle import OpenedBundle
from query.documents import DocumentRequest, get_document, parse_document_request
from query.graph.dispatch import answer_graph
from query.search.request import SearchOptions, parse_search_request
from query.search.response import search
from query.server import openapi
from query.server.body import read_json, split_at
from query.server.holder import BundleHolder
from query.server.security import (
    check_unpublished,
    may_read_unpublished,
)
from query.server.state import BUNDLE_ID, HOLDER, OPTIONS

Retrieval = Callable[[OpenedBundle, Any], dict[str, Any]]


@dataclass(frozen=True)
class RetrievalRoute:
    """A retrieval endpoint: ``POST path`` with a JSON object (plus ``at``), answered by ``run``.

    ``parse`` validates the payload (without ``at``) before a bundle is leased; ``run`` gets the
    parsed value and the bundle; ``options`` routes get the server's :class:`SearchOptions` too.
    """

    path: str
    run: Callable[..., dict[str, Any]]
    summary: str
    request_model: type[BaseModel] | None = None
    response_model: type[BaseModel] | None = None
    parse: Callable[[Any], Any] | None = None
    wants_options: bool = False


def _run_graph(bundle: OpenedBundle, payload: Any, options: SearchOptions) -> dict[str, Any]:
    return answer_graph(bundle, payload, base_url=options.base_url)  # source_url like /search's


def _run_search(bundle: OpenedBundle, request: Any, options: SearchOptions) -> dict[str, Any]:
    return search(bundle, request, options)


def _run_document(bundle: OpenedBundle, request: Any, options: SearchOptions) -> dict[str, Any]:
    return get_document(bundle, request, options.base_url)


RETRIEVAL_ROUTES: list[RetrievalRoute] = [
    RetrievalRoute("/search", _run_search, "Hybrid search (BM25 + vectors, RRF) over the served or an older bundle",
                   openapi.SearchBody, openapi.SearchResponse, parse=parse_search_request, wants_options=True),
    RetrievalRoute("/graph", _run_graph, "Graph retrieval: facts, paths, documents and exact counts", openapi.GraphBody,
                   wants_options=True),
    RetrievalRoute("/document", _run_document, "One cited page's Markdown from the served or an older bundle",
                   DocumentRequest, parse=parse_document_request, wants_options=True),
]


async def run_retrieval(holder: BundleHolder, options: SearchOptions, route: RetrievalRoute,
                        payload: Any, *, unpublished: bool = False) -> dict[str, Any]:
    """Answer one retrieval request body (``at`` included) as ``POST route.path`` does.

    The HTTP handlers and the MCP tools (:mod:`query.server.mcp`) both call this.  Returns the
    response body (contract envelope + the route's fields).  Raises :class:`QueryError` subclasses
    (bad body, bad or unknown ``at``, no bundle, ``published_only: false`` without ``unpublished``:
    the caller may read unpublished pages, see :func:`~query.server.security.check_unpublished`) for the
    transport to convert.
    """
    payload, at = split_at(payload)
    check_unpublished(payload, allowed=unpublished)
    parsed = route.parse(payload) if route.parse is not None else payload

    def run() -> dict[str, Any]:
        bundle_id = holder.resolve(at) if at is not None else None
        with holder.lease(bundle_id) as bundle:
            if route.wants_options:
                return route.run(bundle, parsed, options)
            return route.run(bundle, parsed)

    return await asyncio.to_thread(run)


def retrieval_handler(route: RetrievalRoute) -> Callable[[web.Request], Any]:
    async def handler(request: web.Request) -> web.Response:
        payload = await read_json(request)
        body = await run_retrieval(request.app[HOLDER], request.app[OPTIONS], route, payload,
                                   unpublished=may_read_unpublished(request))
        if isinstance(body.get("index_version"), dict):
            request[BUNDLE_ID] = body["index_version"].get("bundle_id")  # for the access log
        return web.json_response(body)

    handler.__name__ = "handle_" + route.path.strip("/").replace("/", "_")
    return handler
