"""Event-sourced builds: find the nearest ancestor bundle and plan what can be reused from it.

The Git history is the event log.  A bundle for commit C is derived from the bundle of C's nearest
ancestor built with the same configuration: documents whose blob is unchanged are taken from the
ancestor's ``docs.jsonl`` with their chunks, and every chunk whose embedding input (title, authors,
tags, heading path and text) hashes the same reuses the ancestor's vector rows.  Reuse is keyed by path + blob id for
documents and by content hash for vectors, so a rename re-parses the file but reuses its vectors;
correctness never depends on rename detection.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import pygit2

from artifacts.layout import CHUNKS_FILE, DOCS_FILE, IDS_FILE, VECTORS_FILE
from artifacts.manifest import Manifest, read_manifest
from artifacts.records import Chunk, Document, read_records
from artifacts.store import Store, make_bundle_id

MAX_ANCESTOR_WALK = 100_000
"""Commits visited at most while looking for an ancestor bundle."""


def embedding_key(text: str) -> str:
    """Return the sha256 (hex) of an embedding input text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def find_base_bundle(store: Store, repo: pygit2.Repository, commit: str, config_fingerprint: str) -> str | None:
    """Return the bundle id of the nearest ancestor of ``commit`` built with this configuration.

    Walks the first-parent chain first (the branch's own history), then every ancestor in
    topological order (newest first).  ``None`` when no ancestor has a bundle.
    """
    if not store.bundles_dir.exists():
        return None
    available = {name for name in _listdir(store.bundles_dir) if name.endswith("." + config_fingerprint[:8])}
    if not available:
        return None
    start = cast(pygit2.Commit, repo[commit])
    seen = 0
    node = start
    while node.parents and seen < MAX_ANCESTOR_WALK:
        node = node.parents[0]
        seen += 1
        candidate = make_bundle_id(str(node.id), config_fingerprint)
        if candidate in available:
            return candidate
    walker = repo.walk(start.id, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)
    for i, ancestor in enumerate(walker):
        if i == 0:
            continue  # the commit itself
        if i > MAX_ANCESTOR_WALK:
            break
        candidate = make_bundle_id(str(ancestor.id), config_fingerprint)
        if candidate in available:
            return candidate
    return None


def _listdir(path: Path) -> list[str]:
    try:
        return [p.name for p in path.iterdir()]
    except FileNotFoundError:
        return []


@dataclass
class BaseBundle:
    """What an ancestor bundle offers for reuse (read into memory; the bundle itself is never touched)."""

    bundle_id: str
    path: Path
    manifest: Manifest
    docs: dict[str, Document]
    chunks_by_path: dict[str, list[Chunk]]
    vectors: np.ndarray
    rows_by_key: dict[str, np.ndarray] = field(default_factory=dict)
    rows_by_chunk: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)
    """Chunk id -> (embedding-input hash, its row numbers)."""

    @property
    def rows(self) -> int:
        """Number of vector rows (= hnswlib labels in use) of the ancestor bundle."""
        return int(self.vectors.shape[0])

    def rows_of_chunk(self, chunk_id: str, key: str) -> np.ndarray | None:
        """Return the ancestor's row numbers (int64, segment order) to reuse for chunk ``chunk_id``, or ``None``.

        ``key``: the chunk's embedding-input hash now (:func:`embedding_key`).  The chunk's own rows
        when its hash was ``key`` then too, else the rows of any ancestor chunk with that hash, so two
        chunks with the same input each keep their own rows (and hnswlib labels).
        """
        own = self.rows_by_chunk.get(chunk_id)
        return own[1] if own is not None and own[0] == key else self.rows_by_key.get(key)

    def vectors_for(self, key: str) -> np.ndarray | None:
        """Return the ancestor's rows (float32 (segments, dim)) for an embedding-input hash, or ``None``."""
        rows = self.rows_by_key.get(key)
        return None if rows is None else np.asarray(self.vectors[rows], dtype=np.float32)


def load_base_bundle(store: Store, bundle_id: str, embedding_text) -> BaseBundle:  # type: ignore[no-untyped-def]
    """Read an ancestor bundle's documents, chunks and vectors for reuse.

    ``embedding_text(chunk, doc)`` maps a chunk to its embedding input; a chunk's vector rows (one
    per segment, in segment order in ``ids.json``, consecutive only in a scratch build) are keyed by
    :func:`embedding_key` of that text.
    Raises :class:`~artifacts.errors.ArtifactError` subclasses when the bundle cannot be read.
    """
    path = store.bundle_path(bundle_id)
    manifest = read_manifest(path)
    docs = {d.path: d for d in read_records(path / DOCS_FILE, Document)}
    chunks = list(read_records(path / CHUNKS_FILE, Chunk))
    by_path: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_path.setdefault(chunk.path, []).append(chunk)
    vectors = np.load(path / VECTORS_FILE, mmap_mode="r")
    ids = json.loads((path / IDS_FILE).read_text(encoding="utf-8"))
    by_id = {c.chunk_id: c for c in chunks}
    rows_of: dict[str, list[int]] = {}
    for row, chunk_id in enumerate(ids):
        rows_of.setdefault(chunk_id, []).append(row)
    rows_by_key: dict[str, np.ndarray] = {}
    rows_by_chunk: dict[str, tuple[str, np.ndarray]] = {}
    for chunk_id, rows in rows_of.items():
        chunk = by_id[chunk_id]
        key = embedding_key(embedding_text(chunk, docs.get(chunk.path)))
        array = np.asarray(rows, dtype=np.int64)
        rows_by_key.setdefault(key, array)
        rows_by_chunk[chunk_id] = (key, array)
    return BaseBundle(bundle_id, path, manifest, docs, by_path, vectors, rows_by_key, rows_by_chunk)
