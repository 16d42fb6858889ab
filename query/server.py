"""The aiohttp query server: ``GET /health``, ``POST /search``, with hot swap to a new ``CURRENT``.

Swap protocol: a background task polls the store's ``CURRENT`` pointer.  When it names another
bundle, the new bundle is opened, verified and warmed (model loaded, one query run) in a worker
thread *before* one reference is replaced.  Each request takes a lease on the bundle it started
with, so requests in flight finish on the old bundle, which is closed when its last lease ends.
If the new bundle fails to open or verify, the old one keeps serving and ``/health`` reports
the failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aiohttp import web

from artifacts.embedding import Embedder
from artifacts.errors import ArtifactError
from artifacts.store import Store

from .bundle import OpenedBundle, open_bundle
from .contract import error_body
from .errors import InvalidRequestError, PayloadTooLargeError, QueryError, RetrievalUnavailableError
from .hybrid import SearchOptions, parse_search_request, search

log = logging.getLogger("gitrag.server")
MAX_BODY_BYTES = 64 * 1024


class BundleHolder:
    """Holds the served bundle and hands out leases; see the module docstring for the protocol."""

    def __init__(self, store: Store, embedder: Embedder | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.bundle: OpenedBundle | None = None
        self.last_error: str | None = None
        self._leases: dict[int, int] = {}
        self._retired: dict[int, OpenedBundle] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def lease(self) -> Iterator[OpenedBundle]:
        """Yield the current bundle, keeping it open until the ``with`` block ends.

        Raises :class:`RetrievalUnavailableError` when no bundle is open.
        """
        with self._lock:
            bundle = self.bundle
            if bundle is None:
                raise RetrievalUnavailableError("no bundle is open")
            self._leases[id(bundle)] = self._leases.get(id(bundle), 0) + 1
        try:
            yield bundle
        finally:
            with self._lock:
                self._leases[id(bundle)] -= 1
                if self._leases[id(bundle)] == 0:
                    del self._leases[id(bundle)]
                    retired = self._retired.pop(id(bundle), None)
                    if retired is not None:
                        retired.close()

    def load_current(self) -> bool:
        """Open the ``CURRENT`` bundle if it differs from the served one; return True on a swap.

        Runs in a worker thread.  On failure the served bundle stays and ``last_error`` is set.
        """
        wanted = self.store.current_id()
        if wanted is None or (self.bundle is not None and self.bundle.bundle_id == wanted):
            return False
        try:
            fresh = open_bundle(self.store.bundle_path(wanted), verify=True, embedder=self.embedder)
            if fresh.embedder is not None:
                fresh.embedder.embed_query("warm-up")  # load weights before serving
        except (ArtifactError, QueryError, OSError) as exc:
            self.last_error = f"bundle {wanted} failed to open: {type(exc).__name__}"
            log.warning("keeping the served bundle: %s", self.last_error)
            return False
        with self._lock:
            old, self.bundle = self.bundle, fresh
            self.last_error = None
            if old is not None:
                if self._leases.get(id(old)):
                    self._retired[id(old)] = old
                else:
                    old.close()
        log.info("serving bundle %s", fresh.bundle_id)
        return True


HOLDER = web.AppKey("holder", BundleHolder)
OPTIONS = web.AppKey("options", SearchOptions)
POLL_INTERVAL = web.AppKey("poll_interval", float)
AUTH_MODE = web.AppKey("auth_mode", str)
WATCHER = web.AppKey("watcher", asyncio.Task)


@web.middleware
async def envelope_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """Turn every error into the contract's envelope with a stable reason and no echoed input."""
    try:
        return await handler(request)
    except QueryError as exc:
        return web.json_response(error_body(exc.reason), status=exc.status)
    except ArtifactError:
        return web.json_response(error_body("retrieval_unavailable"), status=503)
    except web.HTTPRequestEntityTooLarge:
        return web.json_response(error_body("payload_too_large"), status=413)
    except web.HTTPNotFound:
        return web.json_response(error_body("not_found"), status=404)
    except web.HTTPMethodNotAllowed:
        return web.json_response(error_body("method_not_allowed"), status=405)
    except web.HTTPException as exc:
        return web.json_response(error_body("invalid_request"), status=exc.status)
    except Exception:  # noqa: BLE001 - logged, never shown to the client
        log.exception("unhandled error")
        return web.json_response(error_body("internal_error"), status=500)


async def _read_json(request: web.Request) -> Any:
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise PayloadTooLargeError("body too large")
    raw = await request.read()
    if len(raw) > MAX_BODY_BYTES:
        raise PayloadTooLargeError("body too large")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidRequestError("body is not JSON") from exc


async def handle_health(request: web.Request) -> web.Response:
    holder: BundleHolder = request.app[HOLDER]
    bundle = holder.bundle
    body: dict[str, Any] = {
        "status": "ok" if bundle is not None else "error",
        "ready": bundle is not None,
        "reason": None if bundle is not None else "retrieval_unavailable",
        "auth": request.app[AUTH_MODE],
        "last_reload_error": holder.last_error,
        "bundle": None,
    }
    if bundle is not None:
        m = bundle.manifest
        body["bundle"] = {
            "commit": m.commit,
            "bundle_id": m.bundle_id,
            "content_digest": m.content_digest,
            "commit_summary": m.commit_summary,
            "counts": m.counts.model_dump(),
            "embedder": m.config.embedder.model_id,
        }
    return web.json_response(body, status=200 if bundle is not None else 503)


async def handle_search(request: web.Request) -> web.Response:
    payload = await _read_json(request)
    search_request = parse_search_request(payload)
    holder: BundleHolder = request.app[HOLDER]
    options: SearchOptions = request.app[OPTIONS]

    def run() -> dict[str, Any]:
        with holder.lease() as bundle:
            return search(bundle, search_request, options)

    return web.json_response(await asyncio.to_thread(run))


async def _watch(app: web.Application) -> None:
    holder: BundleHolder = app[HOLDER]
    interval: float = app[POLL_INTERVAL]
    while True:
        await asyncio.sleep(interval)
        try:
            await asyncio.to_thread(holder.load_current)
        except Exception:  # noqa: BLE001 - the watcher must never die
            log.exception("reload check failed")


def create_app(store_dir: Path | str, *, options: SearchOptions | None = None,
               embedder: Embedder | None = None, poll_interval: float = 2.0) -> web.Application:
    """Return the aiohttp application serving the store's ``CURRENT`` bundle.

    ``embedder`` overrides the manifest's model (tests only); ``poll_interval`` is in seconds.
    The bundle is opened at start-up; with none, ``/health`` answers 503 until one appears.
    """
    app = web.Application(middlewares=[envelope_middleware], client_max_size=MAX_BODY_BYTES)
    app[HOLDER] = BundleHolder(Store(store_dir), embedder=embedder)
    app[OPTIONS] = options or SearchOptions()
    app[POLL_INTERVAL] = poll_interval
    app[AUTH_MODE] = "none (no API keys configured; bind to loopback only)"
    app.router.add_get("/health", handle_health)
    app.router.add_post("/search", handle_search)

    async def on_startup(app: web.Application) -> None:
        await asyncio.to_thread(app[HOLDER].load_current)
        app[WATCHER] = asyncio.create_task(_watch(app))

    async def on_cleanup(app: web.Application) -> None:
        app[WATCHER].cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await app[WATCHER]
        if app[HOLDER].bundle is not None:
            app[HOLDER].bundle.close()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def run_server(store_dir: Path | str, host: str = "127.0.0.1", port: int = 8080,
               options: SearchOptions | None = None) -> None:
    """Serve until interrupted.  Without API keys (a later feature) only loopback hosts are allowed.

    Raises :class:`ValueError` for a non-loopback ``host``.
    """
    if host not in LOOPBACK and not host.startswith("127."):
        raise ValueError("without API keys gitrag serves only on a loopback address")
    web.run_app(create_app(store_dir, options=options), host=host, port=port, print=None)
