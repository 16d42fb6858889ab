"""The dense arm: cosine k-NN over the bundle's hnswlib index."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import hnswlib
import numpy as np

from artifacts.analysis import normalize_text
from artifacts.records import chunk_path
from query.bundle import OpenedBundle
from query.search.filters import unpublished_paths

QUERY_VECTOR_CACHE = 1024
"""Query vectors kept per bundle (least recently used dropped first; 1.5 KB each at 384 dimensions)."""


class QueryVectorCache:
    """An LRU of query vectors, keyed by the normalised query text (NFC, stripped).

    With the default model the query embedding is most of a hybrid search's CPU; a query asked again
    (a reload, a popular question, the answer path retrieving for the same question twice) is not
    embedded again.  Thread-safe; the model runs outside the lock, so two threads that miss on the
    same query at once both embed it (the result is the same).  Cached arrays are read-only.
    """

    def __init__(self, size: int = QUERY_VECTOR_CACHE) -> None:
        self._size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, embedder: Any, text: str) -> np.ndarray:
        """Return ``embedder.embed_query(text)`` (float32 (dim,), L2-normalised), from the cache when present."""
        key = normalize_text(text).strip()
        with self._lock:
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
                self.hits += 1
                return vector
            self.misses += 1
        vector = np.asarray(embedder.embed_query(key), dtype=np.float32)
        vector.setflags(write=False)
        with self._lock:
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
        return vector


def query_vector(bundle: OpenedBundle, text: str) -> np.ndarray:
    """Return the query vector of ``text`` by ``bundle``'s embedder, through the bundle's :class:`QueryVectorCache`."""
    cache: QueryVectorCache = bundle.derive("query_vectors", QueryVectorCache)
    return cache.get(bundle.embedder, text)


def vector_ranking(bundle: OpenedBundle, text: str, depth: int, published_only: bool,
                   paths: set[str] | None = None) -> list[tuple[str, float]]:
    """Return dense hits as ``[(chunk_id, cosine similarity)]`` best first (at most ``depth``).

    ``paths`` (when given) restricts hits to those documents; otherwise ``published_only`` drops
    unpublished chunks.  A chunk stored as several vectors (segments) is returned once, with the
    similarity of its best segment.
    """
    n = len(bundle.chunks)  # rows; an updated index may hold deleted labels past them (indexer.vectors)
    if n == 0 or bundle.hnsw is None or bundle.embedder is None:  # a lexical bundle has no vectors yet
        return []
    if paths is not None and not paths:
        return []
    qvec = query_vector(bundle, text)
    ids = bundle.chunks.ids  # label -> chunk id: no chunk record is read per visited node or hit
    accept: Callable[[int], bool] | None = None  # None: every vector may match, no per-node callback
    if paths is not None:
        wanted = paths

        def in_paths(label: int) -> bool:
            return chunk_path(ids[label]) in wanted
        accept = in_paths
    elif published_only and unpublished_paths(bundle):
        unpublished = unpublished_paths(bundle)  # a chunk is published when its document is

        def published(label: int) -> bool:
            return chunk_path(ids[label]) not in unpublished
        accept = published
    count = n if accept is None else _filtered_count(bundle, paths, n)
    k = min(count, depth * 2)  # never more than the index can return
    if k == 0:
        return []
    with bundle.vector_lock:  # ef is index state shared by every thread
        bundle.hnsw.set_ef(max(k, 200))
        try:
            labels, distances = bundle.hnsw.knn_query(qvec.reshape(1, -1), k=k, filter=accept)
        except RuntimeError:  # the graph search reached fewer than k (a narrow filter, a sparse small graph)
            labels, distances = _exact_knn(bundle.hnsw, qvec, accept, k, n)
    hits: list[tuple[str, float]] = []
    seen: set[str] = set()
    for label, dist in zip(labels[0].tolist(), distances[0].tolist(), strict=True):
        cid = ids[label]
        if cid in seen:
            continue
        seen.add(cid)
        hits.append((cid, 1.0 - dist))  # ip space: distance = 1 - dot
    return hits[:depth]


def _filtered_count(bundle: OpenedBundle, paths: set[str] | None, n: int) -> int:
    """Return how many vectors pass the filter of :func:`vector_ranking` (cost: the allowed paths)."""
    def compute() -> dict[str, int]:
        counts: dict[str, int] = {}
        for cid in bundle.chunks.ids:
            path = chunk_path(cid)
            counts[path] = counts.get(path, 0) + 1
        return counts

    counts = bundle.derive("vectors_by_path", compute)
    if paths is not None:
        return sum(counts.get(p, 0) for p in paths)
    return n - sum(counts.get(p, 0) for p in unpublished_paths(bundle))


def _exact_knn(hnsw: hnswlib.Index, qvec: np.ndarray, accept: Callable[[int], bool] | None, k: int,
               n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest of the labels ``0..n-1`` that pass ``accept`` (all when ``None``) by an exact scan.

    The fallback of :func:`vector_ranking` when hnswlib's graph search returns fewer than ``k``: the
    stored vectors (``Index.get_items``) are scored against ``qvec`` (inner product); returns
    ``knn_query``-shaped ``(labels, distances)``, distance ``1 - dot``.  Cost: one pass over the
    passing vectors (``n x dim`` floats at most).
    """
    labels = [label for label in range(n) if accept is None or accept(label)]
    if not labels:
        return np.zeros((1, 0), dtype=np.int64), np.zeros((1, 0), dtype=np.float32)
    vectors = np.asarray(hnsw.get_items(labels), dtype=np.float32)
    scores = vectors @ np.asarray(qvec, dtype=np.float32).reshape(-1)
    order = np.argsort(-scores, kind="stable")[:k]
    return np.asarray(labels, dtype=np.int64)[order].reshape(1, -1), (1.0 - scores[order]).reshape(1, -1)
