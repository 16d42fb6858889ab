"""The bundle store: layout, writer lock, atomic publish, and the ``CURRENT``/``PINNED`` pointers.

Layout::

    <store>/
        bundles/<commit-sha>.<config-fp8>/   immutable, read-only after publish
        staging/<random>/                    bundles being built (same filesystem as bundles/)
        CURRENT                              bundle id served by default (one line)
        PINNED                               present while CURRENT is pinned
        .lock                                writer lock (fcntl.flock)

Invariants: a directory under ``bundles/`` is complete and verified, because it only appears
there by ``os.rename`` of a fully written, fsynced and verified staging directory.  ``CURRENT``
is replaced with ``os.replace`` of a temporary file, so readers see the old or the new id,
never a partial one.  A crash leaves at worst a stale ``staging/`` directory, which the next
writer removes while holding the lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import (
    ArtifactError,
    BundleIntegrityError,
    BundleNotFoundError,
    InvalidRevisionError,
    StoreLockedError,
    StoreWriteError,
    UnknownRevisionError,
)
from .hashing import combine_digests, digest_lines, hash_bundle_files
from .layout import CHUNKS_FILE, DOCS_FILE, GRAPH_DIR
from .manifest import MANIFEST_NAME, Manifest, read_manifest

BUNDLES = "bundles"
STAGING = "staging"
CURRENT = "CURRENT"
PINNED = "PINNED"
LOCK = ".lock"


LEXICAL_SUFFIX = "-lexical"
"""Suffix of the id of a bundle published before its vectors (``Manifest.stage == "lexical"``, feature 4)."""


def make_bundle_id(commit: str, config_fingerprint: str, *, lexical: bool = False) -> str:
    """Return the bundle id ``<commit-sha>.<first 8 hex of the config fingerprint>``.

    ``lexical``: the id of the same commit and configuration's bundle published before its vectors,
    ``<commit-sha>.<fp8>-lexical``.  It never ends in ``.<fp8>``, so it is never an incremental
    base (:func:`indexer.incremental.find_base_bundle` matches that ending).
    """
    return f"{commit}.{config_fingerprint[:8]}" + (LEXICAL_SUFFIX if lexical else "")


_BUNDLE_ID = re.compile(r"[0-9a-f]{40,64}\.[0-9a-f]{8}(?:" + re.escape(LEXICAL_SUFFIX) + ")?")


def is_bundle_id(value: str) -> bool:
    """Whether ``value`` has the shape of a :func:`make_bundle_id` id (``<commit hex>.<8 hex>[-lexical]``).

    Names read from elsewhere (a remote listing, a remote ``CURRENT``) are checked with it before
    they become local paths.
    """
    return _BUNDLE_ID.fullmatch(value) is not None


@dataclass(frozen=True)
class BundleInfo:
    """A published bundle as listed by :meth:`Store.list_bundles`."""

    bundle_id: str
    path: Path
    manifest: Manifest


class Store:
    """A directory of bundles.  Creating a :class:`Store` creates its folders if missing."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).resolve()
        self.bundles_dir = self.root / BUNDLES
        self.staging_dir = self.root / STAGING

    def ensure(self) -> Store:
        """Create the store folders if missing and return ``self``."""
        self.bundles_dir.mkdir(parents=True, exist_ok=True)
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        return self

    # -- writer side -------------------------------------------------------------------------

    @contextlib.contextmanager
    def writer_lock(self, wait: bool = False, timeout: float = 0.0) -> Iterator[None]:
        """Hold the store's exclusive writer lock for the ``with`` block.

        With ``wait`` false, raise :class:`StoreLockedError` at once if another process holds it;
        with ``wait`` true, poll for up to ``timeout`` seconds (0 = forever).
        """
        self.ensure()
        handle = open(self.root / LOCK, "a+")  # noqa: SIM115 - closed in finally
        try:
            deadline = time.monotonic() + timeout if timeout else None
            while True:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not wait or (deadline is not None and time.monotonic() > deadline):
                        raise StoreLockedError(
                            "another gitrag process (a build, `use` or `pin`) holds the store lock; "
                            "try again later, or pass --wait to `gitrag build` to wait for it"
                        ) from None
                    time.sleep(0.2)
            yield
        finally:
            handle.close()  # closing releases the flock

    def writer_busy(self) -> bool:
        """Whether another process holds the writer lock now (a build, ``use`` or ``pin`` running)."""
        path = self.root / LOCK
        if not path.exists():
            return False
        try:
            with open(path, "a+") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        return False

    def clean_staging(self) -> list[str]:
        """Remove every staging directory (call only while holding the writer lock).

        Returns the names removed.  They are leftovers of builds that crashed or were killed.
        """
        removed = []
        if self.staging_dir.exists():
            for child in sorted(self.staging_dir.iterdir()):
                _make_writable(child)
                shutil.rmtree(child, ignore_errors=True)
                removed.append(child.name)
        return removed

    def new_staging(self) -> Path:
        """Create and return a fresh, empty staging directory."""
        self.ensure()
        path = self.staging_dir / secrets.token_hex(8)
        path.mkdir()
        return path

    def publish(self, staging: Path, manifest: Manifest, before_rename: Callable[[], None] | None = None) -> Path:
        """Seal a staging directory as the bundle ``manifest.bundle_id`` and return its final path.

        Hashes every file into ``manifest.files``, writes ``manifest.json``, fsyncs, re-verifies,
        renames into ``bundles/`` and makes the tree read-only.  If a bundle with that id already
        exists (same commit and config), the staging directory is discarded and the existing
        bundle is returned: bundles are immutable.  ``before_rename`` is called after verification,
        just before the rename (crash tests).  Raises :class:`BundleIntegrityError` when the written
        files fail verification.
        """
        final = self.bundles_dir / manifest.bundle_id
        if final.exists():
            _make_writable(staging)
            shutil.rmtree(staging, ignore_errors=True)
            return final
        manifest.files = hash_bundle_files(staging)
        (staging / MANIFEST_NAME).write_text(manifest.to_json(), encoding="utf-8")
        _fsync_tree(staging)
        verify_bundle(staging)
        if before_rename is not None:
            before_rename()
        os.rename(staging, final)
        _fsync_dir(self.bundles_dir)
        _make_read_only(final)
        return final

    # -- pointers ----------------------------------------------------------------------------

    def set_current(self, bundle_id: str) -> None:
        """Point ``CURRENT`` at a published bundle atomically.

        Raises :class:`BundleNotFoundError` if no such bundle is published.
        """
        if not (self.bundles_dir / bundle_id / MANIFEST_NAME).is_file():
            raise BundleNotFoundError(f"no published bundle {bundle_id}")
        _atomic_write(self.root / CURRENT, bundle_id + "\n")

    def current_id(self) -> str | None:
        """Return the bundle id in ``CURRENT``, or ``None`` when there is none."""
        try:
            value = (self.root / CURRENT).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        return value or None

    def is_pinned(self) -> bool:
        """True while ``PINNED`` exists: new builds then do not move ``CURRENT``."""
        return (self.root / PINNED).exists()

    # -- reader side -------------------------------------------------------------------------

    def bundle_path(self, bundle_id: str) -> Path:
        """Return the directory of a published bundle; raises :class:`BundleNotFoundError`."""
        if "/" in bundle_id or bundle_id.startswith("."):
            raise BundleNotFoundError("invalid bundle id")
        path = self.bundles_dir / bundle_id
        if not (path / MANIFEST_NAME).is_file():
            raise BundleNotFoundError(f"no published bundle {bundle_id}")
        return path

    def current_path(self) -> Path:
        """Return the directory of the ``CURRENT`` bundle; raises :class:`BundleNotFoundError`."""
        bundle_id = self.current_id()
        if bundle_id is None:
            if self.writer_busy():
                raise BundleNotFoundError("the store has no CURRENT bundle yet: a build is running now "
                                          "(see `gitrag jobs` or the build's progress)")
            raise BundleNotFoundError("the store has no CURRENT bundle; run `gitrag build` first")
        return self.bundle_path(bundle_id)

    def list_bundles(self) -> list[BundleInfo]:
        """Return every published bundle with a readable manifest, newest commit time first."""
        infos = []
        if self.bundles_dir.exists():
            for child in self.bundles_dir.iterdir():
                try:
                    infos.append(BundleInfo(child.name, child, read_manifest(child)))
                except Exception:  # noqa: BLE001 - a broken bundle is listed by verify, not here
                    continue
        # Newest commit first; bundles of commits with equal times by publish time, newest first.
        infos.sort(key=lambda b: (-b.manifest.commit_time, -b.path.stat().st_mtime_ns, b.bundle_id))
        return infos

    def unreadable_bundles(self) -> list[str]:
        """Return the names of directories under ``bundles/`` whose manifest cannot be read."""
        names = []
        if self.bundles_dir.exists():
            for child in sorted(self.bundles_dir.iterdir()):
                try:
                    read_manifest(child)
                except Exception:  # noqa: BLE001 - any failure makes it unreadable
                    names.append(child.name)
        return names

    def find_bundles_for_commit(self, commit: str) -> list[BundleInfo]:
        """Return the published bundles whose commit sha starts with ``commit`` (hex prefix)."""
        return [b for b in self.list_bundles() if b.manifest.commit.startswith(commit.lower())]


def verify_bundle(bundle_dir: Path, *, records: bool = True) -> Manifest:
    """Re-hash every file of a bundle against its manifest and return the manifest.

    ``records``: also check the records against the manifest's counts and digests and every chunk
    against its sha256 (``gitrag verify``, publish); opening a bundle to serve it checks file hashes
    only, which already catch any changed byte.
    An extra empty ``graph/*.wal`` (a write-ahead log the graph engine may leave, with nothing to
    replay) is not a problem; a non-empty one is (it could change what the graph reads).
    Raises :class:`BundleIntegrityError` listing every missing, extra or changed file, and
    :class:`~artifacts.errors.FormatVersionError` for an unreadable format.
    """
    manifest = read_manifest(bundle_dir)
    expected = {f.path: f for f in manifest.files}
    actual = {f.path: f for f in hash_bundle_files(Path(bundle_dir))}
    problems = []
    for path in sorted(expected.keys() | actual.keys()):
        want, have = expected.get(path), actual.get(path)
        if have is None:
            problems.append(f"{path}: missing")
        elif want is None:
            if _is_graph_wal(path) and have.size == 0:
                continue  # an empty write-ahead log left beside the graph database: nothing to replay
            problems.append(f"{path}: not in manifest")
        elif (want.sha256, want.size) != (have.sha256, have.size):
            problems.append(f"{path}: sha256/size mismatch")
    if records and not problems and {DOCS_FILE, CHUNKS_FILE} <= expected.keys():
        problems = _check_records(Path(bundle_dir), manifest)
    if problems:
        raise BundleIntegrityError(f"bundle {manifest.bundle_id} fails verification", problems)
    return manifest


def _is_graph_wal(path: str) -> bool:
    """``graph/<name>.wal``: the graph engine's write-ahead log, which an interrupted writable open may
    leave; the published database never needs one (its writer checkpoints and checks that none remains)."""
    return path.startswith(GRAPH_DIR + "/") and path.endswith(".wal") and path.count("/") == 1


def verify_in_background(bundle_dir: Path) -> Future[Manifest]:
    """Start :func:`verify_bundle` (file hashes only) in a daemon thread; return its future (manifest or error).

    hashlib and file reads release the GIL, so hundreds of MB are hashed on another core while the
    caller imports and reads the rest; whoever uses the bundle waits for the result first.
    """
    verified: Future[Manifest] = Future()

    def check() -> None:
        try:
            verified.set_result(verify_bundle(bundle_dir, records=False))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the result
            verified.set_exception(exc)

    threading.Thread(target=check, name="gitrag-verify-bundle", daemon=True).start()
    return verified


def _check_records(bundle_dir: Path, manifest: Manifest) -> list[str]:
    """Check the records against the manifest's counts and logical digests, and each chunk's sha256.

    Catches a manifest edited together with its file hashes (counts or digests no longer match)
    and a chunk whose text no longer matches its recorded hash.
    """
    import hashlib
    import json

    problems = []
    docs, chunks = [], []
    with open(bundle_dir / DOCS_FILE, encoding="utf-8") as handle:
        docs = [json.loads(line) for line in handle if line.strip()]
    with open(bundle_dir / CHUNKS_FILE, encoding="utf-8") as handle:
        chunks = [json.loads(line) for line in handle if line.strip()]
    if len(docs) != manifest.counts.documents:
        problems.append(f"{DOCS_FILE}: {len(docs)} documents, manifest counts {manifest.counts.documents}")
    if len(chunks) != manifest.counts.chunks:
        problems.append(f"{CHUNKS_FILE}: {len(chunks)} chunks, manifest counts {manifest.counts.chunks}")
    bad = [c["chunk_id"] for c in chunks if hashlib.sha256(c["text"].encode("utf-8")).hexdigest() != c["sha256"]]
    if bad:
        problems.append(f"{CHUNKS_FILE}: {len(bad)} chunk(s) whose text does not match its sha256, first {bad[0]}")
    expected = {
        "documents": digest_lines(f"{d['path']}\t{d['blob_id']}" for d in docs),
        "chunks": digest_lines(f"{c['chunk_id']}\t{c['sha256']}" for c in chunks),
    }
    for name, value in expected.items():
        if name in manifest.digests and manifest.digests[name] != value:
            problems.append(f"manifest.json: digests.{name} does not match the records")
    if manifest.digests and combine_digests(manifest.digests) != manifest.content_digest:
        problems.append("manifest.json: content_digest does not match digests")
    return problems


def _atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (temp file, fsync, ``os.replace``, fsync of the folder).

    On any failure the temporary file is removed and :class:`StoreWriteError` is raised with a
    one-line reason (``no space left on device``...); ``path`` keeps its old content.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StoreWriteError(f"cannot write {path.name}: {_os_reason(exc)}") from exc
    with contextlib.suppress(OSError):  # the new content is in place; a failed directory fsync only weakens durability
        _fsync_dir(path.parent)


LOW_SPACE_BYTES = 1024 * 1024
"""Free bytes below which a failed write is reported as a full disk (see :func:`out_of_space`)."""


def out_of_space(exc: BaseException, path: Path | str) -> str | None:
    """Return a one-line reason (``no space left on device ...``) if ``exc`` was caused by a full disk, else ``None``.

    True when an :class:`OSError` with ``ENOSPC``/``EDQUOT`` is in ``exc``'s cause chain, or when the
    filesystem holding ``path`` has less than :data:`LOW_SPACE_BYTES` free: engines such as the graph
    database report a full disk as a failed read or checkpoint, without the errno.  Call it before
    removing what the failed write left behind.
    """
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return _os_reason(seen)
        seen = seen.__cause__ or seen.__context__
    try:
        free = shutil.disk_usage(path).free
    except OSError:
        return None
    if free < LOW_SPACE_BYTES:
        return f"no space left on device ({free / 1e6:.1f} MB free on the store's filesystem)"
    return None


def _os_reason(exc: OSError) -> str:
    """A one-line, path-free reason for an OS error (``no space left on device``...)."""
    if exc.errno == errno.ENOSPC:
        return "no space left on device"
    if exc.errno == errno.EDQUOT:
        return "disk quota exceeded"
    return (exc.strerror or type(exc).__name__).lower()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(dirpath))


def _make_read_only(root: Path) -> None:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            os.chmod(os.path.join(dirpath, name), stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    for dirpath, _dirs, _files in os.walk(root, topdown=False):
        os.chmod(dirpath, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)


def _make_writable(root: Path) -> None:
    if not root.exists():
        return
    os.chmod(root, stat.S_IRWXU)
    for dirpath, dirs, files in os.walk(root):
        for name in dirs:
            os.chmod(os.path.join(dirpath, name), stat.S_IRWXU)
        for name in files:
            os.chmod(os.path.join(dirpath, name), stat.S_IRUSR | stat.S_IWUSR)


def pin(store: Store) -> str:
    """Create ``PINNED``: new builds then do not move ``CURRENT`` (rollback holds).

    Returns the pinned bundle id.  Raises :class:`BundleNotFoundError` when there is no ``CURRENT``.
    """
    current = store.current_id()
    if current is None:
        raise BundleNotFoundError("the store has no CURRENT bundle to pin")
    _atomic_write(store.root / PINNED, current + "\n")
    return current


def unpin(store: Store) -> None:
    """Remove ``PINNED`` (idempotent)."""
    try:
        (store.root / PINNED).unlink()
    except FileNotFoundError:
        pass


MAX_REVISION_CHARS = 200
_HEX_PREFIX = re.compile(r"[0-9a-fA-F]{4,40}")
_REVISION = re.compile(r"(?P<base>[A-Za-z0-9_][A-Za-z0-9._/-]*)(?P<ops>(?:~[0-9]{0,6}|\^[0-9]?)*)")


def check_revision(rev: object) -> str:
    """Return ``rev`` if it is a revision gitrag accepts, else raise :class:`InvalidRevisionError`.

    Accepted (whole string, :func:`re.fullmatch`): a bundle id, a full or short commit id, a branch or
    tag name (``refs/...`` too), each optionally followed by ``~N`` and ``^`` / ``^N`` steps
    (``main~2``, ``v1^``, ``HEAD~20``); at most 200 characters.  Refused: anything Git would read
    as a path, a range or a reflog (``:``, ``..``, ``@{``), a leading ``-`` or ``/``, whitespace and
    control characters, and ref names Git itself forbids (``//``, ``/.``, a trailing ``/``, ``.``
    or ``.lock``).  The same rule serves ``gitrag use``/``verify``/``diff`` and HTTP ``at``.
    """
    if not isinstance(rev, str) or not rev or len(rev) > MAX_REVISION_CHARS:
        raise InvalidRevisionError("invalid revision: a revision is a non-empty string of at most 200 characters")
    match = _REVISION.fullmatch(rev)
    base = match.group("base") if match else ""
    if (match is None or ".." in base or "//" in base or "/." in base
            or base.endswith(("/", ".", ".lock"))):
        raise InvalidRevisionError(f"invalid revision: {rev[:60]!r} is not a commit id, branch, tag, REV~N or REV^")
    return rev


def resolve_bundle_ref(store: Store, ref: str, repo_path: Path | str | None = None, *,
                       bundles: list[BundleInfo] | None = None, prefer: Manifest | None = None) -> BundleInfo:
    """Resolve a revision (see :func:`check_revision`) to a published bundle: the one resolver.

    Order: an exact bundle id; a hex prefix (4..40) of exactly one published commit; otherwise the
    revision resolved with pygit2 (``revparse``: branch, tag, ``REV~N``, ``REV^``, sha) in
    ``repo_path`` when given, else in the source repositories of the store's bundles (the reference
    bundle's first).  Bundles may come from several repositories (a first build from a working
    clone, later ones from the hook's bare repository), where a branch name can point at different
    commits: then the commit that descends from all the others wins (the branch moved forward),
    and if there is none the revision is ambiguous (:class:`BundleNotFoundError` naming the
    repositories; pass ``repo_path``).
    The reference bundle ``prefer`` (default: ``CURRENT``'s) also decides between bundles of one
    commit built with different configurations (its fingerprint wins, then the newest).
    ``bundles`` is the list to search (default: :meth:`Store.list_bundles`).

    Raises :class:`InvalidRevisionError` (malformed), :class:`UnknownRevisionError` (names no
    commit), :class:`BundleNotFoundError` (a commit without a bundle, or an ambiguous prefix) and
    :class:`BundleIntegrityError` when the match is a bundle directory whose manifest is unreadable
    (truncated or corrupt: reported as such, not as "no bundle").
    """
    ref = check_revision(ref)
    bundles = store.list_bundles() if bundles is None else bundles
    for info in bundles:
        if info.bundle_id == ref:
            return info
    if prefer is None:
        prefer = _current_manifest(store)
    commit = None
    if _HEX_PREFIX.fullmatch(ref):
        commits = {b.manifest.commit for b in bundles if b.manifest.commit.startswith(ref.lower())}
        if len(commits) > 1:
            raise BundleNotFoundError(f"commit prefix {ref} is ambiguous")
        commit = next(iter(commits), None)
    sources = [prefer.source.repo] if prefer is not None else []
    sources = list(dict.fromkeys(sources + [b.manifest.source.repo for b in bundles]))
    if commit is None and repo_path is not None:
        commit = resolve_revision(repo_path, ref)
    if commit is None:
        commit = _resolve_in_sources(sources, ref)
    if commit is None:
        _raise_if_unreadable(store, ref, bundles)
        raise UnknownRevisionError(f"unknown revision {ref}")
    matches = [b for b in bundles if b.manifest.commit == commit]
    if not matches:
        _raise_if_unreadable(store, commit, bundles)
        raise BundleNotFoundError(f"no bundle for commit {commit[:12]} (build it: "
                                  f"{_build_command(store, commit, repo_path, sources)})", commit=commit)
    suffix = prefer.config_fingerprint[:8] if prefer is not None else None
    # The reference's configuration first, a complete bundle before the lexical one of the same
    # commit (published before its vectors); stable: newest first otherwise.
    return sorted(matches, key=lambda b: (b.manifest.config_fingerprint[:8] != suffix,
                                          b.manifest.stage == "lexical"))[0]


def _build_command(store: Store, commit: str, repo_path: Path | str | None, sources: list[str]) -> str:
    """The ``gitrag build`` command line that builds ``commit`` into ``store``, ready to paste.

    The repository is the one the user named, else the first bundle source (CURRENT's first)
    that holds the commit; paths are shell-quoted.
    """
    import shlex

    repo = str(repo_path) if repo_path is not None else \
        next((source for source in sources if resolve_revision(source, commit) is not None), None)
    where = f"--repo {shlex.quote(repo)} " if repo else ""
    return f"gitrag build {where}--store {shlex.quote(str(store.root))} --rev {commit[:12]}"


def _resolve_in_sources(sources: list[str], ref: str) -> str | None:
    """Resolve ``ref`` in every repository of ``sources`` (see :func:`resolve_bundle_ref` for the rule)."""
    import pygit2

    found = {source: commit for source in sources if (commit := resolve_revision(source, ref)) is not None}
    commits = list(dict.fromkeys(found.values()))
    if len(commits) <= 1:
        return commits[0] if commits else None
    for candidate in commits:
        if all(_descends(sources, candidate, other, pygit2) for other in commits if other != candidate):
            return candidate
    named = "; ".join(f"{commit[:12]} in {source}" for source, commit in found.items())
    raise BundleNotFoundError(f"revision {ref} is ambiguous: {named}; name the repository (--repo) or a commit")


def _descends(sources: list[str], commit: str, other: str, pygit2: Any) -> bool:
    """Whether ``commit`` descends from ``other`` in some repository of ``sources`` that holds both."""
    for source in sources:
        try:
            repo = pygit2.Repository(source)
            if repo.descendant_of(commit, other):
                return True
        except (KeyError, ValueError, pygit2.GitError):
            continue
    return False


def _current_manifest(store: Store) -> Manifest | None:
    try:
        return read_manifest(store.current_path())
    except ArtifactError:
        return None


def _raise_if_unreadable(store: Store, ref: str, known: list[BundleInfo]) -> None:
    """Raise :class:`BundleIntegrityError` when ``ref`` names (or is the commit of) an unreadable bundle.

    Only directories missing from ``known`` (the readable bundles) are read, so an unknown revision
    costs a directory listing, not a read of every manifest.
    """
    try:
        names = sorted(p.name for p in store.bundles_dir.iterdir())
    except OSError:
        return
    readable = {b.bundle_id for b in known}
    for name in names:
        if name in readable:
            continue
        if name == ref or (_HEX_PREFIX.fullmatch(ref) and name.startswith(ref.lower())):
            try:
                read_manifest(store.bundles_dir / name)
            except BundleIntegrityError as exc:
                raise BundleIntegrityError(f"bundle {name} is corrupt: {exc}", exc.problems) from exc
            except ArtifactError as exc:
                raise BundleIntegrityError(f"bundle {name} is unreadable: {exc}", [str(exc)]) from exc


def resolve_revision(repo_path: Path | str, rev: str) -> str | None:
    """Return the full commit sha ``rev`` names in the Git repository at ``repo_path``, or ``None``.

    Accepts shas, short shas, branches, tags and expressions like ``main~2`` (call
    :func:`check_revision` first: this function only refuses what could read a path or an option).
    """
    import pygit2

    if not rev or rev.startswith("-") or "\x00" in rev or ":" in rev:
        return None
    try:
        repo = pygit2.Repository(str(repo_path))
        return str(repo.revparse_single(rev).peel(pygit2.Commit).id)
    except (KeyError, ValueError, TypeError, pygit2.GitError, pygit2.InvalidSpecError):
        return None


def use_bundle(store: Store, ref: str, repo_path: Path | str | None = None, *,
               bundles: list[BundleInfo] | None = None, prefer: Manifest | None = None,
               lock_timeout: float = 60.0) -> BundleInfo:
    """Point ``CURRENT`` at the bundle of ``ref`` after verifying it: ``gitrag use`` and ``POST /admin/use``.

    Resolves with :func:`resolve_bundle_ref`, re-hashes the bundle once (:func:`verify_bundle_once`:
    a second switch to the same unchanged bundle is fast), then takes the store's writer lock
    (waiting up to ``lock_timeout`` seconds) and replaces ``CURRENT``.
    A bundle that fails verification never becomes ``CURRENT``.  Returns the bundle.

    Raises what :func:`resolve_bundle_ref` raises, :class:`BundleIntegrityError` (verification),
    :class:`StoreLockedError` (lock not obtained in time) and :class:`StoreWriteError` (e.g. disk full).
    """
    info = resolve_bundle_ref(store, ref, repo_path, bundles=bundles, prefer=prefer)
    verify_bundle_once(store, info.bundle_id)
    with store.writer_lock(wait=True, timeout=lock_timeout):
        store.set_current(info.bundle_id)
    return info


def fallback_candidates(store: Store, broken: str | None) -> list[BundleInfo]:
    """Bundles to serve instead of ``broken`` (the ``CURRENT`` that fails), best first.

    The bundles older than ``broken`` (in :meth:`Store.list_bundles` order: commit time, then publish
    time), newest first, so that a rollback is never undone by a newer bundle; ``broken`` itself and
    bundles with an unreadable manifest are left out.  With ``broken`` unknown (its manifest cannot be
    read) every bundle is a candidate, newest first.
    """
    bundles = store.list_bundles()
    ids = [b.bundle_id for b in bundles]
    older = bundles[ids.index(broken) + 1:] if broken in ids else bundles
    return [b for b in older if b.bundle_id != broken]


def newest_verified(store: Store, broken: str | None, *, records: bool = False) -> tuple[BundleInfo | None, list[str]]:
    """Return ``(the first of fallback_candidates(store, broken) that verifies, or None; why others failed)``.

    Each candidate's files are re-hashed (:func:`verify_bundle`; with ``records`` its records too);
    the second item lists ``"<bundle id>: <problem>"`` for each candidate that failed, in order.
    """
    failed: list[str] = []
    for info in fallback_candidates(store, broken):
        try:
            verify_bundle(info.path, records=records)
        except BundleIntegrityError as exc:
            failed.append(f"{info.bundle_id}: {'; '.join(exc.problems[:3]) or exc}")
            continue
        except (ArtifactError, OSError) as exc:
            failed.append(f"{info.bundle_id}: {type(exc).__name__}")
            continue
        return info, failed
    return None, failed


def repair_current(store: Store, *, lock_timeout: float = 60.0) -> dict[str, Any]:
    """``gitrag verify --repair-current``: move ``CURRENT`` to the newest older bundle that verifies when it fails.

    Verifies ``CURRENT`` (files and records); if it passes nothing changes.  Otherwise takes the
    writer lock (waiting up to ``lock_timeout`` seconds), re-reads ``CURRENT`` (a build may have
    moved it) and points it at :func:`newest_verified` (records checked too).  A pinned store stays
    pinned to the new bundle's id only if ``PINNED`` named the broken one (it is rewritten).
    Returns ``{"ok", "current", "was", "problems", "repaired", "skipped"}``: ``ok`` whether ``CURRENT``
    verifies now, ``was`` the broken id (or ``None``), ``problems`` why it failed, ``skipped`` the
    candidates that failed too.  Raises :class:`StoreLockedError` (lock not obtained in time) and
    :class:`StoreWriteError`.
    """
    def problems_of(bundle_id: str | None) -> list[str]:
        if bundle_id is None:
            return ["the store has no CURRENT bundle"]
        try:
            verify_bundle(store.bundle_path(bundle_id))
        except BundleIntegrityError as exc:
            return exc.problems or [str(exc)]
        except (ArtifactError, OSError) as exc:
            return [f"{type(exc).__name__}"]
        return []

    current = store.current_id()
    problems = problems_of(current)
    if not problems:
        return {"ok": True, "current": current, "was": None, "problems": [], "repaired": False, "skipped": []}
    with store.writer_lock(wait=True, timeout=lock_timeout):
        if store.current_id() != current:  # moved meanwhile: judge the new one
            current = store.current_id()
            problems = problems_of(current)
            if not problems:
                return {"ok": True, "current": current, "was": None, "problems": [], "repaired": False,
                        "skipped": []}
        found, skipped = newest_verified(store, current, records=True)
        if found is None:
            return {"ok": False, "current": current, "was": current, "problems": problems, "repaired": False,
                    "skipped": skipped}
        pinned = store.is_pinned()
        store.set_current(found.bundle_id)
        if pinned:
            _atomic_write(store.root / PINNED, found.bundle_id + "\n")
    return {"ok": True, "current": found.bundle_id, "was": current, "problems": problems, "repaired": True,
            "skipped": skipped}


VERIFIED = "verified"
"""``<store>/verified/<bundle id>``: the stamp of the bundle's last passed verification (:func:`verify_bundle_once`)."""


def _bundle_stamp(bundle_dir: Path) -> str:
    """A digest of the manifest's bytes and every file's path, size and modification time (no file is read)."""
    import hashlib

    digest = hashlib.sha256((bundle_dir / MANIFEST_NAME).read_bytes())
    for path in sorted(p for p in bundle_dir.rglob("*") if p.is_file()):
        info = path.stat()
        digest.update(f"{path.relative_to(bundle_dir).as_posix()}\t{info.st_size}\t{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def verify_bundle_once(store: Store, bundle_id: str) -> Manifest:
    """:func:`verify_bundle` (files and records) unless this bundle passed it before and is unchanged since.

    A bundle is immutable, so a pass is remembered in ``<store>/verified/<bundle id>`` with a stamp
    of its manifest and of every file's size and modification time (:func:`_bundle_stamp`); a file
    written, added or removed since changes the stamp and the bundle is hashed again.  The stamp is
    best effort: a read-only store just verifies every time.  Raises what :func:`verify_bundle` raises.
    """
    path = store.bundle_path(bundle_id)
    marker = store.root / VERIFIED / bundle_id
    stamp = _bundle_stamp(path)
    with contextlib.suppress(OSError):
        if marker.read_text(encoding="utf-8").strip() == stamp:
            return read_manifest(path)
    manifest = verify_bundle(path)
    with contextlib.suppress(OSError, StoreWriteError):
        marker.parent.mkdir(exist_ok=True)
        _atomic_write(marker, stamp + "\n")
    return manifest


def gc_bundles(store: Store, keep: int) -> list[str]:
    """Delete all but the ``keep`` newest bundles (by commit time), never ``CURRENT`` or ``PINNED``.

    Also removes stale staging directories.  Call while holding the writer lock.
    Returns the deleted bundle ids.
    """
    protected = {store.current_id()}
    try:
        protected.add((store.root / PINNED).read_text(encoding="utf-8").strip() or None)
    except FileNotFoundError:
        pass
    bundles = store.list_bundles()
    doomed = [b for b in bundles[max(keep, 0):] if b.bundle_id not in protected]
    for info in doomed:
        _make_writable(info.path)
        shutil.rmtree(info.path)
        with contextlib.suppress(OSError):
            (store.root / VERIFIED / info.bundle_id).unlink()
    store.clean_staging()
    return [b.bundle_id for b in doomed]
