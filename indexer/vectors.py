"""Write the vector part of a bundle (``vectors/``): ``vectors.npy``, ``ids.json``, ``index.hnsw``.

Row ``j`` of ``vectors.npy``, entry ``j`` of ``ids.json`` and hnswlib label ``j`` are the same vector.
A scratch build writes the rows in chunk order (:func:`write_vectors`).  An incremental build
(:func:`update_vectors`) loads the parent bundle's hnswlib index and changes only what the diff
changes: rows of unchanged chunks keep their labels, new rows take the labels of removed ones
(hnswlib updates such an element in place and re-links its neighbours) or are appended, so rows are
then in label order rather than chunk order.  Labels past the last row may remain in the index,
marked deleted (never returned by a search; :func:`live_count` is the number of rows); when they
would exceed :data:`MAX_DELETED_FRACTION` of the rows the index is rebuilt from scratch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import hnswlib
import numpy as np

from artifacts.layout import HNSW_EF_CONSTRUCTION, HNSW_M, HNSW_SEED, HNSW_SPACE

MAX_DELETED_FRACTION = 0.1
"""Most deleted (garbage) elements an updated hnswlib index may keep, as a fraction of its rows."""


def write_vectors(vectors: np.ndarray, ids: list[str], vectors_dir: Path) -> None:
    """Write float32 ``vectors`` (n, dim), L2-normalised, with the chunk id of each row in ``ids`` (length n).

    A chunk embedded as several segments has several rows with the same id, in segment order
    (consecutive in a scratch build).

    The hnswlib index uses inner product (cosine on normalised vectors), labels ``0..n-1`` in
    ``ids`` order, built single-threaded with a fixed seed so the same input gives the same bytes.
    Raises ``ValueError`` when shapes disagree.
    """
    if vectors.ndim != 2 or vectors.shape[0] != len(ids):
        raise ValueError("vectors must be (n, dim) with one id per row")
    vectors_dir.mkdir(parents=True, exist_ok=True)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    _write_rows(vectors_dir, vectors, ids)
    n, dim = vectors.shape
    index = hnswlib.Index(space=HNSW_SPACE, dim=dim)
    index.init_index(max_elements=max(n, 1), ef_construction=HNSW_EF_CONSTRUCTION, M=HNSW_M,
                     random_seed=HNSW_SEED)
    index.set_num_threads(1)
    if n:
        index.add_items(vectors, np.arange(n, dtype=np.int64))
    index.save_index(str(vectors_dir / "index.hnsw"))


def _write_rows(vectors_dir: Path, vectors: np.ndarray, ids: list[str]) -> None:
    np.save(vectors_dir / "vectors.npy", vectors, allow_pickle=False)
    (vectors_dir / "ids.json").write_text(json.dumps(ids, ensure_ascii=False), encoding="utf-8")


@dataclass
class LabelPlan:
    """Where each row of an updated vector index goes (see :func:`plan_labels`).

    ``ids[j]`` is the chunk id of label ``j`` (length n = rows of the new bundle);
    ``source[j]`` the parent's row copied unchanged into label ``j`` or -1 when label ``j`` gets a
    new vector (``put``); ``put`` maps label -> (chunk index, segment) of the rows written to the
    hnswlib index; ``delete`` the parent labels that end up without a row (all >= n).
    """

    ids: list[str]
    source: np.ndarray
    put: dict[int, tuple[int, int]]
    delete: list[int]
    moved: int = 0
    """Parent rows moved to a lower label (re-inserted) so that labels stay dense."""

    @property
    def kept(self) -> int:
        """Rows whose label, vector and graph links are the parent's."""
        return int((self.source >= 0).sum()) - self.moved


def plan_labels(base_rows: int, chunk_ids: list[str], segments: list[int],
                origin: list[np.ndarray | None]) -> LabelPlan:
    """Assign labels ``0..n-1`` to the rows of the new bundle, reusing the parent's rows in place.

    ``base_rows``: rows of the parent bundle.  Per chunk (new chunk order): ``chunk_ids[i]``,
    ``segments[i]`` (its number of rows) and ``origin[i]``: the parent's row numbers (int array of
    length ``segments[i]``) holding exactly this chunk's vectors, or ``None`` when they are new.
    A parent row claimed by two chunks (same embedding input) stays with the first; the second gets
    new labels.  Freed labels are filled by new rows first (lowest first), then by parent rows moved
    down from the end, so the result has no hole below n.
    """
    n = sum(segments)
    ids: list[str] = [""] * n
    source = np.full(n, -1, dtype=np.int64)
    put: dict[int, tuple[int, int]] = {}
    claimed = np.zeros(base_rows, dtype=bool)
    owner: dict[int, tuple[int, int]] = {}  # parent row -> (chunk, segment) kept in place
    pending: list[tuple[int, int]] = []
    for i, rows in enumerate(origin):
        if rows is not None and len(rows) == segments[i] and not claimed[rows].any():
            claimed[rows] = True
            for s, row in enumerate(rows):
                owner[int(row)] = (i, s)
        else:
            pending.extend((i, s) for s in range(segments[i]))
    free = [label for label in range(min(base_rows, n)) if not claimed[label]]
    free.reverse()  # pop() gives the lowest
    next_label = base_rows
    for item in pending:
        label = free.pop() if free else next_label
        if label == next_label:
            next_label += 1
        put[label] = item
    for row, item in owner.items():
        if row < n:
            source[row] = row
            ids[row] = chunk_ids[item[0]]
    # Parent rows beyond n move down into the remaining free labels below n.
    moved = 0
    for row in sorted(r for r in owner if r >= n):
        label = free.pop()
        source[label] = row
        ids[label] = chunk_ids[owner[row][0]]
        moved += 1
    assert not free, "labels below n left free"
    for label, (i, _) in put.items():
        ids[label] = chunk_ids[i]
    delete = list(range(n, base_rows))
    return LabelPlan(ids=ids, source=source, put=put, delete=delete, moved=moved)


def update_vectors(base_dir: Path, plan: LabelPlan, blocks: list[np.ndarray], vectors_dir: Path) -> bool:
    """Write ``vectors/`` from the parent bundle's ``base_dir/vectors`` changed as ``plan`` says.

    ``blocks[i]`` is chunk ``i``'s float32 (segments, dim) rows.  Loads the parent's hnswlib index,
    marks the labels in ``plan.delete`` deleted, adds or updates every label that gets a new vector
    (in place for a reused label) and saves; rows of unchanged chunks are copied from the parent's
    ``vectors.npy``.  Returns ``False`` without writing when the index should be rebuilt instead:
    the parent's index has another dimension or cannot be read, or more than
    :data:`MAX_DELETED_FRACTION` of the result would be deleted elements.
    """
    n = len(plan.ids)
    base_vectors = np.load(base_dir / "vectors.npy", mmap_mode="r")
    dim = base_vectors.shape[1] if base_vectors.ndim == 2 else 0
    if n == 0 or any(b.shape[1] != dim for b in blocks if len(b)):
        return False
    index = hnswlib.Index(space=HNSW_SPACE, dim=dim)
    try:
        index.load_index(str(base_dir / "index.hnsw"))
    except (RuntimeError, OSError, ValueError):
        return False
    total = max(index.get_current_count(), n)
    if total - n > MAX_DELETED_FRACTION * n:
        return False
    index.set_num_threads(1)
    vectors_dir.mkdir(parents=True, exist_ok=True)
    out = np.lib.format.open_memmap(vectors_dir / "vectors.npy", mode="w+", dtype=np.float32, shape=(n, dim))
    copied = plan.source >= 0
    out[copied] = base_vectors[plan.source[copied]]
    for label, (i, s) in plan.put.items():
        out[label] = blocks[i][s]
    moved = [int(label) for label in np.flatnonzero(copied) if plan.source[label] != label]
    writes = sorted([*plan.put, *moved])
    if total > index.get_max_elements():
        index.resize_index(total)
    # Freed labels first: a search during the updates below must not return them, and a label
    # that is re-used is un-marked by add_items.
    for label in plan.delete:
        if label < index.get_current_count():
            index.mark_deleted(label)
    if writes:
        labels = np.asarray(writes, dtype=np.int64)
        index.add_items(np.ascontiguousarray(out[labels]), labels)
    out.flush()
    del out
    (vectors_dir / "ids.json").write_text(json.dumps(plan.ids, ensure_ascii=False), encoding="utf-8")
    index.save_index(str(vectors_dir / "index.hnsw"))
    return True
