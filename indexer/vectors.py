"""Write the vector part of a bundle (``vectors/``): ``vectors.npy``, ``ids.json``, ``index.hnsw``."""

from __future__ import annotations

import json
from pathlib import Path

import hnswlib
import numpy as np

from artifacts.layout import HNSW_EF_CONSTRUCTION, HNSW_M, HNSW_SEED, HNSW_SPACE


def write_vectors(vectors: np.ndarray, ids: list[str], vectors_dir: Path) -> None:
    """Write float32 ``vectors`` (n, dim), L2-normalised, with the chunk id of each row in ``ids`` (length n).

    A chunk embedded as several segments has several consecutive rows with the same id.

    The hnswlib index uses inner product (cosine on normalised vectors), labels ``0..n-1`` in
    ``ids`` order, built single-threaded with a fixed seed so the same input gives the same bytes.
    Raises ``ValueError`` when shapes disagree.
    """
    if vectors.ndim != 2 or vectors.shape[0] != len(ids):
        raise ValueError("vectors must be (n, dim) with one id per row")
    vectors_dir.mkdir(parents=True, exist_ok=True)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    np.save(vectors_dir / "vectors.npy", vectors, allow_pickle=False)
    (vectors_dir / "ids.json").write_text(json.dumps(ids, ensure_ascii=False), encoding="utf-8")
    n, dim = vectors.shape
    index = hnswlib.Index(space=HNSW_SPACE, dim=dim)
    index.init_index(max_elements=max(n, 1), ef_construction=HNSW_EF_CONSTRUCTION, M=HNSW_M,
                     random_seed=HNSW_SEED)
    index.set_num_threads(1)
    if n:
        index.add_items(vectors, np.arange(n, dtype=np.int64))
    index.save_index(str(vectors_dir / "index.hnsw"))
