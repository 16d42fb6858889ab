"""The status and admin routes: ``GET /``, ``/health``, ``/bundles``, ``POST /admin/reload`` and ``/admin/use``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web

from artifacts import __version__
from artifacts.errors import ArtifactError
from artifacts.store import use_bundle
from query.bundle import OpenedBundle
from query.config import ServerConfig
from query.errors import (
    InvalidRequestError,
)
from query.server import openapi
from query.server.body import read_body, read_json
from query.server.holder import FALLBACK_HINT, BundleHolder
from query.server.security import (
    CONFIG,
    has_valid_key,
)
from query.server.state import HOLDER, WORKER
from query.server.webpage import handle_page, wants_html
from query.timetravel import check_at

log = logging.getLogger("gitrag.server")

USE_LOCK_TIMEOUT = 10.0
"""Seconds ``POST /admin/use`` waits for the store lock (a build holds it) before ``503 store_busy``."""


def _bundle_summary(holder: BundleHolder, bundle: OpenedBundle) -> dict[str, Any]:
    m = bundle.manifest
    return {
        "commit": m.commit, "bundle_id": m.bundle_id, "content_digest": m.content_digest,
        "commit_summary": m.commit_summary, "counts": m.counts.model_dump(), "embedder": m.config.embedder.model_id,
    }


async def handle_health(request: web.Request) -> web.Response:
    """Readiness for everyone; on a server with API keys, the details (bundle, counts, embedder,
    reload errors, cache) only with a valid key (any role)."""
    holder: BundleHolder = request.app[HOLDER]
    config: ServerConfig = request.app[CONFIG]
    bundle = holder.bundle
    body: dict[str, Any] = {
        "status": "ok" if bundle is not None else "error",
        "ready": bundle is not None,
        "reason": None if bundle is not None else "retrieval_unavailable",
        "message": None,
        "auth": "api_keys" if config.keys_configured else "none (no API keys configured; loopback only)",
    }
    fallback = holder.fallback if bundle is not None and holder.fallback is not None \
        and holder.fallback["bundle_id"] == bundle.bundle_id else None
    if bundle is None:
        body["serving"] = None
    elif fallback is not None:
        body["serving"] = "fallback"  # CURRENT failed at start: an older verified bundle
    elif holder.failed_bundle is not None and holder.failed_bundle != bundle.bundle_id:
        body["serving"] = "previous"  # CURRENT moved to a bundle that failed: the one served before stays
    else:
        body["serving"] = "current"
    if bundle is None:
        body["message"] = holder.unavailable_hint()
    elif fallback is not None:
        body["message"] = FALLBACK_HINT
    if not config.keys_configured or has_valid_key(config, request):
        body |= {
            "fallback": fallback,
            "last_reload_error": holder.last_error,
            "failed_bundle": holder.failed_bundle,
            "swaps": holder.swaps,
            "bundle": _bundle_summary(holder, bundle) if bundle is not None else None,
            "history_cache": holder.cache.info(),
            "warm_s": holder.last_warm,
        }
        if holder.replica is not None:
            body["replica"] = holder.replica.status()
        if WORKER in request.app:
            slot = request.app[WORKER]
            body["worker"] = {"index": slot.index, "count": slot.count}
    return web.json_response(body, status=200 if bundle is not None else 503)


ROOT_LINKS: dict[str, str] = {"health": "/health", "openapi": "/openapi.json", "bundles": "/bundles",
                              "page": "/ui/", "metrics": "/metrics", "mcp": "/mcp"}
"""Links listed by ``GET /`` (a web page registers itself here)."""
QUERY_ENDPOINTS = ("POST /search", "POST /answer", "POST /graph", "POST /document")
"""The query endpoints ``GET /`` names (each takes a JSON body; see ``/openapi.json``)."""


async def handle_root(request: web.Request) -> web.Response:
    """What this server is, with links to ``/health``, ``/openapi.json`` and the other entry points.

    A browser (``Accept`` prefers ``text/html``) gets the web page instead (:mod:`query.server.webpage`)."""
    if wants_html(request):
        return await handle_page(request)
    return web.json_response({"status": "ok", "name": "gitrag", "version": __version__, "links": dict(ROOT_LINKS),
                              "query_endpoints": list(QUERY_ENDPOINTS)})


async def handle_bundles(request: web.Request) -> web.Response:
    return web.json_response(await list_bundles(request.app[HOLDER]))


async def list_bundles(holder: BundleHolder) -> dict[str, Any]:
    """Return the ``GET /bundles`` body: ``current``, ``served`` and ``bundles`` (newest commit first).

    On a replica (``serve --from``) the bundles are the published ones (the remote store's, a listing
    reused for :data:`query.server.replica.LISTING_TTL` seconds), each with ``cached`` (held in the
    local cache); ``current`` is the remote ``CURRENT`` the replica last read.  When the remote store
    cannot be listed, the cached bundles are listed and ``remote_error`` says why.
    """
    served = holder.bundle.bundle_id if holder.bundle is not None else None
    replica = holder.replica
    extra: dict[str, Any] = {}
    if replica is not None:
        cached = set(replica.cached_bundles())
        current = replica.remote_current or holder.store.current_id()
        try:
            manifests = await asyncio.to_thread(replica.published_manifests)
        except ArtifactError as exc:
            log.warning("cannot list the remote bundles: %s", exc, extra={"event": "replica_error"})
            manifests = [b.manifest for b in await asyncio.to_thread(holder.index.list)]
            extra["remote_error"] = "the remote store cannot be listed now; the cached bundles are listed"
    else:
        manifests = [b.manifest for b in await asyncio.to_thread(holder.index.list)]
        current = holder.store.current_id()
    items = [{
        "bundle_id": m.bundle_id, "commit": m.commit, "commit_time": m.commit_time,
        "commit_summary": m.commit_summary, "ref": m.source.ref,
        "content_digest": m.content_digest, "documents": m.counts.documents,
        "chunks": m.counts.chunks, "stage": m.stage,
        "current": m.bundle_id == current, "served": m.bundle_id == served,
        **({"cached": m.bundle_id in cached} if replica is not None else {}),
    } for m in manifests]
    return {"status": "ok", "current": current, "served": served, "bundles": items, **extra}


async def reload_current(app: web.Application, force: bool) -> dict[str, Any]:
    holder: BundleHolder = app[HOLDER]
    swapped = await asyncio.to_thread(holder.load_current, force)
    served = holder.bundle.bundle_id if holder.bundle is not None else None
    return {"status": "ok" if served is not None and holder.last_error is None else "error",
            "swapped": swapped, "served": served, "current": holder.store.current_id(),
            "last_reload_error": holder.last_error}


def _reload_siblings(app: web.Application) -> None:
    """On a worker of ``--workers N``: have the supervisor send ``SIGHUP`` to the other workers."""
    if WORKER in app:
        app[WORKER].tell(b"H")


async def handle_reload(request: web.Request) -> web.Response:
    """Re-read ``CURRENT`` now; on ``--workers N`` the answering worker swaps before it answers and
    the others are told to reload at once (they would otherwise follow at their next poll)."""
    await read_body(request, request.app[CONFIG].max_body_bytes)
    body = await reload_current(request.app, force=True)
    _reload_siblings(request.app)
    return web.json_response(body)


async def handle_use(request: web.Request) -> web.Response:
    payload = await read_json(request)
    try:
        target = openapi.UseBody.model_validate(payload)
    except ValueError as exc:
        raise InvalidRequestError("invalid use request") from exc
    holder: BundleHolder = request.app[HOLDER]
    check_at(target.bundle)

    def use() -> str:
        # The same function as `gitrag use`: resolve, verify, take the store lock, write CURRENT.
        served = holder.bundle.manifest if holder.bundle is not None else None
        return use_bundle(holder.store, target.bundle, bundles=holder.index.list(), prefer=served,
                          lock_timeout=USE_LOCK_TIMEOUT).bundle_id

    bundle_id = await asyncio.to_thread(use)
    body = await reload_current(request.app, force=True)
    _reload_siblings(request.app)
    return web.json_response(body, status=200 if body["served"] == bundle_id else 503)
