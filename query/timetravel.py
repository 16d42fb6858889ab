"""Time travel: ``at`` (any revision ``gitrag use`` accepts) selects a bundle; old bundles stay open in an LRU.

``at`` is never a path.  It is checked and resolved by the store's one resolver,
:func:`artifacts.store.resolve_bundle_ref` (the same function as ``gitrag use``, ``verify`` and
``diff``): a bundle id, a full or short commit id, a branch or tag, optionally with ``~N`` / ``^``
steps (``main~2``, ``v1^``), resolved with pygit2 in the source repositories recorded in the
manifests, the served bundle's first.  A malformed value is ``400 invalid_at`` before anything
touches the filesystem; a revision that names no commit is ``404 unknown_revision``; a commit
without a bundle is ``404 bundle_not_found``.  When a commit has bundles of several
configurations, the one with the served bundle's config fingerprint wins.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from artifacts.errors import InvalidRevisionError
from artifacts.manifest import Manifest
from artifacts.store import BundleInfo, Store, check_revision
from query.bundle import OpenedBundle
from query.errors import InvalidAtError


def check_at(at: object) -> str:
    """Return ``at`` if it is a well-formed revision (:func:`~artifacts.store.check_revision`); raise
    :class:`~query.errors.InvalidAtError` (``400 invalid_at``) otherwise."""
    try:
        return check_revision(at)
    except InvalidRevisionError as exc:
        raise InvalidAtError("bad at") from exc


class BundleIndex:
    """The store's published bundles, re-listed only when ``bundles/`` changes (mtime)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._stamp: int | None = None
        self._bundles: list[BundleInfo] = []
        self._lock = threading.Lock()

    def list(self) -> list[BundleInfo]:
        """Return the published bundles, newest commit first."""
        try:
            stamp = self.store.bundles_dir.stat().st_mtime_ns
        except FileNotFoundError:
            return []
        with self._lock:
            if stamp != self._stamp:
                self._bundles = self.store.list_bundles()
                self._stamp = stamp
            return list(self._bundles)


def bundle_bytes(manifest: Manifest) -> int:
    """Approximate memory of an opened bundle: the bytes of every file it loads (graph excluded)."""
    return sum(f.size for f in manifest.files if not f.path.startswith("graph/"))


class Leases:
    """Reference counts of opened bundles; a retired bundle is closed when its last lease ends."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._counts: dict[int, int] = {}
        self._names: dict[int, str] = {}
        self._retired: dict[int, OpenedBundle] = {}

    def acquire(self, bundle: OpenedBundle) -> None:
        """Take a lease (call with :attr:`lock` held)."""
        self._counts[id(bundle)] = self._counts.get(id(bundle), 0) + 1
        self._names[id(bundle)] = bundle.bundle_id

    def release(self, bundle: OpenedBundle) -> None:
        """End a lease; close the bundle if it was retired and this was the last lease."""
        with self.lock:
            self._counts[id(bundle)] -= 1
            if self._counts[id(bundle)] == 0:
                del self._counts[id(bundle)]
                self._names.pop(id(bundle), None)
                retired = self._retired.pop(id(bundle), None)
                if retired is not None:
                    retired.close()

    def retire(self, bundle: OpenedBundle) -> None:
        """Close ``bundle`` now if unused, else when its last lease ends (call with :attr:`lock` held)."""
        if self._counts.get(id(bundle)):
            self._retired[id(bundle)] = bundle
        else:
            bundle.close()

    def leased_ids(self) -> set[str]:
        """The bundle ids with a lease now (a request is using them)."""
        with self.lock:
            return set(self._names.values())

    @property
    def active(self) -> int:
        with self.lock:
            return sum(self._counts.values())


class BundleCache:
    """An LRU of opened historical bundles, bounded by count and by :func:`bundle_bytes`.

    The newest entry is kept even if it alone exceeds ``max_bytes``.  Evicted bundles are retired
    through :class:`Leases`, so a request still using one finishes first.
    """

    def __init__(self, leases: Leases, max_count: int = 4, max_bytes: int = 1024 * 1024 * 1024) -> None:
        self.leases = leases
        self.max_count = max_count
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, tuple[OpenedBundle, int]] = OrderedDict()
        self._opening: dict[str, threading.Lock] = {}
        self.hits = 0  # leases served from the LRU (for /metrics)
        self.misses = 0  # bundles opened because they were not in the LRU

    def lease_cached(self, bundle_id: str) -> OpenedBundle | None:
        """Return and lease the cached bundle (call with ``leases.lock`` held), or ``None``."""
        entry = self._entries.get(bundle_id)
        if entry is None:
            return None
        self._entries.move_to_end(bundle_id)
        self.hits += 1
        self.leases.acquire(entry[0])
        return entry[0]

    def opening_lock(self, bundle_id: str) -> threading.Lock:
        """One lock per bundle id so that concurrent requests open a bundle once (``leases.lock`` held)."""
        return self._opening.setdefault(bundle_id, threading.Lock())

    def opening_ids(self) -> set[str]:
        """The bundle ids a request is opening now (their opening lock is held)."""
        return {bundle_id for bundle_id, lock in list(self._opening.items()) if lock.locked()}

    def insert_and_lease(self, bundle: OpenedBundle) -> None:
        """Add a freshly opened bundle, lease it and evict beyond the bounds (``leases.lock`` held)."""
        self.misses += 1
        self._entries[bundle.bundle_id] = (bundle, bundle_bytes(bundle.manifest))
        self._opening.pop(bundle.bundle_id, None)
        self.leases.acquire(bundle)
        while len(self._entries) > 1 and (len(self._entries) > self.max_count or self.total_bytes > self.max_bytes):
            _, (old, _size) = self._entries.popitem(last=False)
            self.leases.retire(old)

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size in self._entries.values())

    def info(self) -> dict[str, object]:
        return {"bundles": list(self._entries), "bytes": self.total_bytes, "max_count": self.max_count,
                "max_bytes": self.max_bytes}

    def close_all(self) -> None:
        for bundle, _size in self._entries.values():
            self.leases.retire(bundle)
        self._entries.clear()


__all__ = ["BundleCache", "BundleIndex", "InvalidAtError", "Leases", "check_at"]
