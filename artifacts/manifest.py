"""The bundle manifest: ``manifest.json`` at the root of every bundle.

Format history (bump ``FORMAT_VERSION`` for incompatible changes, ``FEATURE_VERSION`` for additive
ones; readers reject another ``format_version`` and ignore unknown fields):

* format 1, feature 1 — first release: Whoosh ``text/``, hnswlib ``vectors/``, ladybug ``graph/``,
  ``docs.jsonl``, ``chunks.jsonl``.
* format 1, feature 2 — ``bm25/``: per-field term frequencies and field lengths as arrays
  (:mod:`artifacts.bm25matrix`), scored with numpy; a bundle without it is searched through Whoosh.
* format 1, feature 3 — graph schema 3: ``Document.fact_chunks`` and narrowed ``Work.chunk_ids``
  (chunk-level provenance of graph facts, :mod:`artifacts.graphschema`); a bundle of schema 2 gets
  the same provenance computed from its chunks at query time.
* format 1, feature 4 — ``stage``: ``"lexical"`` for a bundle published before its vectors (no
  ``vectors/``, ``counts.vectors`` 0, no ``vectors`` digest; id ``<commit>.<fp8>-lexical``), served
  BM25 + graph until the ``"complete"`` bundle of the same commit and configuration follows.  A
  manifest without the field is complete.  A reader of feature 3 or older refuses a lexical bundle
  when it opens its vectors (``RetrievalUnavailableError``); every bundle it could read before
  reads as before.
* format 1, feature 5 — ``fusion``: the hybrid-ranking settings of the bundle's embedder
  (:mod:`artifacts.fusion`: ``{"profile": name, <SearchOptions field>: value, ...}``), which a reader
  ranks with; a manifest without it ranks with the reader's built-in defaults (the ``default``
  profile, the settings of feature 4).

Nothing hashed into ``content_digest`` depends on wall-clock time; ``built_at`` and ``timings`` are
informational only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .config import BuildConfig
from .errors import BundleIntegrityError, FormatVersionError
from .records import SkippedFile

FORMAT_VERSION = 1
FEATURE_VERSION = 5
MANIFEST_NAME = "manifest.json"
STAGES = ("complete", "lexical")
"""Values of :attr:`Manifest.stage`: every part built, or published before the vectors (feature 4)."""


class FileEntry(BaseModel):
    """One file of the bundle: path relative to the bundle root (``/`` separators), sha256 hex, size in bytes."""

    path: str
    sha256: str
    size: int


class SourceInfo(BaseModel):
    """Where the indexed commit came from: repository path or URL as given, and branch/ref if known."""

    repo: str
    ref: str | None = None


class Counts(BaseModel):
    """Counts of the bundle's content."""

    documents: int = 0
    chunks: int = 0
    vectors: int = 0
    nodes: dict[str, int] = Field(default_factory=dict)
    relationships: dict[str, int] = Field(default_factory=dict)
    skipped: int = 0


class BuildStats(BaseModel):
    """Informational build statistics (not hashed): seconds per stage, embeddings computed vs reused."""

    timings: dict[str, float] = Field(default_factory=dict, description="seconds per stage")
    embeddings_computed: int = 0
    embeddings_reused: int = 0
    peak_rss_mb: float | None = None


class Manifest(BaseModel):
    """Model of ``manifest.json``; unknown fields are kept (additive features)."""

    model_config = ConfigDict(extra="allow")

    format_version: int = FORMAT_VERSION
    feature_version: int = FEATURE_VERSION
    bundle_id: str
    commit: str
    tree: str
    parent_commits: list[str] = Field(default_factory=list)
    commit_time: int = Field(description="committer time, seconds since the Unix epoch")
    commit_summary: str = ""
    source: SourceInfo
    config: BuildConfig
    config_fingerprint: str
    built_from: str | None = Field(None, description="bundle id this one was derived from, or null")
    files: list[FileEntry] = Field(default_factory=list)
    counts: Counts = Field(default_factory=Counts)
    skipped: list[SkippedFile] = Field(default_factory=list)
    content_digest: str = ""
    digests: dict[str, str] = Field(default_factory=dict, description="per-part logical digests")
    graph_engine: dict[str, str] = Field(default_factory=dict)
    tool_version: str = ""
    built_at: str | None = Field(None, description="ISO time of the build; informational, not hashed")
    stats: BuildStats = Field(default_factory=BuildStats)
    stage: Literal["complete", "lexical"] = Field(
        "complete", description="complete, or lexical: published before its vectors (BM25 + graph only; feature 4)")
    fusion: dict[str, Any] | None = Field(
        None, description="hybrid-ranking settings of the embedder's fusion profile (artifacts.fusion; feature 5); "
                          "null: the reader's defaults")

    @property
    def engines(self) -> list[str]:
        """Retrieval engines the bundle holds: ``["bm25", "vector", "graph"]``, without ``vector`` when lexical."""
        return ["bm25", "graph"] if self.stage == "lexical" else ["bm25", "vector", "graph"]

    def to_json(self) -> str:
        """Return the manifest as JSON text with sorted keys and a trailing newline."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def read_manifest(bundle_dir: Path) -> Manifest:
    """Read and validate ``manifest.json`` of a bundle directory.

    Raises :class:`FormatVersionError` for another format version and
    :class:`BundleIntegrityError` when the file is missing or not a valid manifest.
    """
    path = Path(bundle_dir) / MANIFEST_NAME
    try:
        raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BundleIntegrityError("bundle has no manifest.json", [MANIFEST_NAME + ": missing"]) from exc
    except (OSError, ValueError) as exc:
        raise BundleIntegrityError("manifest.json is unreadable", [MANIFEST_NAME + ": unreadable"]) from exc
    version = raw.get("format_version")
    if version != FORMAT_VERSION:
        raise FormatVersionError(f"bundle format_version {version!r} is not {FORMAT_VERSION}")
    try:
        return Manifest.model_validate(raw)
    except ValueError as exc:
        raise BundleIntegrityError("manifest.json does not validate", [MANIFEST_NAME + ": invalid"]) from exc
