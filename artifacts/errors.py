"""Errors raised by the bundle format and store.

Tree::

    ArtifactError
    ├── BundleNotFoundError      no bundle for that commit / id, or no CURRENT pointer
    ├── BundleIntegrityError     a file's sha256/size differs from the manifest, or a file is missing
    ├── FormatVersionError       bundle written by an incompatible format_version
    ├── StoreLockedError         another writer holds the store lock
    └── EmbedderError            embedding model cannot be loaded or does not match the bundle
"""

from __future__ import annotations


class ArtifactError(Exception):
    """Base class of every error raised by ``artifacts``."""


class BundleNotFoundError(ArtifactError):
    """No bundle matches the requested commit, bundle id or ``CURRENT`` pointer."""


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


class EmbedderError(ArtifactError):
    """The embedding model cannot be loaded, or differs from the one a bundle was built with."""
