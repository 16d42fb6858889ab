"""Errors raised by the indexer.

Tree::

    IndexerError
    ├── SourceError    the Git repository or revision cannot be opened / resolved
    ├── SkipFile       one file is not indexed (stable ``reason`` code + ``detail``); the build
    │                  records it as a ``SkippedFile`` and goes on
    └── BuildError     a bundle cannot be built at all
"""

from __future__ import annotations

SKIP_REASONS = ("not_utf8", "binary", "too_large", "invalid_front_matter", "front_matter_too_large",
                "lfs_pointer")
"""Reason codes :class:`SkipFile` is raised with by the Markdown parser."""


class IndexerError(Exception):
    """Base class of every error raised by ``indexer``."""


class SourceError(IndexerError):
    """The Git repository cannot be opened, or a revision names no commit."""


class SkipFile(IndexerError):
    """A file is not indexed.

    ``reason`` is a stable machine code (one of :data:`SKIP_REASONS`, or ``not_a_blob`` from
    the Git layer); ``detail`` a short human-readable explanation that never contains file
    contents.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class BuildError(IndexerError):
    """A bundle cannot be built (bad repository, commit, configuration or store state)."""
