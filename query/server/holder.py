"""The served bundle and the swap: :class:`BundleHolder`.

Swap protocol: the served bundle is one reference in :class:`BundleHolder`.  A reload (polling of
``CURRENT`` every ``poll_interval`` seconds, ``SIGHUP``, ``POST /admin/reload`` or ``POST
/admin/use``) opens, verifies and warms the new bundle in a worker thread (model loaded, one query
embedded, label map and BM25 matrix prepared, then one probe request per route through
:attr:`BundleHolder.probe`, see :mod:`query.server.warm`), *then* replaces that reference under a
lock, so that no request after the swap pays for a lazy open.  Each request takes a lease on the
bundle it started with, so requests in flight finish on the old bundle, which is closed when its
last lease ends.  If the new bundle fails to open or verify, the old one keeps serving, ``/health``
reports the failure, and polling does not retry that same bundle until a forced reload.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

from artifacts.embedding import Embedder
from artifacts.errors import ArtifactError, BundleIntegrityError, BundleNotFoundError
from artifacts.store import Store, fallback_candidates, resolve_bundle_ref
from query.bundle import OpenedBundle, open_bundle
from query.errors import (
    QueryError,
    RetrievalUnavailableError,
)
from query.search.weighting import warm_up
from query.timetravel import BundleCache, BundleIndex, Leases

log = logging.getLogger("gitrag.server")


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


def _trim_heap() -> None:
    """Give the C heap's free memory back to the system (glibc ``malloc_trim``; nothing elsewhere).

    Every swap builds a bundle's derived structures (BM25 weights, graph name index, answer tables,
    :mod:`query.server.warm`) in a worker thread and frees the retired bundle's: glibc keeps the freed
    pages in its per-thread arenas, and a server's RSS grew by about 6 MB a swap (60 swaps of the
    swap-under-load test: +400 MB) without this call before each swap.
    """
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL("libc.so.6")
            _LIBC.malloc_trim  # noqa: B018 - glibc only
        except (OSError, AttributeError):
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)


_LIBC: Any = None


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
        self.probe: Callable[[OpenedBundle], dict[str, float]] | None = None
        """Warms a bundle about to be served with one request per route (:func:`query.server.warm.make_probe`)."""
        self.last_warm: dict[str, float] | None = None
        """Seconds per probe of the last bundle warmed for serving (``/health`` of a keyed request)."""

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

    def _open(self, bundle_id: str, probe: bool = False) -> OpenedBundle:
        """Open, verify and prepare ``bundle_id``; with ``probe`` (a bundle about to be served) also run
        :attr:`probe` on it.

        A historical bundle (``at=``) is not probed: the request that asked for it is waiting, and it
        pays only for what it uses.  The probes run before the embedder is wrapped (timed for
        ``/metrics``), so that the metrics count requests, not warm-up.
        """
        if probe:
            _trim_heap()
        fresh = open_bundle(self.store.bundle_path(bundle_id), verify=True, embedder=self.embedder)
        fresh.chunks.prepare()  # an incremental bundle's label -> line map, before any request needs it
        warm_up(fresh)  # the BM25 matrix weighed before the first request, not during it
        if probe and self.probe is not None:
            started = time.perf_counter()
            took = self.probe(fresh)
            self.last_warm = {**took, "total": round(time.perf_counter() - started, 4)}
            log.info("warmed bundle %s in %.2f s", bundle_id, self.last_warm["total"],
                     extra={"event": "warmed", "bundle_id": bundle_id, "probes_s": self.last_warm})
        if self.wrap_embedder is not None:
            # before the bundle is shared: swap in a resolved future holding the wrapped (timed) embedder
            wrapped: Future[Any] = Future()
            wrapped.set_result(self.wrap_embedder(fresh.embedder))
            fresh.embedder_future = wrapped
        if fresh.embedder is not None:
            fresh.embedder.embed_query("warm-up")  # load weights before serving
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
                fresh = self._open(wanted, probe=True)
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
                fresh = self._open(info.bundle_id, probe=True)
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

    def in_use(self) -> set[str]:
        """The bundle ids a request is using or opening now, and the served one (never evicted from a cache)."""
        used = self.leases.leased_ids() | self.cache.opening_ids()
        served = self.bundle
        return used | {served.bundle_id} if served is not None else used

    def close(self) -> None:
        with self.leases.lock:
            self.cache.close_all()
            if self.bundle is not None:
                self.leases.retire(self.bundle)
                self.bundle = None
