"""The aiohttp query server: :func:`create_app` wires the routes, middlewares, bundle holder and watcher.

The swap protocol is in :mod:`query.server.holder`, the routes in :mod:`query.server.routes`, the
connection handling and the runner in :mod:`query.server.connections` and :mod:`query.server.runner`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

from artifacts.embedding import Embedder
from artifacts.store import Store
from query.answer.cache import AnswerCache
from query.answer.evidence import Generator
from query.config import ServerConfig
from query.search.request import SearchOptions
from query.server import openapi
from query.server.admin import reload_current
from query.server.answers import default_generators
from query.server.connections import EnvelopeRequestHandler
from query.server.holder import BundleHolder
from query.server.mcp_mount import log_mcp_failure, start_mcp, stop_mcp
from query.server.prom import METRICS, ServerMetrics, metrics_middleware
from query.server.routes import route_table, unlisted_routes
from query.server.security import (
    AUTH_FAILURES,
    CONFIG,
    LIMITER,
    PROXY_NETWORKS,
    ROLES,
    RateLimiter,
    auth_middleware,
    envelope_middleware,
    headers_middleware,
)
from query.server.state import (
    ANSWER_CACHE,
    BUNDLE_ID,
    GENERATORS,
    HOLDER,
    MCP_SESSION,
    MCP_START,
    OPENAPI_DOC,
    OPTIONS,
    STORE_ROOT,
    WATCHER,
    WORKER,
)
from query.server.warm import make_probe
from query.server.workers import WorkerSlot

log = logging.getLogger("gitrag.server")
access_log = logging.getLogger("gitrag.access")


async def _watch(app: web.Application, interval: float) -> None:
    holder: BundleHolder = app[HOLDER]
    while True:
        await asyncio.sleep(interval)
        if WORKER in app and app[WORKER].orphaned():
            log.warning("the supervisor is gone; this worker stops", extra={"event": "worker_orphaned"})
            signal.raise_signal(signal.SIGTERM)  # aiohttp's handler: a graceful exit
            return
        try:
            await asyncio.to_thread(holder.load_current)
        except Exception:  # noqa: BLE001 - the watcher must never die
            log.exception("reload check failed")


def create_app(store_dir: Path | str, *, options: SearchOptions | None = None,
               embedder: Embedder | None = None, poll_interval: float | None = None,
               config: ServerConfig | None = None,
               generators: Callable[[str | None], Generator] | None = None,
               worker: WorkerSlot | None = None, replica: Any = None) -> web.Application:
    """Return the aiohttp application serving the store's ``CURRENT`` bundle.

    ``embedder`` overrides the manifest's model (tests); ``poll_interval`` (seconds) overrides the
    config's; ``generators`` maps a request's generator name (``None``: the server default) to a
    :class:`~query.answer.evidence.Generator` (default: :func:`query.answer.generators.make_generator`).
    ``worker``: this app is one of ``worker.count`` processes on one port (:mod:`query.server.workers`);
    each then enforces ``1/count`` of the configured rate limits (see :func:`split_limit`).
    ``replica``: a :class:`query.server.replica.Replica` whose cache is ``store_dir`` (``serve --from``): it
    runs from start-up to clean-up, feeds this server's holder and reports in ``/health``.
    The bundle is opened at start-up; with none, ``/health`` answers 503 until one
    appears.  Raises :class:`~query.config.ConfigError` for invalid keys.
    """
    config = config or ServerConfig()
    config.check()
    interval = poll_interval if poll_interval is not None else config.poll_interval
    body_limit = max(config.max_body_bytes, config.webhook.max_body_bytes)
    app = web.Application(middlewares=[metrics_middleware, log_middleware, headers_middleware, envelope_middleware,
                                       auth_middleware],
                          client_max_size=body_limit + 1)
    store = Store(store_dir)
    app[STORE_ROOT] = store.root
    app[CONFIG] = config
    share = worker.count if worker is not None else 1
    app[LIMITER] = RateLimiter(*split_limit(config.rate_limit_per_minute, config.rate_limit_burst, share))
    app[AUTH_FAILURES] = RateLimiter(*split_limit(config.auth_failures_per_minute, config.auth_failures_burst, share))
    app[PROXY_NETWORKS] = config.proxy_networks()
    if worker is not None:
        app[WORKER] = worker
    app[HOLDER] = BundleHolder(store, embedder=embedder, cache_bundles=config.cache_bundles,
                               cache_bytes=config.cache_megabytes * 1024 * 1024)
    app[HOLDER].fallback_verified = config.fallback_verified
    app[OPTIONS] = options or SearchOptions()
    app[MCP_SESSION] = {}
    app[ANSWER_CACHE] = AnswerCache(config.answer.cache_entries, config.answer.cache_megabytes * 1024 * 1024)
    app[GENERATORS] = generators or default_generators(config)
    app[HOLDER].probe = make_probe(app[OPTIONS])  # every route warmed before a swap
    app[METRICS] = ServerMetrics(app[HOLDER], store.root, worker=worker.index if worker is not None else None)
    app[HOLDER].wrap_embedder = app[METRICS].time_embedder
    if replica is not None:
        app[HOLDER].replica = replica
        replica.attach(app[HOLDER])
    app[METRICS].watch_cache("answer", app[ANSWER_CACHE])
    roles: dict[tuple[str, str], str] = {}
    routes = route_table()
    for route in routes:
        resource = app.router.add_route(route.method, route.path, route.handler)
        roles[(route.method, resource.resource.canonical)] = route.role  # type: ignore[union-attr]
    for route in unlisted_routes():
        resource = app.router.add_route(route.method, route.path, route.handler)
        roles[(route.method, resource.resource.canonical)] = route.role  # type: ignore[union-attr]
    app[ROLES] = roles
    app[OPENAPI_DOC] = openapi.build_document(routes, keys=config.keys_configured)

    async def on_startup(app: web.Application) -> None:
        await asyncio.to_thread(app[HOLDER].load_current)
        if app[HOLDER].bundle is None:
            holder = app[HOLDER]
            log.warning("no bundle to serve yet: %s", holder.unavailable_hint() if holder.failed_bundle is None
                        else holder.last_error, extra={"event": "no_bundle"})
        app[WATCHER] = asyncio.create_task(_watch(app, interval))
        if app[HOLDER].replica is not None:
            app[HOLDER].replica.start()
        app[MCP_START] = asyncio.create_task(start_mcp(app))
        app[MCP_START].add_done_callback(log_mcp_failure)
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(reload_current(app, force=True)))

    async def on_cleanup(app: web.Application) -> None:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
        app[WATCHER].cancel()
        if app[HOLDER].replica is not None:
            await asyncio.to_thread(app[HOLDER].replica.stop)
        with contextlib.suppress(asyncio.CancelledError):
            await app[WATCHER]
        await stop_mcp(app)
        app[HOLDER].close()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


def split_limit(per_minute: int, burst: int, workers: int) -> tuple[float, int]:
    """Return one worker's ``(per_minute, burst)`` when ``workers`` processes share a port.

    Buckets live in each process and the kernel spreads connections over the processes, so each
    enforces ``1/workers`` of the configured rate and burst (burst at least 1): together they never
    allow more than configured (more only when ``burst < workers``: then ``workers`` at once).  A
    client on one keep-alive connection meets one worker, and so ``1/workers`` of the limits.
    """
    if workers <= 1:
        return float(per_minute), burst
    return per_minute / workers, max(1, burst // workers)


@web.middleware
async def log_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Log one line per request: method, route (the pattern, never the raw path), status, ms, bundle id."""
    started = time.perf_counter()
    status = 500
    if isinstance(request.protocol, EnvelopeRequestHandler):
        request.protocol.headers_arrived()
    try:
        response = await handler(request)
        status = response.status
        return response
    finally:
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else "-"
        duration_ms = round((time.perf_counter() - started) * 1000, 1)
        bundle_id = request.get(BUNDLE_ID)
        access_log.info("%s %s %d %.1f ms", request.method, route, status, duration_ms,
                        extra={"event": "request", "method": request.method, "route": route, "status": status,
                               "duration_ms": duration_ms, "bundle_id": bundle_id})
