"""Time travel: resolve ``at`` (sha, short sha, branch, tag) to a bundle, and keep old bundles open in an LRU.

``at`` is never a path.  It must look like a hex commit id or a Git ref name (letters, digits,
``. _ - /``, no ``..``, no leading ``/`` or ``-``, no ``@{``, ``~``, ``^`` or ``:``), or it is
rejected with ``invalid_at`` before anything touches the filesystem.  Resolution order:

1. a hex string of 4..40 characters that prefixes the commit of exactly one published commit;
2. otherwise a branch (``refs/heads/``), tag (``refs/tags/``, peeled) or full ``refs/...`` name, or
   a commit id, looked up with pygit2 in the source repositories recorded in the manifests
   (``source.repo``) — the served bundle's repository first.

The resolved commit must have a published bundle, else :class:`BundleNotFoundError` (404
``bundle_not_found``).  When a commit has bundles of several configurations, the one with the
served bundle's config fingerprint wins.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

import pygit2

from artifacts.manifest import Manifest
from artifacts.store import BundleInfo, Store

from .bundle import OpenedBundle
from .errors import InvalidRequestError, NotFoundError

MAX_AT_CHARS = 200
_HEX = re.compile(r"^[0-9a-fA-F]{4,40}$")
_REFNAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]*$")


class InvalidAtError(InvalidRequestError):
    reason = "invalid_at"


def check_at(at: object) -> str:
    """Return ``at`` if it is a well-formed commit id or ref name; raise :class:`InvalidAtError`."""
    if not isinstance(at, str) or not at or len(at) > MAX_AT_CHARS:
        raise InvalidAtError("bad at")
    if not _REFNAME.match(at) or ".." in at or "//" in at or at.endswith(("/", ".", ".lock")) or "/." in at:
        raise InvalidAtError("bad at")
    return at


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


def _pick(candidates: list[BundleInfo], prefer_fingerprint: str | None) -> BundleInfo:
    for info in candidates:
        if info.manifest.config_fingerprint == prefer_fingerprint:
            return info
    return candidates[0]


def resolve_at(at: str, bundles: list[BundleInfo], served: Manifest | None) -> str:
    """Return the bundle id for ``at`` (see the module docstring).

    Raises :class:`InvalidAtError` for a malformed value and :class:`NotFoundError`
    (``bundle_not_found``) when no bundle matches.
    """
    at = check_at(at)
    prefer = served.config_fingerprint if served is not None else None
    if _HEX.match(at):
        prefix = at.lower()
        matches = [b for b in bundles if b.manifest.commit.startswith(prefix)]
        commits = {b.manifest.commit for b in matches}
        if len(commits) == 1:
            return _pick(matches, prefer).bundle_id
    repos: list[str] = []
    if served is not None:
        repos.append(served.source.repo)
    repos += [b.manifest.source.repo for b in bundles if b.manifest.source.repo not in repos]
    for repo_path in repos:
        commit = _resolve_in_repo(repo_path, at)
        if commit is None:
            continue
        matches = [b for b in bundles if b.manifest.commit == commit]
        if matches:
            return _pick(matches, prefer).bundle_id
        break  # the name resolved in the primary repository: that commit simply has no bundle
    raise NotFoundError("no bundle for at")


def _resolve_in_repo(repo_path: str, at: str) -> str | None:
    try:
        repo = pygit2.Repository(repo_path)
    except (pygit2.GitError, KeyError, OSError):
        return None
    names = [f"refs/heads/{at}", f"refs/tags/{at}", f"refs/remotes/{at}"]
    if at.startswith("refs/"):
        names.insert(0, at)
    for name in names:
        try:
            ref = repo.references.get(name)
        except (pygit2.GitError, ValueError):
            ref = None
        if ref is not None:
            try:
                return str(ref.peel(pygit2.Commit).id)
            except (pygit2.GitError, ValueError, KeyError):
                return None
    if _HEX.match(at):
        try:
            return str(repo.revparse_single(at).peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            return None
    return None


def bundle_bytes(manifest: Manifest) -> int:
    """Approximate memory of an opened bundle: the bytes of every file it loads (graph excluded)."""
    return sum(f.size for f in manifest.files if not f.path.startswith("graph/"))


class Leases:
    """Reference counts of opened bundles; a retired bundle is closed when its last lease ends."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._counts: dict[int, int] = {}
        self._retired: dict[int, OpenedBundle] = {}

    def acquire(self, bundle: OpenedBundle) -> None:
        """Take a lease (call with :attr:`lock` held)."""
        self._counts[id(bundle)] = self._counts.get(id(bundle), 0) + 1

    def release(self, bundle: OpenedBundle) -> None:
        """End a lease; close the bundle if it was retired and this was the last lease."""
        with self.lock:
            self._counts[id(bundle)] -= 1
            if self._counts[id(bundle)] == 0:
                del self._counts[id(bundle)]
                retired = self._retired.pop(id(bundle), None)
                if retired is not None:
                    retired.close()

    def retire(self, bundle: OpenedBundle) -> None:
        """Close ``bundle`` now if unused, else when its last lease ends (call with :attr:`lock` held)."""
        if self._counts.get(id(bundle)):
            self._retired[id(bundle)] = bundle
        else:
            bundle.close()

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


__all__ = ["BundleCache", "BundleIndex", "InvalidAtError", "Leases", "check_at", "resolve_at"]
