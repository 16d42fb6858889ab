"""Errors raised by the bundle format and store.

Tree::

    ArtifactError
    ├── BundleNotFoundError      no bundle for that commit / id, or no CURRENT pointer
    │   └── UnknownRevisionError a well-formed revision that names no commit (any source repository)
    ├── InvalidRevisionError     a revision that is not a commit id, ref name, REV~N or REV^
    ├── BundleIntegrityError     a file's sha256/size differs from the manifest, or a file is missing
    ├── FormatVersionError       bundle written by an incompatible format_version
    ├── StoreLockedError         another writer holds the store lock
    ├── StoreWriteError          a store file (CURRENT, PINNED) could not be written (disk full...)
    ├── RemoteStoreError         object storage (S3) unreachable, refusing, or boto3 not installed
    │   └── RemoteCurrentError   the remote CURRENT holds something that is not a bundle id
    └── EmbedderError            embedding model cannot be loaded or does not match the bundle
"""

from __future__ import annotations


class ArtifactError(Exception):
    """Base class of every error raised by ``artifacts``."""


class BundleNotFoundError(ArtifactError):
    """No bundle matches the requested commit, bundle id or ``CURRENT`` pointer.

    ``commit``: the full commit id a revision resolved to when that commit has no bundle, else ``None``.
    """

    def __init__(self, message: str, *, commit: str | None = None) -> None:
        super().__init__(message)
        self.commit = commit


class UnknownRevisionError(BundleNotFoundError):
    """A well-formed revision names no commit (unknown branch, tag or sha)."""


class InvalidRevisionError(ArtifactError):
    """A revision is malformed: not a commit id, ref name, ``REV~N`` or ``REV^`` (see ``store.check_revision``)."""


class BundleIntegrityError(ArtifactError):
    """A bundle's files do not match its manifest.

    ``problems`` lists one human-readable line per mismatching or missing file.
    """

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class FormatVersionError(ArtifactError):
    """The bundle's ``format_version`` is not readable by this version of gitrag."""


class StoreLockedError(ArtifactError):
    """Another process holds the store's writer lock."""


class StoreWriteError(ArtifactError):
    """A store pointer could not be written; the message is one line (e.g. "no space left on device")."""


class RemoteStoreError(ArtifactError):
    """Object storage could not be reached or refused a request (:mod:`artifacts.remote`); one line, no secrets."""


class RemoteCurrentError(RemoteStoreError):
    """The remote ``CURRENT`` object holds something that is not a bundle id (overwrite it with ``--force-current``)."""


class EmbedderError(ArtifactError):
    """The embedding model cannot be loaded, or differs from the one a bundle was built with."""
