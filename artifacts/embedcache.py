"""Embedding checkpoint: vectors of an unfinished build, kept so that a rerun does not embed them again.

A first build with the default model can embed for an hour; a build that is killed, crashes or runs
out of disk used to lose all of it (its staging directory is discarded).  The build writes every
embedded batch here and commits it, so the next build of the store, with the same model and the
same embedding inputs, takes those vectors instead of computing them.  After a build is published
the checkpoint is deleted: the bundle's own vectors then serve reuse (ancestor and donor bundles).

One SQLite file per model in the store, ``cache/embeddings-<key>.sqlite``, where ``key`` is the
first 16 hex digits of sha256 over the model's :class:`~artifacts.config.EmbedderSpec` (model id,
dimension, weights fingerprint, prefixes and input limit): another model never reads it.  Rows:
embedding-input key (sha256 hex of the text, :func:`indexer.incremental.embedding_key`) -> float32
array (segments, dim).  Writes happen under the store's writer lock (one build at a time).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from .config import EmbedderSpec

CACHE_DIR = "cache"


def checkpoint_path(store_root: Path | str, spec: EmbedderSpec) -> Path:
    """Return the checkpoint file of ``spec``'s model in the store at ``store_root``."""
    key = hashlib.sha256(spec.model_dump_json().encode("utf-8")).hexdigest()[:16]
    return Path(store_root) / CACHE_DIR / f"embeddings-{key}.sqlite"


class EmbeddingCheckpoint:
    """Vectors (float32 (segments, dim)) by embedding-input key for one model; see the module docstring.

    ``get`` returns ``None`` for an unknown key or a row of the wrong dimension (never a wrong
    vector); ``put_many`` commits (a kill after it loses nothing written before); ``discard``
    deletes the file.  A file that is not a readable SQLite database is replaced by an empty one.
    """

    def __init__(self, store_root: Path | str, spec: EmbedderSpec) -> None:
        self.path = checkpoint_path(store_root, spec)
        self.dim = spec.dim
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._open()
        except sqlite3.DatabaseError:  # a truncated or foreign file: start again, it is only a cache
            self.path.unlink(missing_ok=True)
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path)
        db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, segments INTEGER, data BLOB)")
        db.commit()
        return db

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def get(self, key: str) -> np.ndarray | None:
        row = self._db.execute("SELECT segments, data FROM vectors WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        segments, data = int(row[0]), bytes(row[1])
        if segments <= 0 or len(data) != segments * self.dim * 4:
            return None
        return np.frombuffer(data, dtype=np.float32).reshape(segments, self.dim).copy()

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        rows = [(key, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes()) for key, v in items]
        self._db.executemany("INSERT OR REPLACE INTO vectors (key, segments, data) VALUES (?, ?, ?)", rows)
        self._db.commit()

    def close(self) -> None:
        self._db.close()

    def discard(self) -> None:
        """Close and delete the checkpoint (after the build that filled it was published)."""
        self.close()
        self.path.unlink(missing_ok=True)
        for suffix in ("-journal", "-wal", "-shm"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)
