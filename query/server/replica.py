"""A query replica: follow a remote ``CURRENT`` in S3-compatible storage and serve it by the local swap rule.

``gitrag serve --from s3://BUCKET/PREFIX --cache DIR`` runs the ordinary server (:mod:`query.server.app`)
over ``DIR``, a local bundle store used as a cache, plus a :class:`Replica` thread that:

1. polls the remote ``CURRENT`` every ``poll_interval`` seconds with a conditional GET (``If-None-Match``
   on the last ETag: an unchanged pointer is a 304 without a body);
2. when it names a new bundle, downloads it into ``DIR/staging/``, verifies every file against the
   manifest and renames it into ``DIR/bundles/`` (:func:`artifacts.remote.download_bundle`); a
   bundle that fails (a corrupt file, or a blob missing from the remote store: found by HEADs
   before any byte is downloaded) is deleted and remembered as refused (``/health`` says why;
   retried after ``retry_refused`` seconds, or as soon as its remote manifest changes);
3. points ``DIR/CURRENT`` at it and asks the server's :class:`~query.server.holder.BundleHolder` to reload,
   which opens, verifies and warms the bundle and swaps it in: requests in flight finish on the old
   bundle, a bundle that fails to open is never served (the server's one swap rule);
4. keeps ``DIR`` under ``cache_bytes`` after every download and at every poll: bundles are evicted
   least recently used first, never the served one, the cache's ``CURRENT``, one being fetched,
   one a request is using or opening, or one used in the last :data:`EVICT_GRACE` seconds (see
   :meth:`Replica.evict`).

``at=`` of a commit the cache does not hold is fetched on demand (:meth:`Replica.fetch_revision`,
called by the holder when the local resolver finds no bundle) into the same bounded cache.

With ``--workers N`` each worker process runs its own follower over the same ``DIR``; downloads take
the cache store's writer lock, so a bundle is downloaded once and the others find it in place.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from typing import Any

from artifacts.errors import ArtifactError, BundleIntegrityError, RemoteCurrentError, RemoteStoreError
from artifacts.manifest import read_manifest
from artifacts.remote import NOT_MODIFIED, RemoteStore, download_bundle, remove_cached_bundle, resolve_remote_ref
from artifacts.store import Store

log = logging.getLogger("gitrag.replica")

EVICT_GRACE = 10.0
"""Seconds after its last use during which a cached bundle is never evicted: the moment between a request
resolving ``at=`` to it and leasing it (a bundle leased or being opened is protected as long as that lasts)."""
LISTING_TTL = 30.0
"""Seconds a listing of the remote bundles is reused (``GET /bundles``, ``at=``); a new remote ``CURRENT``
or an ``at=`` that matches nothing lists again."""


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


class Replica:
    """Follows one remote store into a local cache store and keeps a server's holder on its ``CURRENT``.

    ``remote``: the :class:`~artifacts.remote.RemoteStore`; ``cache``: the local cache
    :class:`~artifacts.store.Store`; ``poll_interval``: seconds between polls of the remote
    ``CURRENT``; ``cache_bytes``: bound of the bundles kept in ``cache`` (bytes, LRU); ``retry_refused``:
    seconds before a bundle that failed verification is downloaded again.
    Thread-safe: the polling thread, request threads (``at=``) and ``/health`` share it.
    """

    def __init__(self, remote: RemoteStore, cache: Store, *, poll_interval: float = 2.0,
                 cache_bytes: int = 10 * 1024 ** 3, retry_refused: float = 60.0) -> None:
        self.remote = remote
        self.cache = cache.ensure()
        self.poll_interval = poll_interval
        self.cache_bytes = cache_bytes
        self.retry_refused = retry_refused
        self.holder: Any = None  # query.server.holder.BundleHolder, set by attach()
        self.remote_current: str | None = None
        self.fetching: str | None = None
        self.refused: dict[str, dict[str, Any]] = {}
        self.last_error: str | None = None
        self.last_poll_at: str | None = None
        self.last_change_at: str | None = None
        self.polls = 0
        self.fetches = 0
        self.bytes_downloaded = 0
        self.bytes_reused = 0
        self.evicted = 0
        self._etag: str | None = None
        self._etag_bundle: str | None = None  # the bundle id the remote CURRENT named when it had ETag _etag
        self._listing: tuple[float, list[str]] | None = None  # (monotonic time, remote bundle ids)
        self._manifests: dict[str, Any] = {}  # remote bundle id -> Manifest (immutable: kept)
        self._used: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sizes: dict[str, int] = {}

    # -- life cycle ------------------------------------------------------------------------------

    def attach(self, holder: Any) -> None:
        """Serve through ``holder`` (a :class:`~query.server.holder.BundleHolder` over :attr:`cache`)."""
        self.holder = holder

    def start(self) -> None:
        """Start the polling thread (a daemon; the first poll runs at once)."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="gitrag-replica", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the polling thread (waits for a poll or download in progress up to ``timeout`` seconds).

        The thread is a daemon: a download still running after ``timeout`` ends with the process, and
        its ``staging/`` directory is removed by the next download into the cache (a bundle is renamed
        into ``bundles/`` complete or not at all), so a server stops promptly.
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception:  # noqa: BLE001 - the follower must never die
                log.exception("replica poll failed", extra={"event": "replica_poll_failed"})
            self._stop.wait(self.poll_interval)

    # -- following CURRENT -------------------------------------------------------------------------

    def poll_once(self) -> bool:
        """Read the remote ``CURRENT`` once; fetch, verify and install a new bundle.  Return True when the
        cache's ``CURRENT`` moved.  Errors are recorded in :attr:`last_error` (and logged), not raised;
        a poll that finds the remote ``CURRENT`` served (or unchanged: a 304) clears it.
        """
        self.polls += 1
        self.last_poll_at = _now()
        try:
            pointer = self.remote.read_current(self._etag)
        except RemoteCurrentError as exc:
            self.remote_current = None  # it names no bundle: nothing to be in sync with
            self._fail(f"cannot poll the remote CURRENT: {exc}", None)
            return False
        except ArtifactError as exc:
            self._fail(f"cannot poll the remote CURRENT: {exc}", None)
            return False
        if pointer is NOT_MODIFIED:
            # the same object as at the last successful poll, whose bundle was installed then
            self.remote_current = self._etag_bundle
            self.last_error = None
            self._sync_holder()
            self.evict()
            return False
        if pointer is None:
            self.remote_current = None
            # forget the ETag: a CURRENT restored with the same bytes (the same ETag) must be read again
            self._etag = self._etag_bundle = None
            self.last_error = "the remote store has no CURRENT yet (run `gitrag publish`)"
            return False
        target = pointer.bundle_id
        if target != self.remote_current:
            self.remote_current = target
            self.last_change_at = _now()
            self._listing = None  # a new CURRENT: probably a new bundle too
            log.info("remote CURRENT is %s", target, extra={"event": "remote_current", "bundle_id": target})
        if not self._retry_due(target):
            self.evict()
            return False
        if not self._install(target):
            self.evict()
            return False
        self._etag, self._etag_bundle = pointer.etag, target  # only now: a failed fetch is retried at the next poll
        self.last_error = None
        moved = self._set_cache_current(target)
        self._sync_holder()
        self.evict()
        return moved

    def _retry_due(self, bundle_id: str) -> bool:
        """Whether ``bundle_id`` may be downloaded: not refused, refused ``retry_refused`` seconds ago, or its
        remote manifest changed since (one HEAD)."""
        with self._lock:
            refused = self.refused.get(bundle_id)
        if refused is None or time.monotonic() - refused["at"] >= self.retry_refused:
            return True
        try:
            return bool(self.remote.manifest_etag(bundle_id) != refused["manifest_etag"])
        except ArtifactError:
            return False

    def _install(self, bundle_id: str) -> bool:
        """Download and verify ``bundle_id`` into the cache (no-op when present); False on failure."""
        if (self.cache.bundles_dir / bundle_id).is_dir():
            self.touch(bundle_id)
            return True
        with self._lock:
            self.fetching = bundle_id
        started = time.monotonic()
        try:
            download_bundle(self.remote, bundle_id, self.cache, on_bytes=self._count_bytes,
                            on_reuse=self._count_reused)
        except BundleIntegrityError as exc:
            reason = self._refuse(bundle_id, exc)
            self._fail(f"bundle {bundle_id} refused: it fails verification ({reason})", bundle_id)
            return False
        except (ArtifactError, OSError) as exc:
            self._fail(f"fetching bundle {bundle_id} failed: {type(exc).__name__}: {exc}", bundle_id)
            return False
        finally:
            with self._lock:
                self.fetching = None
        with self._lock:
            self.refused.pop(bundle_id, None)
        self.fetches += 1
        self.last_error = None
        self.touch(bundle_id)
        log.info("fetched bundle %s in %.1f s", bundle_id, time.monotonic() - started,
                 extra={"event": "replica_fetched", "bundle_id": bundle_id,
                        "seconds": round(time.monotonic() - started, 3)})
        return True

    def _set_cache_current(self, bundle_id: str) -> bool:
        if self.cache.current_id() == bundle_id:
            return False
        with self.cache.writer_lock(wait=True, timeout=60.0):
            self.cache.set_current(bundle_id)
        return True

    def _sync_holder(self) -> None:
        """Have the holder serve the cache's ``CURRENT`` now (instead of at its next poll)."""
        if self.holder is not None and self.cache.current_id() is not None:
            self.holder.load_current()

    def _refuse(self, bundle_id: str, exc: BundleIntegrityError) -> str:
        """Remember that ``bundle_id`` failed verification; return the problems as one line."""
        problems = "; ".join(exc.problems[:5]) or str(exc)
        try:
            manifest_etag = self.remote.manifest_etag(bundle_id)
        except ArtifactError:
            manifest_etag = None
        with self._lock:
            self.refused[bundle_id] = {"reason": f"{exc}: {problems}", "problems": problems, "at": time.monotonic(),
                                       "when": _now(), "manifest_etag": manifest_etag}
        return problems

    def _count_bytes(self, n: int) -> None:
        with self._lock:  # called from the download threads
            self.bytes_downloaded += n

    def _count_reused(self, n: int) -> None:
        with self._lock:
            self.bytes_reused += n

    def _fail(self, message: str, bundle_id: str | None) -> None:
        self.last_error = message
        log.warning("%s", message, extra={"event": "replica_error", "bundle_id": bundle_id})

    # -- at= and the cache -------------------------------------------------------------------------

    def fetch_revision(self, at: str) -> str | None:
        """Fetch the remote bundle ``at`` names (bundle id or commit hex prefix) into the cache; return its id.

        Returns ``None`` when no remote bundle matches (the caller then raises its own not-found
        error).  Among several configurations of one commit the served bundle's wins.  Raises
        :class:`~artifacts.errors.BundleIntegrityError` for a bundle that fails verification (never
        served) and :class:`~artifacts.errors.RemoteStoreError` when the storage cannot be reached.
        """
        served = self.holder.bundle if self.holder is not None else None
        prefer = served.manifest.config_fingerprint[:8] if served is not None else None
        try:
            bundle_id = resolve_remote_ref(self.remote_bundle_ids(), at, prefer)
        except RemoteStoreError:
            raise
        except ArtifactError:
            try:  # published since the listing was taken?
                bundle_id = resolve_remote_ref(self.remote_bundle_ids(max_age=1.0), at, prefer)
            except RemoteStoreError:
                raise
            except ArtifactError:
                return None
        if not self._retry_due(bundle_id):
            with self._lock:
                problems = self.refused[bundle_id]["problems"]
            raise BundleIntegrityError(f"bundle {bundle_id} fails verification", [problems])
        try:
            download_bundle(self.remote, bundle_id, self.cache, on_bytes=self._count_bytes,
                            on_reuse=self._count_reused)
        except BundleIntegrityError as exc:
            self._refuse(bundle_id, exc)
            raise
        self.fetches += 1
        self.touch(bundle_id)
        self.evict(keep=bundle_id)
        return bundle_id

    def remote_bundle_ids(self, max_age: float = LISTING_TTL) -> list[str]:
        """The ids of the published bundles (a listing reused for ``max_age`` seconds).

        Raises :class:`~artifacts.errors.RemoteStoreError`.
        """
        with self._lock:
            listing = self._listing
        if listing is not None and time.monotonic() - listing[0] < max_age:
            return listing[1]
        ids = self.remote.list_bundle_ids()
        with self._lock:
            self._listing = (time.monotonic(), ids)
        return ids

    def published_manifests(self) -> list[Any]:
        """The manifests of every published bundle (:class:`~artifacts.manifest.Manifest`), newest commit first.

        Manifests are immutable: each is read once (from the cache when it holds the bundle, else
        one GET) and kept; the listing is :meth:`remote_bundle_ids`'s.  A manifest that does not
        validate is left out.  Raises :class:`~artifacts.errors.RemoteStoreError`.
        """
        from concurrent.futures import ThreadPoolExecutor

        from artifacts.remote import parse_remote_manifest

        ids = self.remote_bundle_ids()
        missing = [b for b in ids if b not in self._manifests]

        def read(bundle_id: str) -> Any:
            try:
                return read_manifest(self.cache.bundles_dir / bundle_id)
            except ArtifactError:
                pass
            try:
                return parse_remote_manifest(self.remote.read_manifest_bytes(bundle_id), bundle_id)
            except RemoteStoreError:
                raise
            except ArtifactError:
                return None

        if missing:
            with ThreadPoolExecutor(max_workers=8, thread_name_prefix="gitrag-manifests") as pool:
                for bundle_id, manifest in zip(missing, pool.map(read, missing), strict=True):
                    if manifest is not None:
                        self._manifests[bundle_id] = manifest
        found = [self._manifests[b] for b in ids if b in self._manifests]
        return sorted(found, key=lambda m: m.commit_time, reverse=True)

    def touch(self, bundle_id: str) -> None:
        """Mark a cached bundle as just used (LRU order)."""
        with self._lock:
            self._used[bundle_id] = time.monotonic()

    def _size(self, bundle_id: str) -> int:
        size = self._sizes.get(bundle_id)
        if size is None:
            try:
                size = sum(f.size for f in read_manifest(self.cache.bundles_dir / bundle_id).files)
            except ArtifactError:
                size = 0
            self._sizes[bundle_id] = size
        return size

    def cached_bundles(self) -> list[str]:
        """The bundle ids in the cache store, least recently used first."""
        try:
            names = [p.name for p in self.cache.bundles_dir.iterdir() if p.is_dir()]
        except FileNotFoundError:
            return []
        with self._lock:
            used = dict(self._used)
        mtimes = {}
        for name in names:
            try:
                mtimes[name] = (self.cache.bundles_dir / name).stat().st_mtime
            except FileNotFoundError:
                continue
        # never used in this process: by directory time (an older fetch first), before any used one
        return sorted(mtimes, key=lambda n: (n in used, used.get(n, 0.0), mtimes[n]))

    def cache_size(self) -> int:
        """Bytes of the bundles in the cache store (from their manifests)."""
        return sum(self._size(b) for b in self.cached_bundles())

    def evict(self, keep: str | None = None) -> list[str]:
        """Delete least recently used bundles until the cache holds at most ``cache_bytes``; return their ids.

        Called after every download and at every poll.  Never evicted: ``keep``, the cache's
        ``CURRENT``, the served bundle, one being fetched, one a request holds a lease on or is
        opening (:meth:`BundleHolder.in_use`), and any used in the last :data:`EVICT_GRACE` seconds.
        A bundle still open in the server's history LRU may go: a request reaches it only through
        :meth:`BundleHolder.resolve`, which lists the cache directory first and so downloads an
        evicted bundle again (the same bytes at the same paths) before the open bundle reads another
        file; its memory-mapped records stay valid meanwhile (the mapping holds the deleted file).
        """
        order = self.cached_bundles()
        total = sum(self._size(b) for b in order)
        if total <= self.cache_bytes:
            return []
        protected = {keep, self.cache.current_id(), self.fetching}
        if self.holder is not None:
            protected |= self.holder.in_use()  # the served bundle, and any a request uses or opens
        now = time.monotonic()
        with self._lock:
            protected.update(b for b, at in self._used.items() if now - at < EVICT_GRACE)
        removed = []
        for bundle_id in order:
            if total <= self.cache_bytes:
                break
            if bundle_id in protected:
                continue
            remove_cached_bundle(self.cache, bundle_id)
            total -= self._size(bundle_id)
            self._sizes.pop(bundle_id, None)
            with self._lock:
                self._used.pop(bundle_id, None)
            removed.append(bundle_id)
            self.evicted += 1
            log.info("evicted bundle %s from the cache", bundle_id, extra={"event": "replica_evicted",
                                                                          "bundle_id": bundle_id})
        return removed

    # -- reporting -------------------------------------------------------------------------------

    def unavailable_hint(self) -> str:
        """Why a replica serves nothing yet (one sentence for ``/health`` and the 503s)."""
        if self.fetching:
            return f"The replica is downloading its first bundle ({self.fetching}) from {self.remote.url}."
        if self.last_error:
            return f"The replica has no verified bundle to serve yet: {self.last_error}"
        return f"The replica has not fetched a bundle from {self.remote.url} yet."

    def status(self) -> dict[str, Any]:
        """The ``replica`` object of ``/health``: what it serves, what the remote names, what it fetches."""
        served = self.holder.bundle.bundle_id if self.holder is not None and self.holder.bundle is not None else None
        bundles = self.cached_bundles()
        with self._lock:
            refused = list(self.refused.items())
        return {
            "source": self.remote.describe(),
            "remote_current": self.remote_current,
            "serving": served,
            "fetching": self.fetching,
            "in_sync": served is not None and served == self.remote_current,
            "last_poll_at": self.last_poll_at,
            "last_change_at": self.last_change_at,
            "poll_interval_s": self.poll_interval,
            "polls": self.polls,
            "fetches": self.fetches,
            "bytes_downloaded": self.bytes_downloaded,
            "bytes_reused": self.bytes_reused,
            "last_error": self.last_error,
            "refused": {b: {"reason": r["reason"], "when": r["when"]} for b, r in refused},
            "cache": {"bundles": len(bundles), "bytes": sum(self._size(b) for b in bundles),
                      "max_bytes": self.cache_bytes, "evicted": self.evicted},
        }


__all__ = ["EVICT_GRACE", "Replica"]
