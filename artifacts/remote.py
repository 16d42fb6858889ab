"""Bundles in S3-compatible object storage: publish from a store, fetch into a replica's cache store.

Remote layout under ``s3://BUCKET/PREFIX/``::

    blobs/sha256/<hex>               a bundle file's bytes, keyed by their sha256 (immutable, shared
                                     by every bundle that holds the same bytes)
    bundles/<bundle-id>/manifest.json  the bundle's manifest (immutable): path, sha256, size of each file
    CURRENT                          the served bundle id (one line): the only object ever overwritten

Invariants, the same as the local store's (:mod:`artifacts.store`):

* A publisher uploads every blob of a bundle, then its manifest, and replaces ``CURRENT`` last, so a
  reader that follows ``CURRENT`` never meets a manifest whose blobs are not all there, and a
  publish that fails or is killed at any point leaves ``CURRENT`` where it was.
* Content addressing makes uploads incremental: a file whose sha256 is already stored (the
  unchanged parts of the parent bundle, any earlier bundle) is not uploaded again.
* A reader trusts nothing it downloads: :func:`download_bundle` writes into the cache store's
  ``staging/``, re-hashes every file against the manifest (:func:`~artifacts.store.verify_bundle`)
  and only then renames the directory into ``bundles/``; a bundle that fails is deleted, never
  served.

One writer per repository (as locally): two publishers racing on one prefix may reorder
``CURRENT``; nothing else breaks, since blobs and manifests are immutable.

The client is boto3 (the maintained AWS SDK; installed with the ``s3`` extra): credentials come
from the standard AWS chain (environment, ``~/.aws`` files, instance or container roles) and are
never read, printed or logged here.  ``endpoint_url`` points at any S3-compatible server (MinIO,
Cloudflare R2, Ceph RGW, moto); ``path_style`` forces ``https://host/bucket/key`` addressing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .errors import BundleIntegrityError, BundleNotFoundError, RemoteCurrentError, RemoteStoreError
from .manifest import MANIFEST_NAME, Manifest, read_manifest
from .redact import redact, remember_secret, safe_url, split_userinfo
from .store import (
    LEXICAL_SUFFIX,
    Store,
    _descends,
    _fsync_tree,
    _make_read_only,
    _make_writable,
    is_bundle_id,
    verify_bundle,
)

log = logging.getLogger("gitrag.remote")

BLOBS = "blobs/sha256/"
BUNDLES = "bundles/"
CURRENT = "CURRENT"
PARALLEL_GETS = 4
"""Bundle files downloaded at once."""
MULTIPART_BYTES = 64 * 1024 * 1024
"""Files at least this large (bytes) are uploaded and downloaded in parts of this size, in parallel."""


def parse_s3_url(url: str) -> tuple[str, str]:
    """Split ``s3://BUCKET[/PREFIX]`` into ``(bucket, prefix)``; the prefix is ``""`` or ends with ``/``.

    Raises :class:`RemoteStoreError` for another scheme or a missing bucket.
    """
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
        raise RemoteStoreError(f"not an s3://BUCKET/PREFIX address: {redact(url[:80])!r}")
    if "@" in parts.netloc or ":" in parts.netloc:
        # credentials come from the AWS chain only; a bucket name holds neither character
        raise RemoteStoreError(f"not an s3://BUCKET/PREFIX address (no user info or port): {redact(url[:80])!r}")
    prefix = parts.path.strip("/")
    return parts.netloc, prefix + "/" if prefix else ""


def safe_endpoint(endpoint_url: str | None) -> str | None:
    """``endpoint_url`` without any user info (``https://key:secret@host:9000`` -> ``https://host:9000``),
    for display; never raises (:func:`artifacts.redact.safe_url`)."""
    return safe_url(endpoint_url)


def check_endpoint(endpoint_url: str | None) -> str | None:
    """Return ``endpoint_url`` ready for the SDK: user info taken off (and masked in every log), shape checked.

    S3 requests are signed with the AWS credential chain, so user info in an endpoint URL has no
    use; it is removed before the SDK sees it (its error messages quote the endpoint) and
    remembered by :func:`artifacts.redact.remember_secret`.  Raises :class:`RemoteStoreError` for
    a URL that is not ``http(s)://HOST[:PORT][/PATH]`` (checked here, once, not at every request).
    """
    if not endpoint_url:
        return None
    bare, userinfo = split_userinfo(endpoint_url.strip())
    remember_secret(userinfo)
    if userinfo is not None:
        log.warning("the user info of the endpoint URL is ignored: S3 requests are signed with the AWS "
                    "credential chain", extra={"event": "endpoint_userinfo_ignored", "endpoint": safe_url(bare)})
    try:
        parts = urlsplit(bare)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc \
            or any(c.isspace() for c in bare) or (port is not None and not 0 < port < 65536):
        raise RemoteStoreError(f"not an http(s)://HOST[:PORT] endpoint URL: {safe_url(bare)!r}")
    return bare


@dataclass(frozen=True)
class CurrentPointer:
    """The remote ``CURRENT``: the bundle id it names and the object's ETag (for conditional GETs)."""

    bundle_id: str
    etag: str


NOT_MODIFIED = CurrentPointer("", "")
"""Returned by :meth:`RemoteStore.read_current` when ``CURRENT`` still has the ETag the caller gave."""


class RemoteStore:
    """A bundle store in an S3 bucket under a prefix (see the module docstring for the layout).

    ``url``: ``s3://BUCKET/PREFIX``; ``endpoint_url``: an S3-compatible server (default:
    ``$AWS_ENDPOINT_URL_S3``, ``$AWS_ENDPOINT_URL``, else AWS);
    ``path_style``: path-style addressing (default: on when ``endpoint_url`` is given, since MinIO,
    Ceph RGW and most self-hosted servers need it); ``client``: a ready boto3 S3 client (tests).
    Thread-safe: boto3 clients are.  Raises :class:`RemoteStoreError` when boto3 is not installed.
    """

    def __init__(self, url: str, *, endpoint_url: str | None = None, path_style: bool | None = None,
                 region: str | None = None, client: Any = None) -> None:
        self.url = url.rstrip("/")
        self.bucket, self.prefix = parse_s3_url(url)
        # botocore reads the same variables itself; read here too so that path-style follows them
        self.endpoint_url = check_endpoint(endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3")
                                           or os.environ.get("AWS_ENDPOINT_URL"))
        self.client = client if client is not None else make_client(self.endpoint_url, path_style, region)

    def describe(self) -> dict[str, Any]:
        """What this remote is, safe to show (``/health``, logs): the URL and the endpoint without user info."""
        return {"url": self.url, "endpoint": safe_endpoint(self.endpoint_url)}

    def why(self, exc: BaseException) -> str:
        """One line saying why a call failed (:func:`failure_reason`, with this remote's bucket)."""
        return failure_reason(exc, self.bucket)

    # -- keys ----------------------------------------------------------------------------------

    def blob_key(self, sha256: str) -> str:
        return f"{self.prefix}{BLOBS}{sha256}"

    def manifest_key(self, bundle_id: str) -> str:
        return f"{self.prefix}{BUNDLES}{bundle_id}/{MANIFEST_NAME}"

    @property
    def current_key(self) -> str:
        return f"{self.prefix}{CURRENT}"

    # -- reads ---------------------------------------------------------------------------------

    def read_current(self, etag: str | None = None) -> CurrentPointer | None:
        """Read the remote ``CURRENT``: ``None`` when absent, :data:`NOT_MODIFIED` when its ETag is ``etag``.

        One conditional GET (``If-None-Match``): an unchanged pointer costs a 304 and no body.
        Raises :class:`RemoteStoreError` when the server cannot be reached or refuses.
        """
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": self.current_key}
        if etag:
            kwargs["IfNoneMatch"] = etag
        try:
            response = self.client.get_object(**kwargs)
        except Exception as exc:  # noqa: BLE001 - botocore's errors are classified below
            status = _status(exc)
            if status == 304:
                return NOT_MODIFIED
            if status == 404:
                return None
            raise RemoteStoreError(f"cannot read {self.url}/{CURRENT}: {self.why(exc)}") from exc
        value = response["Body"].read(256).decode("utf-8", "replace").strip()
        if not value:
            return None
        if not is_bundle_id(value):
            raise RemoteCurrentError(f"the remote CURRENT of {self.url} does not name a bundle id")
        return CurrentPointer(value, response.get("ETag", ""))

    def list_bundle_ids(self) -> list[str]:
        """Return the ids of every bundle with a manifest under the prefix, sorted.

        Raises :class:`RemoteStoreError`.
        """
        ids = []
        try:
            paginator = self.client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + BUNDLES, Delimiter="/"):
                for common in page.get("CommonPrefixes", []):
                    name = common["Prefix"][len(self.prefix + BUNDLES):].rstrip("/")
                    if is_bundle_id(name):  # anything else under bundles/ is not ours: ignored
                        ids.append(name)
        except Exception as exc:  # noqa: BLE001
            raise RemoteStoreError(f"cannot list {self.url}/{BUNDLES}: {self.why(exc)}") from exc
        return sorted(ids)

    def read_manifest_bytes(self, bundle_id: str) -> bytes | None:
        """Return the raw bytes of a bundle's remote manifest, or ``None`` when it has none.

        Raises :class:`RemoteStoreError`.
        """
        try:
            return bytes(self.client.get_object(Bucket=self.bucket, Key=self.manifest_key(bundle_id))["Body"].read())
        except Exception as exc:  # noqa: BLE001
            if _status(exc) == 404:
                return None
            raise RemoteStoreError(f"cannot read the manifest of {bundle_id}: {self.why(exc)}") from exc

    def manifest_etag(self, bundle_id: str) -> str | None:
        """Return the ETag of a bundle's remote manifest (one HEAD), or ``None`` when it has none.

        Raises :class:`RemoteStoreError`.
        """
        try:
            return str(self.client.head_object(Bucket=self.bucket, Key=self.manifest_key(bundle_id)).get("ETag", ""))
        except Exception as exc:  # noqa: BLE001
            if _status(exc) == 404:
                return None
            raise RemoteStoreError(f"cannot check the manifest of {bundle_id}: {self.why(exc)}") from exc

    def blob_size(self, sha256: str) -> int | None:
        """Return the stored size (bytes) of a blob, or ``None`` when it is not stored.

        Raises :class:`RemoteStoreError`.
        """
        try:
            return int(self.client.head_object(Bucket=self.bucket, Key=self.blob_key(sha256))["ContentLength"])
        except Exception as exc:  # noqa: BLE001
            if _status(exc) == 404:
                return None
            raise RemoteStoreError(f"cannot check blob {sha256[:12]}: {self.why(exc)}") from exc

    def blob_problems(self, manifest: Manifest) -> list[str]:
        """Check that every blob of ``manifest`` is stored with its size (one HEAD per distinct blob, in parallel).

        Returns one line per file whose blob is absent (``"<path>: missing from the remote store"``)
        or of another size (``"<path>: size N, expected M"``: keys are sha256 of the content, so
        a wrong size means corrupt); empty when complete.  The content itself is not read.
        Raises :class:`RemoteStoreError`.
        """
        distinct = list(dict.fromkeys(f.sha256 for f in manifest.files))
        with ThreadPoolExecutor(max_workers=PARALLEL_GETS * 2, thread_name_prefix="gitrag-head") as pool:
            sizes = dict(zip(distinct, pool.map(self.blob_size, distinct), strict=True))
        problems = []
        for entry in manifest.files:
            size = sizes[entry.sha256]
            if size is None:
                problems.append(f"{entry.path}: missing from the remote store")
            elif size != entry.size:
                problems.append(f"{entry.path}: size {size}, expected {entry.size}")
        return problems

    # -- writes --------------------------------------------------------------------------------

    def upload_blob(self, path: Path, sha256: str) -> None:
        """Upload a file as the blob ``sha256`` (multipart from :data:`MULTIPART_BYTES`).

        Raises :class:`RemoteStoreError`.
        """
        try:
            self.client.upload_file(str(path), self.bucket, self.blob_key(sha256), Config=_transfer_config(),
                                    ExtraArgs={"Metadata": {"sha256": sha256}})
        except Exception as exc:  # noqa: BLE001
            raise RemoteStoreError(f"upload of {path.name} failed: {self.why(exc)}") from exc

    def put_manifest(self, bundle_id: str, raw: bytes) -> None:
        """Store a bundle's manifest bytes.  Raises :class:`RemoteStoreError`."""
        self._put(self.manifest_key(bundle_id), raw, "application/json")

    def write_current(self, bundle_id: str) -> None:
        """Replace the remote ``CURRENT`` with ``bundle_id`` (one PUT: readers see the old or the new id).

        Call only after the bundle's blobs and manifest are stored (:func:`publish_store`,
        :func:`use_remote` check it).  Raises :class:`RemoteStoreError`.
        """
        self._put(self.current_key, (bundle_id + "\n").encode("utf-8"), "text/plain")

    def _put(self, key: str, raw: bytes, content_type: str) -> None:
        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=raw, ContentType=content_type)
        except Exception as exc:  # noqa: BLE001
            raise RemoteStoreError(f"cannot write {key[len(self.prefix):]}: {self.why(exc)}") from exc

    def download_blob(self, sha256: str, target: Path, size: int | None = None) -> None:
        """Download a blob to ``target`` (parallel ranged GETs from :data:`MULTIPART_BYTES`; ``size`` 0: no request).

        Raises :class:`~artifacts.errors.BundleIntegrityError` when the blob is not stored (a partial
        bundle) and :class:`RemoteStoreError`.
        """
        try:
            if size is not None and size < MULTIPART_BYTES:  # one GET (download_file adds a HEAD, ranges)
                body = self.client.get_object(Bucket=self.bucket, Key=self.blob_key(sha256))["Body"] if size else None
                with open(target, "wb") as handle:
                    for block in iter(lambda: body.read(1 << 20), b"") if body is not None else ():
                        handle.write(block)
            else:
                self.client.download_file(self.bucket, self.blob_key(sha256), str(target), Config=_transfer_config())
        except Exception as exc:  # noqa: BLE001
            if _status(exc) == 404:  # deleted since it was checked: the bundle is partial
                raise BundleIntegrityError(f"blob {sha256[:12]} is missing from the remote store",
                                           [f"{target.name}: missing from the remote store"]) from exc
            raise RemoteStoreError(f"download of {target.name} failed: {self.why(exc)}") from exc


def make_client(endpoint_url: str | None = None, path_style: bool | None = None, region: str | None = None) -> Any:
    """Return a boto3 S3 client with credentials from the standard AWS chain.

    With a custom ``endpoint_url`` the SDK's optional request/response checksums are only sent when
    an operation requires them: several S3-compatible servers reject the newer checksum headers, and
    every byte is checked against the manifest's sha256 anyway.  Raises :class:`RemoteStoreError`
    when boto3 is not installed (``pip install 'gitrag[s3]'``).
    """
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:
        raise RemoteStoreError("object storage needs boto3: pip install 'gitrag[s3]'") from exc
    options: dict[str, Any] = {"retries": {"max_attempts": 5, "mode": "standard"}, "connect_timeout": 10,
                               "read_timeout": 60}
    if path_style if path_style is not None else bool(endpoint_url):
        options["s3"] = {"addressing_style": "path"}
    if endpoint_url:
        options |= {"request_checksum_calculation": "when_required", "response_checksum_validation": "when_required"}
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    try:
        return boto3.session.Session().client("s3", endpoint_url=check_endpoint(endpoint_url), region_name=region,
                                              config=Config(**options))
    except RemoteStoreError:
        raise
    except Exception as exc:  # noqa: BLE001 - ProfileNotFound, an invalid region or endpoint...: one line
        raise RemoteStoreError(f"cannot set up the S3 client: {failure_reason(exc)}") from exc


def _transfer_config() -> Any:
    from boto3.s3.transfer import TransferConfig

    return TransferConfig(multipart_threshold=MULTIPART_BYTES, multipart_chunksize=MULTIPART_BYTES, max_concurrency=4)


def _status(exc: BaseException) -> int | None:
    """The HTTP status of a botocore ``ClientError`` (``304``, ``404``...), else ``None``."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    code = str(response.get("Error", {}).get("Code", ""))
    if code == "NoSuchBucket":
        return None  # not "no such key": a missing bucket is a configuration error, never "not published yet"
    if code in ("NoSuchKey", "NotFound", "404"):
        return 404
    if code in ("304", "NotModified"):
        return 304
    return int(status) if status else None


CREDENTIAL_CHAIN_HINT = ("the AWS credential chain: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), "
                         "AWS_PROFILE and ~/.aws/credentials, or an instance or container role")
_REFUSED_CREDENTIALS = frozenset({"SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied", "ExpiredToken",
                                  "InvalidToken", "TokenRefreshRequired", "AuthorizationHeaderMalformed",
                                  "InvalidClientTokenId", "403", "Forbidden"})


def failure_reason(exc: BaseException, bucket: str | None = None) -> str:
    """A one-line reason for a failed S3 call, never a secret: the S3 error code or the exception, plus a hint.

    A missing bucket is named (``NoSuchBucket``); credentials that are missing
    (``NoCredentialsError``, ``ProfileNotFound``...) or refused (``SignatureDoesNotMatch``,
    ``InvalidAccessKeyId``, ``AccessDenied``...) point at the AWS credential chain.  The text is
    redacted (:func:`artifacts.redact.redact`): botocore quotes endpoint URLs in some messages.
    """
    response = getattr(exc, "response", None)
    name = type(exc).__name__
    code = str(response.get("Error", {}).get("Code", "")) if isinstance(response, dict) else ""
    if code == "NoSuchBucket":
        return f"NoSuchBucket: the bucket {bucket or ''} does not exist (create it, or check the URL and endpoint)"
    if code in _REFUSED_CREDENTIALS:
        return f"{code} ({name}): the server refused the credentials; check which ones {CREDENTIAL_CHAIN_HINT} gives"
    if code:
        return f"{code} ({name})"
    if "Credential" in name or "Profile" in name or name in ("NoAuthTokenError", "SSOTokenLoadError"):
        # the message names the profile or the provider, never a key; shown for ProfileNotFound only
        detail = f": {redact(str(exc))}" if name == "ProfileNotFound" else ""
        return f"{name}{detail}: no usable AWS credentials; set them through {CREDENTIAL_CHAIN_HINT}"
    return redact(name + (f": {exc}" if str(exc) else ""))


# -- publish ------------------------------------------------------------------------------------


@dataclass
class PublishReport:
    """What :func:`publish_store` did: bundles published, files and bytes uploaded, repaired or found in place.

    ``files_repaired``: blobs of an already published bundle found missing or of another size and
    uploaded again (counted in ``files_uploaded`` too).  ``current``: the bundle id the remote
    ``CURRENT`` names after the publish (``None``: absent or unreadable); ``current_moved``: whether this
    publish moved it; ``current_reason`` (machine) and ``note`` (one sentence) say why it did not:
    ``not_requested`` (``--no-current``), ``already_current``, ``not_a_descendant``.
    """

    bundles: list[str] = field(default_factory=list)
    files_uploaded: int = 0
    bytes_uploaded: int = 0
    files_reused: int = 0
    bytes_reused: int = 0
    files_repaired: int = 0
    current: str | None = None
    current_moved: bool = False
    current_reason: str | None = None
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def publish_bundle(store: Store, bundle_id: str, remote: RemoteStore, report: PublishReport,
                   on_step: Callable[[str, str], None] | None = None,
                   checked: dict[str, int] | None = None) -> None:
    """Upload one local bundle: verify it, upload each missing blob, then the manifest.

    Every blob is checked with one HEAD, also when the remote manifest has the same bytes (the
    bundle was published before): a blob that is absent or has another size than the manifest's
    (keys are sha256 of the content, so a wrong size means corrupt) is uploaded again
    (``report.files_repaired``), after re-hashing the local file; a bundle published before is not
    re-hashed as a whole.  A HEAD does not read the content: a same-size corruption is found by
    the replicas, which re-hash every file they download and refuse the bundle.  Blobs stored with
    the right size are not uploaded again (``report.files_reused``).  ``checked``: sha256 -> size of
    blobs already checked in this publish (shared between bundles: one HEAD per distinct blob).
    ``on_step(kind, name)`` is called after each step (``"blob"``, path / ``"manifest"``, id):
    progress and crash tests.  Raises :class:`~artifacts.errors.BundleIntegrityError` when the local
    bundle (or a local file to upload again) fails verification (nothing of it is uploaded) and
    :class:`RemoteStoreError`.
    """
    from .hashing import sha256_file

    path = store.bundle_path(bundle_id)
    raw = (path / MANIFEST_NAME).read_bytes()
    published = remote.read_manifest_bytes(bundle_id) == raw  # a manifest is stored only after all its blobs
    manifest = read_manifest(path) if published else verify_bundle(path, records=False)
    checked = {} if checked is None else checked
    for entry in manifest.files:
        if checked.get(entry.sha256) == entry.size or remote.blob_size(entry.sha256) == entry.size:
            report.files_reused += 1
            report.bytes_reused += entry.size
        else:
            if published:  # a repair: the local file was verified when first published; check it again
                if sha256_file(path / entry.path) != entry.sha256:
                    raise BundleIntegrityError(f"local bundle {bundle_id} fails verification",
                                               [f"{entry.path}: sha256 mismatch"])
                report.files_repaired += 1
            remote.upload_blob(path / entry.path, entry.sha256)
            report.files_uploaded += 1
            report.bytes_uploaded += entry.size
        checked[entry.sha256] = entry.size
        if on_step is not None:
            on_step("blob", entry.path)
    if not published:
        remote.put_manifest(bundle_id, raw)
    report.bundles.append(bundle_id)
    if on_step is not None:
        on_step("manifest", bundle_id)


def publish_store(store: Store, remote: RemoteStore, *, bundle_ids: list[str] | None = None,
                  move_current: bool = True, force_current: bool = False,
                  on_step: Callable[[str, str], None] | None = None) -> PublishReport:
    """Publish local bundles to ``remote`` and then, last, point the remote ``CURRENT`` at the local one.

    ``bundle_ids``: the bundles to publish (default: every local bundle, so that ``at=`` of an old
    commit works on the replicas; bundles already complete remotely cost one HEAD per distinct
    file, which repairs a missing or truncated blob).  The local ``CURRENT`` is always among them.
    The remote ``CURRENT`` moves only forward, as a build moves the local one: when it has none,
    names the same commit, or names an ancestor of the local ``CURRENT``'s commit (checked in the
    source repositories recorded in the manifests); otherwise it stays (``report.current_reason``
    ``not_a_descendant``, ``report.note`` says why) unless ``force_current``.  A remote ``CURRENT``
    that names no bundle id (another tool's, a damaged object) is overwritten only with
    ``force_current``.  ``gitrag use REV --to`` is the rollback.  ``report.current`` is the remote
    ``CURRENT`` afterwards, also with ``move_current=False``.  Raises :class:`RemoteStoreError`
    (:class:`~artifacts.errors.RemoteCurrentError` for an unreadable remote ``CURRENT``, after the
    bundles are uploaded), :class:`~artifacts.errors.BundleNotFoundError` (no local ``CURRENT``) and
    :class:`~artifacts.errors.BundleIntegrityError`; on any error the remote ``CURRENT`` is unchanged.
    """
    current = store.current_id()
    if current is None:
        raise BundleNotFoundError("the store has no CURRENT bundle to publish; run `gitrag build` first")
    wanted = bundle_ids if bundle_ids is not None else [b.bundle_id for b in reversed(store.list_bundles())]
    if current not in wanted:
        wanted = [*wanted, current]
    wanted = [current] + [b for b in wanted if b != current] if move_current else wanted
    report = PublishReport()
    checked: dict[str, int] = {}
    for bundle_id in wanted:  # CURRENT's bundle first: the remote is usable as soon as possible
        publish_bundle(store, bundle_id, remote, report, on_step, checked)
    try:
        pointer = remote.read_current()
    except RemoteCurrentError as exc:
        if not (move_current and force_current):
            if not move_current:
                report.current_reason, report.note = "not_requested", f"{exc}; the remote CURRENT is left as it is"
                return report
            raise RemoteCurrentError(f"{exc}: overwrite it with --force-current (the bundles are uploaded)") \
                from exc
        pointer = None
    report.current = pointer.bundle_id if pointer else None
    if not move_current:
        report.current_reason, report.note = "not_requested", "--no-current: the remote CURRENT is left as it is"
        return report
    if pointer is not None and pointer.bundle_id == current:
        report.current_reason = "already_current"
        return report
    if pointer is not None and not force_current:
        note = _forward_block(store, pointer.bundle_id, current)
        if note:
            report.current_reason, report.note = "not_a_descendant", note
            return report
    remote.write_current(current)
    report.current, report.current_moved = current, True
    return report


def _forward_block(store: Store, remote_id: str, local_id: str) -> str | None:
    """Why moving the remote ``CURRENT`` from ``remote_id`` to ``local_id`` would go backwards, else ``None``."""
    remote_commit, local_commit = remote_id.split(".", 1)[0], local_id.split(".", 1)[0]
    if remote_commit == local_commit:
        return None
    sources = list(dict.fromkeys(b.manifest.source.repo for b in store.list_bundles()))
    import pygit2

    if _descends(sources, local_commit, remote_commit, pygit2):
        return None
    return (f"remote CURRENT stays at {remote_commit[:12]}: {local_commit[:12]} is not a descendant of it "
            f"(roll back with `gitrag use REV --to URL`, or publish with --force-current)")


def use_remote(remote: RemoteStore, ref: str, *, prefer_config: str | None = None,
               force_current: bool = False) -> str:
    """Point the remote ``CURRENT`` at the remote bundle ``ref`` names: rollback and roll-forward.

    ``ref``: a bundle id or a commit id prefix (4..40 hex) of exactly one published commit (a
    replica holds no Git repository, so branch names are resolved where the builder runs:
    ``gitrag use`` locally, then publish).  ``prefer_config``: among bundles of that commit built
    with several configurations, the one whose id ends with this fingerprint prefix wins (default:
    the remote ``CURRENT``'s).  The bundle's manifest must read and every blob must be stored with
    its size (one HEAD each; the content is re-hashed by the replicas, which refuse a bundle that
    fails) before ``CURRENT`` moves.  A remote ``CURRENT`` that names no bundle id is overwritten
    only with ``force_current``.  Returns the bundle id.  Raises
    :class:`~artifacts.errors.BundleNotFoundError` (no or several matches),
    :class:`~artifacts.errors.BundleIntegrityError` (incomplete),
    :class:`~artifacts.errors.RemoteCurrentError` and :class:`RemoteStoreError`.
    """
    if prefer_config is None:
        try:
            pointer = remote.read_current()
        except RemoteCurrentError as exc:
            if not force_current:
                raise RemoteCurrentError(f"{exc}: overwrite it with --force-current") from exc
            pointer = None
        prefer_config = _config_of(pointer.bundle_id) if pointer else None
    bundle_id = resolve_remote_ref(remote.list_bundle_ids(), ref, prefer_config)
    raw = remote.read_manifest_bytes(bundle_id)
    manifest = parse_remote_manifest(raw, bundle_id)
    problems = remote.blob_problems(manifest)
    if problems:
        raise BundleIntegrityError(f"remote bundle {bundle_id} is incomplete", problems[:20])
    remote.write_current(bundle_id)
    return bundle_id


def _config_of(bundle_id: str) -> str:
    """The configuration fingerprint prefix (8 hex) of a bundle id (``<commit>.<fp8>[-lexical]``)."""
    return bundle_id.split(".", 1)[-1][:8]


def resolve_remote_ref(bundle_ids: list[str], ref: str, prefer_config: str | None = None) -> str:
    """Return the bundle id among ``bundle_ids`` that ``ref`` names (exact id, or commit hex prefix).

    Raises :class:`~artifacts.errors.BundleNotFoundError` when none or several commits match.
    """
    if ref in bundle_ids:
        return ref
    prefix = ref.lower()
    if not (4 <= len(prefix) <= 40 and all(c in "0123456789abcdef" for c in prefix)):
        raise BundleNotFoundError(f"no remote bundle {ref[:60]} (name a bundle id or a commit id)")
    matches = [b for b in bundle_ids if b.split(".", 1)[0].startswith(prefix)]
    commits = {b.split(".", 1)[0] for b in matches}
    if len(commits) > 1:
        raise BundleNotFoundError(f"commit prefix {ref} is ambiguous among the remote bundles")
    if not matches:
        raise BundleNotFoundError(f"no remote bundle for commit {ref[:12]}")
    # as the local resolver: the preferred configuration first, a complete bundle before the lexical one
    return sorted(matches, key=lambda b: (_config_of(b) != prefer_config, b.endswith(LEXICAL_SUFFIX)))[0]


def parse_remote_manifest(raw: bytes | None, bundle_id: str) -> Manifest:
    """Validate remote manifest bytes of ``bundle_id``; return the :class:`Manifest`.

    Raises :class:`~artifacts.errors.BundleNotFoundError` (``raw`` is ``None``: no manifest) and
    :class:`~artifacts.errors.BundleIntegrityError` (unreadable, another format, another bundle id).
    """
    import json

    from .manifest import FORMAT_VERSION

    if raw is None:
        raise BundleNotFoundError(f"no remote bundle {bundle_id}")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise BundleIntegrityError(f"remote manifest of {bundle_id} is unreadable", [MANIFEST_NAME + ": unreadable"]) \
            from exc
    if not isinstance(data, dict) or data.get("format_version") != FORMAT_VERSION:
        raise BundleIntegrityError(f"remote manifest of {bundle_id} is not format {FORMAT_VERSION}",
                                   [MANIFEST_NAME + ": invalid"])
    try:
        manifest = Manifest.model_validate(data)
    except ValueError as exc:
        raise BundleIntegrityError(f"remote manifest of {bundle_id} does not validate", [MANIFEST_NAME + ": invalid"]) \
            from exc
    if manifest.bundle_id != bundle_id:
        raise BundleIntegrityError(f"remote manifest of {bundle_id} names bundle {manifest.bundle_id}",
                                   [MANIFEST_NAME + ": names another bundle"])
    return manifest


# -- fetch --------------------------------------------------------------------------------------

_fetch_locks: dict[tuple[str, str], threading.Lock] = {}
_fetch_locks_guard = threading.Lock()


def download_bundle(remote: RemoteStore, bundle_id: str, cache: Store, *, lock_timeout: float = 600.0,
                    on_bytes: Callable[[int], None] | None = None,
                    on_reuse: Callable[[int], None] | None = None) -> Path:
    """Make the remote bundle ``bundle_id`` a verified local bundle of ``cache``; return its directory.

    A bundle already in ``cache`` is returned at once.  Otherwise, holding the cache store's writer
    lock (several replica processes on one cache directory download a bundle once), every file is
    downloaded into ``staging/`` (a file whose sha256 a cached bundle already holds, such as the
    parent's unchanged Whoosh segments, is hard-linked or copied from it instead), the manifest
    written beside them, everything re-hashed against the manifest
    (:func:`~artifacts.store.verify_bundle`, records included), and only then renamed into
    ``bundles/`` and made read-only.  ``on_bytes(n)`` / ``on_reuse(n)`` are called with the bytes of
    each file downloaded / taken from the cache.
    Raises :class:`~artifacts.errors.BundleIntegrityError` (a corrupt or partial remote bundle: the
    staging copy is deleted), :class:`~artifacts.errors.BundleNotFoundError`
    (no such remote bundle), :class:`~artifacts.errors.StoreLockedError` and
    :class:`RemoteStoreError`.
    """
    if not is_bundle_id(bundle_id):
        raise BundleNotFoundError(f"not a bundle id: {bundle_id[:80]!r}")
    final = cache.bundles_dir / bundle_id
    if (final / MANIFEST_NAME).is_file():
        return final
    with _fetch_locks_guard:
        local_lock = _fetch_locks.setdefault((str(cache.root), bundle_id), threading.Lock())
    with local_lock, cache.writer_lock(wait=True, timeout=lock_timeout):
        if (final / MANIFEST_NAME).is_file():
            return final  # another thread or process fetched it meanwhile
        cache.clean_staging()  # a download killed with its process (the writer lock is ours: none runs now)
        raw = remote.read_manifest_bytes(bundle_id)
        manifest = parse_remote_manifest(raw, bundle_id)
        local = _cached_files(cache)
        staging = cache.new_staging()
        try:
            wanted = []
            for entry in manifest.files:
                target = staging / entry.path
                if ".." in Path(entry.path).parts or Path(entry.path).is_absolute():
                    raise BundleIntegrityError(f"remote manifest of {bundle_id} names a path outside the bundle",
                                               [f"{entry.path[:80]}: invalid path"])
                target.parent.mkdir(parents=True, exist_ok=True)
                if _reuse(local.get((entry.sha256, entry.size)), target):
                    if on_reuse is not None:
                        on_reuse(entry.size)
                else:
                    wanted.append((entry, target))

            def fetch(item: tuple[Any, Path]) -> None:
                remote.download_blob(item[0].sha256, item[1], item[0].size)
                if on_bytes is not None:
                    on_bytes(item[0].size)

            # A partial remote bundle (a blob missing or of another size) is refused before a byte of it
            # is downloaded: one HEAD per blob instead of GETs that would be thrown away.
            problems = remote.blob_problems(manifest.model_copy(update={"files": [e for e, _ in wanted]}))
            if problems:
                raise BundleIntegrityError(f"remote bundle {bundle_id} is incomplete", problems)
            # a few GETs at once: object storage answers each with its own latency
            with ThreadPoolExecutor(max_workers=PARALLEL_GETS, thread_name_prefix="gitrag-fetch") as pool:
                for _ in pool.map(fetch, wanted):
                    pass
            assert raw is not None
            (staging / MANIFEST_NAME).write_bytes(raw)
            verify_bundle(staging)  # every file against the manifest, then records, counts and digests
            read_manifest(staging)
            _fsync_tree(staging)
            os.rename(staging, final)
        except BaseException:
            # no chmod first: staging's files may be hard links to cached bundles' (read-only) files
            shutil.rmtree(staging, ignore_errors=True)
            raise
        _make_read_only(final)
    return final


def _cached_files(cache: Store) -> dict[tuple[str, int], Path]:
    """``(sha256, size) -> path`` of every file of the cache's bundles (all verified when installed)."""
    files: dict[tuple[str, int], Path] = {}
    for info in cache.list_bundles():
        for entry in info.manifest.files:
            files.setdefault((entry.sha256, entry.size), info.path / entry.path)
    return files


def _reuse(source: Path | None, target: Path) -> bool:
    """Hard-link (else copy) ``source`` to ``target``; False when there is none or it is gone (evicted)."""
    if source is None:
        return False
    try:
        os.link(source, target)
    except OSError:
        try:
            shutil.copyfile(source, target)
        except OSError:
            with contextlib.suppress(OSError):
                target.unlink()
            return False
    return True


def remove_cached_bundle(cache: Store, bundle_id: str) -> None:
    """Delete a bundle from a replica's cache store (never its ``CURRENT``); holds the writer lock."""
    with cache.writer_lock(wait=True, timeout=60.0):
        if cache.current_id() == bundle_id:
            return
        path = cache.bundles_dir / bundle_id
        with contextlib.suppress(FileNotFoundError):
            _make_writable(path)
            shutil.rmtree(path)


__all__ = ["CurrentPointer", "NOT_MODIFIED", "PublishReport", "RemoteStore", "check_endpoint", "download_bundle",
           "failure_reason", "make_client", "parse_remote_manifest", "parse_s3_url", "publish_bundle", "publish_store",
           "remove_cached_bundle", "resolve_remote_ref", "safe_endpoint", "use_remote"]
