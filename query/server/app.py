"""The aiohttp query server: retrieval with time travel, hot swap, admin, sync and webhooks.

Swap protocol: the served bundle is one reference in :class:`BundleHolder`.  A reload (polling of
``CURRENT`` every ``poll_interval`` seconds, ``SIGHUP``, ``POST /admin/reload`` or ``POST
/admin/use``) opens, verifies and warms the new bundle (model loaded, one query embedded) in a
worker thread, *then* replaces that reference under a lock.  Each request takes a lease on the
bundle it started with, so requests in flight finish on the old bundle, which is closed when its
last lease ends.  If the new bundle fails to open or verify, the old one keeps serving, ``/health``
reports the failure, and polling does not retry that same bundle until a forced reload.

Retrieval endpoints are rows of :data:`RETRIEVAL_ROUTES`: a path and a function
``(OpenedBundle, payload) -> dict``.  They all accept ``at`` (see :mod:`query.timetravel`), which
selects a historical bundle from a small LRU instead of the served one.  Adding ``/graph`` is one
row.  Every route, with its role and models, is listed in :func:`route_table`, which also feeds
``/openapi.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import importlib
import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import ClientConnectionResetError, web
from aiohttp.http_exceptions import ContentEncodingError
from aiohttp.web_protocol import RequestHandler, RequestPayloadError
from pydantic import BaseModel

from artifacts import __version__
from artifacts.embedding import Embedder
from artifacts.errors import ArtifactError, BundleIntegrityError, BundleNotFoundError
from artifacts.jobs import JobQueue, spawn_worker
from artifacts.store import Store, fallback_candidates, resolve_bundle_ref, use_bundle
from query.answer.evidence import Generator
from query.answer.pipeline import AnswerCache, answer, parse_answer_request
from query.bundle import OpenedBundle, open_bundle
from query.config import ConfigError, ServerConfig, is_loopback
from query.contract import error_body
from query.documents import DocumentRequest, get_document, parse_document_request
from query.errors import (
    ClientDisconnectedError,
    ForbiddenError,
    InvalidRequestError,
    MediaTypeError,
    PayloadTooLargeError,
    PlainNotFoundError,
    QueryError,
    RequestTimeoutError,
    RetrievalUnavailableError,
    ServiceNotConfiguredError,
    UnauthorizedError,
)
from query.graph.dispatch import answer_graph
from query.search.request import SearchOptions, parse_search_request
from query.search.response import search
from query.search.weighting import warm_up
from query.server import openapi
from query.server.prom import METRICS, ServerMetrics, handle_metrics, metrics_middleware
from query.server.security import (
    AUTH_FAILURES,
    CONFIG,
    LIMITER,
    PROXY_NETWORKS,
    ROLES,
    SECURITY_HEADERS,
    RateLimiter,
    auth_middleware,
    check_unpublished,
    envelope_middleware,
    error_response,
    has_valid_key,
    headers_middleware,
    in_networks,
    match_key,
    presented_key,
)
from query.server.webpage import handle_asset, handle_page, wants_html
from query.server.workers import WorkerSlot
from query.timetravel import BundleCache, BundleIndex, Leases, check_at

log = logging.getLogger("gitrag.server")
access_log = logging.getLogger("gitrag.access")
MAX_BODY_BYTES = 64 * 1024
ZERO = "0" * 40
USE_LOCK_TIMEOUT = 10.0
"""Seconds ``POST /admin/use`` waits for the store lock (a build holds it) before ``503 store_busy``."""
BUNDLE_ID = web.RequestKey("bundle_id", str)
"""The bundle that answered a request, for its access-log line."""


def describe_failure(exc: BaseException) -> str:
    """Say why a bundle failed to open: the error class, plus the files at fault for a failed verification.

    The files are bundle-relative (``chunks.jsonl: sha256/size mismatch``), as ``gitrag verify``
    prints them; exception text, which may hold filesystem paths, is left out.
    """
    if isinstance(exc, BundleIntegrityError) and exc.problems:
        return f"{type(exc).__name__}: {'; '.join(exc.problems[:5])}"
    return type(exc).__name__


NO_BUNDLE_HINT = ("The store has no bundle yet: build one with `gitrag build --repo REPO --store STORE`; "
                  "the server serves it as soon as CURRENT points at it.")
BROKEN_CURRENT_HINT = "The CURRENT bundle failed to open; run `gitrag verify --store STORE` and `gitrag use`."
FALLBACK_HINT = ("The CURRENT bundle fails verification; the newest older bundle that verifies is served "
                 "(fallback_verified). Run `gitrag verify --store STORE --repair-current`.")
BUILDING_HINT = ("The store has no bundle yet and a build is running now; the server serves its bundle as "
                 "soon as it is published (see `gitrag jobs` or the build's progress).")


class BundleHolder:
    """Holds the served bundle and the LRU of historical ones and hands out leases.

    See the module docstring for the swap protocol.  Thread-safe: leases are taken from the
    event loop's worker threads; reloads are serialised by ``_reload_lock``.
    """

    def __init__(self, store: Store, embedder: Embedder | None = None, cache_bundles: int = 4,
                 cache_bytes: int = 1024 * 1024 * 1024) -> None:
        self.store = store
        self.embedder = embedder
        self.bundle: OpenedBundle | None = None
        self.last_error: str | None = None
        self.failed_bundle: str | None = None
        self.swaps = 0
        self.reload_failures = 0
        self.wrap_embedder: Callable[[Any], Any] | None = None  # e.g. timing for /metrics (query.server.prom)
        self.leases = Leases()
        self.cache = BundleCache(self.leases, cache_bundles, cache_bytes)
        self.index = BundleIndex(store)
        self._reload_lock = threading.Lock()
        self.replica: Any = None  # query.server.replica.Replica on `gitrag serve --from`: store is its cache
        self.fallback_verified = False
        """Serve the newest older bundle that verifies when ``CURRENT`` fails to open and none is served."""
        self.fallback: dict[str, str] | None = None
        """While a fallback is served: ``bundle_id`` served, ``current`` (the failing ``CURRENT``), ``reason``."""

    def unavailable_hint(self) -> str:
        """Say why no bundle is served: the CURRENT bundle failed to open, a build is running, or none exists.

        One of :data:`BROKEN_CURRENT_HINT`, :data:`BUILDING_HINT`, :data:`NO_BUNDLE_HINT` (fixed
        sentences): ``/health`` and the 503 of every query endpoint give the same one.
        """
        if self.failed_bundle:
            return BROKEN_CURRENT_HINT
        if self.replica is not None:
            return str(self.replica.unavailable_hint())
        return BUILDING_HINT if self.store.writer_busy() else NO_BUNDLE_HINT

    def _open(self, bundle_id: str) -> OpenedBundle:
        fresh = open_bundle(self.store.bundle_path(bundle_id), verify=True, embedder=self.embedder)
        if self.wrap_embedder is not None:
            # before the bundle is shared: swap in a resolved future holding the wrapped (timed) embedder
            wrapped: Future[Any] = Future()
            wrapped.set_result(self.wrap_embedder(fresh.embedder))
            fresh.embedder_future = wrapped
        if fresh.embedder is not None:
            fresh.embedder.embed_query("warm-up")  # load weights before serving
        fresh.chunks.prepare()  # an incremental bundle's label -> line map, before any request needs it
        warm_up(fresh)  # the BM25 matrix weighed before the first request, not during it
        return fresh

    @contextlib.contextmanager
    def lease(self, bundle_id: str | None = None) -> Iterator[OpenedBundle]:
        """Yield the served bundle (or bundle ``bundle_id``), open until the ``with`` block ends.

        Raises :class:`RetrievalUnavailableError` when no bundle is open or ``bundle_id`` fails to open.
        """
        opening = None
        with self.leases.lock:
            current = self.bundle
            if bundle_id is None or (current is not None and current.bundle_id == bundle_id):
                if current is None:
                    raise RetrievalUnavailableError("no bundle is open", public_message=self.unavailable_hint())
                self.leases.acquire(current)
                bundle: OpenedBundle | None = current
            else:
                bundle = self.cache.lease_cached(bundle_id)
                if bundle is None:
                    opening = self.cache.opening_lock(bundle_id)
        if bundle is None:
            assert opening is not None and bundle_id is not None
            with opening:  # one thread opens; the others wait and then find it cached
                with self.leases.lock:
                    bundle = self.cache.lease_cached(bundle_id)
                if bundle is None:
                    try:
                        fresh = self._open(bundle_id)
                    except BundleIntegrityError as exc:
                        log.warning("bundle %s fails verification: %s", bundle_id, "; ".join(exc.problems),
                                    extra={"event": "open_failed", "bundle_id": bundle_id})
                        raise  # 422 bundle_corrupt, naming the files (bundle-relative) like `gitrag verify`
                    except (ArtifactError, QueryError, OSError) as exc:
                        log.warning("bundle %s failed to open: %s", bundle_id, describe_failure(exc),
                                    extra={"event": "open_failed", "bundle_id": bundle_id})
                        raise RetrievalUnavailableError("historical bundle failed to open") from exc
                    with self.leases.lock:
                        self.cache.insert_and_lease(fresh)
                    bundle = fresh
        try:
            yield bundle
        finally:
            self.leases.release(bundle)

    def load_current(self, force: bool = False) -> bool:
        """Open the ``CURRENT`` bundle if it differs from the served one; return True on a swap.

        Runs in a worker thread.  On failure the served bundle stays, ``last_error`` is set and
        (unless ``force``) the same bundle is not tried again by polling.
        """
        with self._reload_lock:
            wanted = self.store.current_id()
            if wanted is None or (self.bundle is not None and self.bundle.bundle_id == wanted):
                if self.bundle is not None and self.bundle.bundle_id == wanted:
                    self.failed_bundle = None
                return False
            if wanted == self.failed_bundle and not force:
                return False
            try:
                fresh = self._open(wanted)
            except (ArtifactError, QueryError, OSError) as exc:
                self.failed_bundle = wanted
                self.reload_failures += 1
                self.last_error = f"bundle {wanted} failed to open: {describe_failure(exc)}"
                log.warning("keeping the served bundle: %s", self.last_error,
                            extra={"event": "swap_failed", "bundle_id": wanted})
                if self.bundle is None and self.fallback_verified:
                    return self._serve_fallback(wanted)
                return False
            with self.leases.lock:
                old, self.bundle = self.bundle, fresh
                self.last_error = None
                self.failed_bundle = None
                self.fallback = None
                self.swaps += 1
                if old is not None:
                    self.leases.retire(old)
            m = fresh.manifest
            log.info("serving commit %s (%s) bundle %s", m.commit[:12], m.commit_summary[:80], fresh.bundle_id,
                     extra={"event": "swap", "bundle_id": fresh.bundle_id, "commit": m.commit,
                            "previous_bundle_id": old.bundle_id if old is not None else None})
            return True

    def _serve_fallback(self, broken: str) -> bool:
        """Serve the newest bundle older than ``broken`` that opens and verifies (called with the reload lock)."""
        for info in fallback_candidates(self.store, broken):
            try:
                fresh = self._open(info.bundle_id)
            except (ArtifactError, QueryError, OSError) as exc:
                log.warning("fallback bundle %s failed to open: %s", info.bundle_id, describe_failure(exc),
                            extra={"event": "open_failed", "bundle_id": info.bundle_id})
                continue
            with self.leases.lock:
                self.bundle = fresh
                self.fallback = {"bundle_id": fresh.bundle_id, "current": broken,
                                 "reason": self.last_error or "failed to open"}
                self.swaps += 1
            log.warning("serving the older verified bundle %s instead of CURRENT %s", fresh.bundle_id, broken,
                        extra={"event": "fallback", "bundle_id": fresh.bundle_id, "current": broken})
            return True
        return False

    def resolve(self, at: str) -> str:
        """Return the bundle id for ``at`` with the store's one resolver (as ``gitrag use`` does).

        Raises the :func:`~artifacts.store.resolve_bundle_ref` errors (mapped to HTTP by
        :func:`~query.errors.from_artifact_error`).
        """
        served = self.bundle.manifest if self.bundle is not None else None
        try:
            bundle_id = resolve_bundle_ref(self.store, at, bundles=self.index.list(), prefer=served).bundle_id
        except BundleNotFoundError:
            fetched = self.replica.fetch_revision(at) if self.replica is not None else None
            if fetched is None:
                raise
            return str(fetched)  # downloaded and verified into the replica's cache (query.server.replica)
        if self.replica is not None:
            self.replica.touch(bundle_id)
        return bundle_id

    def close(self) -> None:
        with self.leases.lock:
            self.cache.close_all()
            if self.bundle is not None:
                self.leases.retire(self.bundle)
                self.bundle = None


HOLDER = web.AppKey("holder", BundleHolder)
CONNECTION_LIMITS = web.AppKey("connection_limits", object)
OPTIONS = web.AppKey("options", SearchOptions)
ANSWER_CACHE = web.AppKey("answer_cache", AnswerCache)
GENERATORS = web.AppKey("generators", Callable)
WATCHER = web.AppKey("watcher", asyncio.Task)
WORKER = web.AppKey("worker", WorkerSlot)
"""Set on a worker of ``gitrag serve --workers N`` (:mod:`query.server.workers`); absent on a single server."""
STORE_ROOT = web.AppKey("store_root", Path)

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


async def _read_body(request: web.Request, limit: int) -> bytes:
    """Read the body (at most ``limit`` bytes).

    Raises :class:`PayloadTooLargeError`, :class:`ClientDisconnectedError` when the client goes away
    mid-body, :class:`RequestTimeoutError` when the body has not arrived within ``body_timeout``
    seconds (the connection is then closed), and :class:`MediaTypeError` (``unsupported_content_encoding``)
    for a body aiohttp cannot decode.
    """
    if request.content_length is not None and request.content_length > limit:
        raise PayloadTooLargeError("body too large")
    try:
        async with asyncio.timeout(request.app[CONFIG].body_timeout):
            raw = await request.read()
    except TimeoutError as exc:
        log.info("closing a connection whose body did not arrive in time", extra={"event": "body_timeout"})
        raise RequestTimeoutError("body not received in time") from exc
    except (ConnectionResetError, ClientConnectionResetError) as exc:
        raise ClientDisconnectedError("client went away") from exc
    except (ContentEncodingError, RequestPayloadError) as exc:
        if isinstance(exc, ContentEncodingError) or isinstance(exc.__cause__, ContentEncodingError):
            raise MediaTypeError("undecodable body", reason="unsupported_content_encoding") from exc
        raise InvalidRequestError("malformed body") from exc  # e.g. bad chunked framing
    if len(raw) > limit:
        raise PayloadTooLargeError("body too large")
    return raw


def decode_json(raw: bytes) -> Any:
    """Decode a JSON body; raise :class:`InvalidRequestError` for bad UTF-8, bad JSON or too deep nesting."""
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidRequestError("body is not JSON") from exc


async def _read_json(request: web.Request, *, allow_empty: bool = False) -> Any:
    raw = await _read_body(request, request.app[CONFIG].max_body_bytes)
    if not raw.strip() and allow_empty:
        return {}
    if request.content_type != "application/json" and raw:
        # Browsers send text/plain and form posts without a CORS pre-flight: refuse them.
        raise MediaTypeError("wrong content type")
    return decode_json(raw)


def split_at(payload: Any) -> tuple[dict[str, Any], str | None]:
    """Return ``(body without at, at)`` for a retrieval request body; ``at`` is checked here.

    Raises :class:`InvalidRequestError` (not an object) and ``invalid_at`` (malformed revision).
    """
    if not isinstance(payload, dict):
        raise InvalidRequestError("body must be a JSON object")
    payload = dict(payload)
    at = payload.pop("at", None)
    if at is not None:
        check_at(at)
    return payload, at


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


def _retrieval_handler(route: RetrievalRoute) -> Callable[[web.Request], Any]:
    async def handler(request: web.Request) -> web.Response:
        payload = await _read_json(request)
        body = await run_retrieval(request.app[HOLDER], request.app[OPTIONS], route, payload,
                                   unpublished=_may_read_unpublished(request))
        if isinstance(body.get("index_version"), dict):
            request[BUNDLE_ID] = body["index_version"].get("bundle_id")  # for the access log
        return web.json_response(body)

    handler.__name__ = "handle_" + route.path.strip("/").replace("/", "_")
    return handler


# -- checked answers ---------------------------------------------------------------------------


def _is_admin(request: web.Request) -> bool:
    config: ServerConfig = request.app[CONFIG]
    if not config.keys_configured:
        return True  # loopback-only server: every role is open
    key = presented_key(request)
    return key is not None and match_key(config, key) == "admin_key"


def _may_read_unpublished(request: web.Request) -> bool:
    """Whether this request may ask for pages with ``published: false`` (admin key, or ``unpublished_public``)."""
    return request.app[CONFIG].unpublished_public or _is_admin(request)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def _until_done_or_gone(request: web.Request, work: Any) -> Any:
    """Await ``work`` (a coroutine); cancel it when the client disconnects first."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=0.05)
            if done:
                return task.result()
            transport = request.transport
            if transport is None or transport.is_closing():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise ConnectionResetError("client went away")
    finally:
        if not task.done():
            task.cancel()


@dataclass
class AnswerContext:
    """What a checked answer needs besides the bundle: generator factory, answer cache, coverage gate."""

    generators: Callable[[str | None], Generator]
    cache: AnswerCache
    coverage_threshold: float = 0.20


def prepare_answer(payload: Any, context: AnswerContext, *, admin: bool,
                   unpublished: bool = False) -> tuple[Any, str | None, Generator | None]:
    """Validate a ``POST /answer`` body: return ``(request, at, generator or None in retrieve mode)``.

    Raises :class:`InvalidRequestError` / :class:`InvalidQueryError` (bad body), ``invalid_at``
    (malformed ``at``), :class:`ForbiddenError` (``debug`` without ``admin``; ``published_only:
    false`` without ``unpublished``).
    """
    payload, at = split_at(payload)
    check_unpublished(payload, allowed=unpublished)
    parsed = parse_answer_request(payload)
    if parsed.debug and not admin:
        raise ForbiddenError("debug needs the admin key")
    generator = context.generators(parsed.generator) if parsed.mode == "answer" else None
    return parsed, at, generator


async def run_answer(holder: BundleHolder, options: SearchOptions, context: AnswerContext,
                     payload: Any) -> dict[str, Any]:
    """Answer one ``POST /answer`` body (``at`` included) without streaming; no admin debug report.

    The MCP ``answer`` tool calls this (:mod:`query.server.mcp`).  Returns the response body;
    raises :class:`QueryError` subclasses (bad body, ``debug`` requested, unknown ``at``, generator
    unavailable) for the transport to convert.
    """
    parsed, at, generator = prepare_answer(payload, context, admin=False)
    bundle_id = await asyncio.to_thread(holder.resolve, at) if at is not None else None
    lease = holder.lease(bundle_id)
    bundle = await asyncio.to_thread(lease.__enter__)
    try:
        return await answer(bundle, parsed, options, generator, cache=context.cache,
                            coverage_threshold=context.coverage_threshold)
    finally:
        lease.__exit__(None, None, None)


def answer_context(app: web.Application) -> AnswerContext:
    """The app's :class:`AnswerContext` (the same generators and cache as ``POST /answer``)."""
    return AnswerContext(app[GENERATORS], app[ANSWER_CACHE], app[CONFIG].answer.coverage_threshold)


async def handle_answer(request: web.Request) -> web.StreamResponse:
    """Checked answer (graph, text or graph+text) citing exact evidence, or an honest refusal.

    ``mode=retrieve`` returns the evidence without generating.  ``debug: true`` needs the admin key
    (403 ``forbidden`` otherwise).  Generator failures: 503 ``generator_unavailable``.
    """
    payload = await _read_json(request)
    parsed, at, generator = prepare_answer(payload, answer_context(request.app), admin=_is_admin(request),
                                           unpublished=_may_read_unpublished(request))
    threshold = request.app[CONFIG].answer.coverage_threshold
    holder: BundleHolder = request.app[HOLDER]
    bundle_id = await asyncio.to_thread(holder.resolve, at) if at is not None else None
    lease = holder.lease(bundle_id)
    bundle = await asyncio.to_thread(lease.__enter__)
    try:
        request[BUNDLE_ID] = bundle.bundle_id  # for the access log
        if "text/event-stream" not in request.headers.get("Accept", ""):
            body = await _until_done_or_gone(request, answer(
                bundle, parsed, request.app[OPTIONS], generator, cache=request.app[ANSWER_CACHE],
                include_debug=parsed.debug, coverage_threshold=threshold))
            return web.json_response(body)
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store",
                                             "X-Accel-Buffering": "no"})
        await stream.prepare(request)

        async def emit(event: str, data: dict[str, Any]) -> None:
            await stream.write(_sse(event, data))

        try:
            body = await _until_done_or_gone(request, answer(
                bundle, parsed, request.app[OPTIONS], generator, emit=emit, cache=request.app[ANSWER_CACHE],
                include_debug=parsed.debug, coverage_threshold=threshold))
            await stream.write(_sse("answer", body))
        except QueryError as exc:
            # Headers are sent: the error travels as the answer event, in the contract's envelope.
            from query.contract import error_body

            await stream.write(_sse("answer", {**error_body(exc.reason, exc.public_message),
                                               "http_status": exc.status}))
        await stream.write(_sse("done", {}))
        await stream.write_eof()
        return stream
    finally:
        lease.__exit__(None, None, None)


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
    """Return the ``GET /bundles`` body: ``current``, ``served`` and ``bundles`` (newest commit first)."""
    infos = await asyncio.to_thread(holder.index.list)
    current = holder.store.current_id()
    served = holder.bundle.bundle_id if holder.bundle is not None else None
    items = [{
        "bundle_id": b.bundle_id, "commit": b.manifest.commit, "commit_time": b.manifest.commit_time,
        "commit_summary": b.manifest.commit_summary, "ref": b.manifest.source.ref,
        "content_digest": b.manifest.content_digest, "documents": b.manifest.counts.documents,
        "chunks": b.manifest.counts.chunks, "stage": b.manifest.stage,
        "current": b.bundle_id == current, "served": b.bundle_id == served,
    } for b in infos]
    return {"status": "ok", "current": current, "served": served, "bundles": items}


async def _reload(app: web.Application, force: bool) -> dict[str, Any]:
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
    await _read_body(request, request.app[CONFIG].max_body_bytes)
    body = await _reload(request.app, force=True)
    _reload_siblings(request.app)
    return web.json_response(body)


async def handle_use(request: web.Request) -> web.Response:
    payload = await _read_json(request)
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
    body = await _reload(request.app, force=True)
    _reload_siblings(request.app)
    return web.json_response(body, status=200 if body["served"] == bundle_id else 503)


# -- sync and webhooks -------------------------------------------------------------------------


def _mirror(app: web.Application) -> str:
    config: ServerConfig = app[CONFIG]
    return str(Path(config.webhook.mirror).resolve() if config.webhook.mirror else app[STORE_ROOT] / "mirror.git")


def _enqueue_sync(app: web.Application, commit: str | None, delivery_id: str | None,
                  replay_key: str | None = None) -> dict[str, Any]:
    config: ServerConfig = app[CONFIG]
    queue = JobQueue(app[STORE_ROOT])
    queued = queue.enqueue(kind="sync", repo=_mirror(app), remote=config.webhook.remote,
                           branch=config.webhook.branch, commit=commit, delivery_id=delivery_id,
                           replay_key=replay_key)
    if config.spawn_worker:
        try:
            spawn_worker(app[STORE_ROOT])
        except OSError:
            log.exception("could not start a worker")
    return {"status": "accepted", "job_id": queued.job.id, "status_url": f"/sync/jobs/{queued.job.id}",
            "coalesced": queued.coalesced, "duplicate": queued.duplicate}


async def handle_sync(request: web.Request) -> web.Response:
    config: ServerConfig = request.app[CONFIG]
    await _read_body(request, config.max_body_bytes)
    if not config.webhook.remote:
        raise ServiceNotConfiguredError("sync off", reason="sync_unavailable")
    body = await asyncio.to_thread(_enqueue_sync, request.app, None, None)
    return web.json_response(body, status=202)


async def handle_job(request: web.Request) -> web.Response:
    raw = request.match_info["job_id"]
    # Job ids are SQLite integers (< 2**63); a longer number names no job (and int() of thousands of
    # digits is refused by Python itself).
    if len(raw) > 19 or int(raw) >= 2**63:
        raise PlainNotFoundError("no job", reason="job_not_found")
    job = await asyncio.to_thread(JobQueue(request.app[STORE_ROOT]).get, int(raw))
    if job is None:
        raise PlainNotFoundError("no job", reason="job_not_found")
    data = job.public()
    # A job's error may name local paths: expose only its class name.
    data["error"] = data["error"].split(":", 1)[0] if data["error"] else None
    return web.json_response({"status": "ok", "job": data})


_SIGNATURE_HEADERS = {"github": ("X-Hub-Signature-256",), "gitea": ("X-Gitea-Signature", "X-Hub-Signature-256")}
_EVENT_HEADERS = {"github": "X-GitHub-Event", "gitea": "X-Gitea-Event"}
_DELIVERY_HEADERS = {"github": "X-GitHub-Delivery", "gitea": "X-Gitea-Delivery"}


def verify_signature(secret: str, raw: bytes, header: str | None) -> bool:
    """Check ``header`` (``sha256=<hex>`` or ``<hex>``) against HMAC-SHA256 of ``raw`` in constant time."""
    if not header:
        return False
    given = header.strip()
    if given.startswith("sha256="):
        given = given[len("sha256="):]
    expected = hmac.new(secret.encode("utf-8"), raw, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), given.lower().encode("ascii", errors="replace"))


def _webhook_handler(provider: str) -> Callable[[web.Request], Any]:
    async def handler(request: web.Request) -> web.Response:
        config: ServerConfig = request.app[CONFIG]
        hook = config.webhook
        if not (hook.secret and hook.repository and hook.remote):
            raise ServiceNotConfiguredError("webhooks off", reason="webhook_unavailable")
        raw = await _read_body(request, hook.max_body_bytes)
        header = next((request.headers[h] for h in _SIGNATURE_HEADERS[provider] if h in request.headers), None)
        if not verify_signature(hook.secret, raw, header):
            raise UnauthorizedError("bad signature", reason="invalid_signature")
        event = request.headers.get(_EVENT_HEADERS[provider]) or request.headers.get("X-GitHub-Event")
        if event != "push":
            return web.json_response({"status": "ok", "accepted": False, "ignored": "event"})
        payload = decode_json(raw)
        if not isinstance(payload, dict):
            raise InvalidRequestError("body must be a JSON object")
        repository = payload.get("repository") if isinstance(payload.get("repository"), dict) else {}
        if repository.get("full_name") != hook.repository:
            return web.json_response({"status": "ok", "accepted": False, "ignored": "repository"})
        if payload.get("ref") != f"refs/heads/{hook.branch}":
            return web.json_response({"status": "ok", "accepted": False, "ignored": "branch"})
        after = payload.get("after")
        if payload.get("deleted") is True or after == ZERO:
            return web.json_response({"status": "ok", "accepted": False, "ignored": "deletion"})
        commit = after if isinstance(after, str) and len(after) == 40 and all(
            c in "0123456789abcdef" for c in after) else None
        delivery = request.headers.get(_DELIVERY_HEADERS[provider])
        delivery_id = f"{provider}:{delivery[:200]}" if delivery else None
        # The delivery id header is not signed: a replayed body with a new id is recognised by its
        # signed content (branch + pushed commit) instead.
        replay_key = f"push:{hook.repository}:{hook.branch}:{after}" if isinstance(after, str) else None
        body = await asyncio.to_thread(_enqueue_sync, request.app, commit, delivery_id, replay_key)
        return web.json_response(body, status=202)

    handler.__name__ = f"handle_webhook_{provider}"
    return handler


async def handle_openapi(request: web.Request) -> web.Response:
    return web.json_response(request.app[OPENAPI_DOC])


OPENAPI_DOC = web.AppKey("openapi", dict)


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
    routes += [Route("POST", r.path, _retrieval_handler(r), "search", r.summary, r.request_model, r.response_model)
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
        Route("POST", "/webhook/github", _webhook_handler("github"), "webhook",
              "GitHub push webhook (HMAC-SHA256 in X-Hub-Signature-256)", None, openapi.JobAccepted, 202),
        Route("POST", "/webhook/gitea", _webhook_handler("gitea"), "webhook",
              "Gitea push webhook (HMAC-SHA256 in X-Gitea-Signature)", None, openapi.JobAccepted, 202),
    ]
    return routes


MCP_START = web.AppKey("mcp_start", asyncio.Task)
"""Starts the MCP session manager once the server listens (see :func:`_start_mcp`)."""
MCP_SESSION = web.AppKey("mcp_session", dict)
"""``{"manager": StreamableHTTPSessionManager}`` once :mod:`query.server.mcp` has started it."""


async def _start_mcp(app: web.Application) -> Any:
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
        raw = await _read_body(request, request.app[CONFIG].max_body_bytes)  # cached: the SDK reads it again
        with contextlib.suppress(InvalidRequestError):
            if _invalid_json_rpc_ids(decode_json(raw)):
                return web.json_response({"jsonrpc": "2.0", "id": None,
                                          "error": {"code": -32600, "message": "Invalid Request: bad id"}},
                                         status=400)
    await asyncio.shield(request.app[MCP_START])
    from query.server.mcp import handle_mcp as handle

    return await handle(request)


async def _stop_mcp(app: web.Application) -> None:
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


def unlisted_routes() -> list[Route]:
    """Routes left out of ``/openapi.json`` (they are not tools for OpenWebUI): the web page and MCP."""
    return [
        Route("GET", "/ui/", handle_page, "public", "The web page (query/server/web/)"),
        Route("GET", "/ui/{name}", handle_asset, "public", "The web page's script and style sheet"),
        # POST only: the transport is stateless, so there is no server-sent stream (GET answers 405).
        Route("POST", "/mcp", handle_mcp, "search", "MCP streamable HTTP transport (query.server.mcp)"),
    ]


def default_generators(config: ServerConfig) -> Callable[[str | None], Generator]:
    """Return name -> generator over :func:`query.answer.generators.make_generator` (``None``: the default)."""
    made: dict[str, Generator] = {}

    def get(name: str | None) -> Generator:
        from query.answer.generators import make_generator

        chosen = name or config.answer.generator
        if chosen not in made:
            made[chosen] = make_generator(chosen, config.answer.provider_settings())
        return made[chosen]

    return get


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
        app[MCP_START] = asyncio.create_task(_start_mcp(app))
        app[MCP_START].add_done_callback(_log_mcp_failure)
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(_reload(app, force=True)))

    async def on_cleanup(app: web.Application) -> None:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
        app[WATCHER].cancel()
        if app[HOLDER].replica is not None:
            await asyncio.to_thread(app[HOLDER].replica.stop)
        with contextlib.suppress(asyncio.CancelledError):
            await app[WATCHER]
        await _stop_mcp(app)
        app[HOLDER].close()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


def _log_mcp_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the MCP transport failed to start", exc_info=task.exception(), extra={"event": "mcp_failed"})


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
async def log_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """Log one line per request: method, route (the pattern, never the raw path), status, ms, bundle id."""
    started = time.perf_counter()
    status = 500
    if isinstance(request.protocol, _EnvelopeRequestHandler):
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


class _EnvelopeRequestHandler(RequestHandler):
    """aiohttp's per-connection handler, answering errors of its HTTP parser with the contract's envelope.

    aiohttp turns a request it cannot parse (an undecodable ``Content-Encoding``, a bad request
    line, oversized headers) into a plain-text response with the exception text, before any
    middleware runs; here it becomes the envelope with the security headers, and no traceback is
    logged for a client's mistake.
    """

    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if request.writer.output_size > 0:  # a response is under way: aiohttp closes the connection
            return super().handle_error(request, status, exc, message)
        if status >= 500:
            self.log_exception("Error handling request", exc_info=exc)
            reason = "internal_error"
        else:
            self.logger.info("bad HTTP request (%s, status %d)", type(exc).__name__, status)
            if isinstance(exc, ContentEncodingError):
                reason, status = "unsupported_content_encoding", 415
            else:
                reason = "payload_too_large" if status == 413 else "invalid_request"
        response = error_response(reason, status)
        response.headers.update(SECURITY_HEADERS)
        response.force_close()
        return response


LINGERING_SECONDS = 2.0
"""Seconds aiohttp goes on reading (and dropping) the rest of a body the server refused or gave up on,
before it closes the connection (aiohttp's default is 10)."""


class ConnectionLimits:
    """Open connections counted per client address and in total, shared by one server's connections.

    ``admit`` says whether one more connection from ``address`` is allowed (``max_total`` in all,
    ``max_per_address`` per address unless ``exempt(address)``, e.g. a trusted proxy) and counts it;
    ``release`` forgets it.  Used on the event loop only.
    """

    def __init__(self, max_total: int, max_per_address: int, exempt: Callable[[str], bool] = lambda a: False,
                 header_timeout: float = 30.0) -> None:
        self.max_total, self.max_per_address, self.exempt = max_total, max_per_address, exempt
        self.header_timeout = header_timeout
        self.total = 0
        self.per_address: dict[str, int] = {}
        self.refused = 0
        self.timed_out = 0

    def admit(self, address: str) -> bool:
        if self.total >= self.max_total or (
                self.per_address.get(address, 0) >= self.max_per_address and not self.exempt(address)):
            self.refused += 1
            return False
        self.total += 1
        self.per_address[address] = self.per_address.get(address, 0) + 1
        return True

    def release(self, address: str) -> None:
        self.total -= 1
        left = self.per_address.get(address, 1) - 1
        if left > 0:
            self.per_address[address] = left
        else:
            self.per_address.pop(address, None)


_REFUSED = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Retry-After: 1\r\nContent-Length: %d\r\n\r\n%s")


class _LimitedRequestHandler(_EnvelopeRequestHandler):
    """A connection under :class:`ConnectionLimits`: refused (503, closed) over a cap, closed when its
    first request's headers have not arrived within ``header_timeout`` seconds."""

    def __init__(self, manager: web.Server, limits: ConnectionLimits, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self.limits = limits
        self.address: str | None = None
        self.header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        if not self.limits.admit(address):
            body = json.dumps(error_body("too_many_connections")).encode()
            transport.write(_REFUSED % (len(body), body))  # type: ignore[attr-defined]
            transport.close()
            return
        self.address = address
        self.header_timer = asyncio.get_running_loop().call_later(self.limits.header_timeout, self._header_timeout,
                                                                   transport)
        super().connection_made(transport)

    def headers_arrived(self) -> None:
        """The first request's headers are in (called by :func:`log_middleware`): the header deadline is off."""
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _header_timeout(self, transport: asyncio.BaseTransport) -> None:
        self.header_timer = None
        self.limits.timed_out += 1
        log.info("closing a connection that sent no complete request in time", extra={"event": "header_timeout"})
        transport.close()

    def connection_lost(self, exc: BaseException | None) -> None:
        if self.address is None:
            return  # refused in connection_made: aiohttp never saw it
        self.headers_arrived()
        self.limits.release(self.address)
        self.address = None
        super().connection_lost(exc)


class _EnvelopeServer(web.Server):
    limits: ConnectionLimits | None = None

    def __call__(self) -> RequestHandler:
        if self.limits is not None:
            return _LimitedRequestHandler(self, self.limits, loop=self._loop, **self._kwargs)
        return _EnvelopeRequestHandler(self, loop=self._loop, **self._kwargs)


class EnvelopeRunner(web.AppRunner):
    """An :class:`aiohttp.web.AppRunner` whose connections answer parser errors with the envelope and,
    given ``limits``, obey :class:`ConnectionLimits`.

    Uses aiohttp internals (``_make_server``, ``Server._loop`` / ``_kwargs``): the dependency is pinned
    to the tested minor release (pyproject.toml) and ``tests/query/test_server_hardening27.py`` fails
    on another one.
    """

    def __init__(self, app: web.Application, *, limits: ConnectionLimits | None = None, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.limits = limits

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _EnvelopeServer  # same state, one overridden factory method
        server.limits = self.limits  # type: ignore[attr-defined]
        return server


async def start_server(app: web.Application, host: str = "127.0.0.1", port: int = 0,
                       handle_signals: bool = False, reuse_port: bool = False) -> tuple[EnvelopeRunner, int]:
    """Start ``app`` on ``host:port`` (0 = any free port); return the runner and the bound port.

    ``reuse_port``: bind with ``SO_REUSEPORT`` (the workers of ``--workers N`` share the port).
    Call ``await runner.cleanup()`` to stop.  aiohttp's own access log is off: :func:`log_middleware`
    writes one structured line per request instead.
    """
    config = app[CONFIG]
    networks = config.proxy_networks()
    limits = ConnectionLimits(config.max_connections, config.max_connections_per_address,
                              exempt=lambda address: in_networks(address, networks),
                              header_timeout=config.header_timeout)
    app[CONNECTION_LIMITS] = limits
    runner = EnvelopeRunner(app, access_log=None, handle_signals=handle_signals, limits=limits,
                            keepalive_timeout=config.keepalive_timeout, lingering_time=LINGERING_SECONDS)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_port=reuse_port or None)
    await site.start()
    bound = runner.addresses[0][1] if runner.addresses else port
    return runner, int(bound)


def run_server(store_dir: Path | str, host: str = "127.0.0.1", port: int = 8080,
               options: SearchOptions | None = None, config: ServerConfig | None = None,
               poll_interval: float | None = None, worker: WorkerSlot | None = None, replica: Any = None) -> None:
    """Serve until interrupted (SIGINT/SIGTERM).  Without API keys only loopback hosts are allowed.

    ``worker``: run as one worker of ``gitrag serve --workers N`` (:mod:`query.server.workers`): bind with
    ``SO_REUSEPORT``, tell the supervisor once listening, log the worker index on every line.

    Raises :class:`~query.config.ConfigError` (a :class:`ValueError`) for a non-loopback ``host``
    without keys, or for short or repeated keys, and :class:`OSError` when the port cannot be bound.
    """
    config = config or ServerConfig()
    config.check(host)
    if not config.keys_configured and not is_loopback(host):
        raise ConfigError("without API keys gitrag serves only on a loopback address")
    started = time.monotonic()
    if worker is not None:
        _log_worker_index(worker.index)
    app = create_app(store_dir, options=options, config=config, poll_interval=poll_interval, worker=worker,
                     replica=replica)
    log.debug("app built in %.3f s", time.monotonic() - started)

    async def serve() -> None:
        runner, bound = await start_server(app, host, port, handle_signals=True, reuse_port=worker is not None)
        log.info("listening on %s:%d", host, bound, extra={"event": "listening", "host": host, "port": bound})
        if worker is not None:
            worker.tell(b"R")
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    with contextlib.suppress(KeyboardInterrupt, web.GracefulExit):
        asyncio.run(serve())


class _WorkerField(logging.Filter):
    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def filter(self, record: logging.LogRecord) -> bool:
        record.worker = self.index
        return True


def _log_worker_index(index: int) -> None:
    """Add ``"worker": index`` to every log line of this process (the JSON lines of all workers share stderr)."""
    for handler in logging.getLogger("gitrag").handlers:
        handler.addFilter(_WorkerField(index))


__all__ = ["BundleHolder", "EnvelopeRunner", "RETRIEVAL_ROUTES", "RetrievalRoute", "Route", "create_app",
           "route_table", "run_server", "start_server", "Retrieval"]
