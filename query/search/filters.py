"""Request filters (path prefix, tags, categories, year, published) as allowed paths, Whoosh docnums or matrix rows."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from whoosh import query as wq

from artifacts.analysis import fold
from artifacts.bm25matrix import BM25Matrix
from artifacts.records import chunk_path
from query.bundle import OpenedBundle
from query.search.request import SearchFilter


def _doc_matches(doc: Any, flt: SearchFilter) -> bool:
    """Return whether one document passes ``flt`` (the reference definition; search uses :class:`FilterIndex`)."""
    if flt.path_prefix and not doc.path.startswith(flt.path_prefix):
        return False
    if flt.tags and not {fold(t) for t in flt.tags} & {fold(t) for t in doc.tags}:
        return False
    if flt.categories and not {fold(c) for c in flt.categories} & {fold(c) for c in doc.categories}:
        return False
    years = flt.years()
    return years is None or doc.year in years


@dataclass(frozen=True)
class FilterIndex:
    """Per-bundle lookup tables: a filter becomes allowed paths without visiting every document.

    ``paths`` sorted (a path prefix is a contiguous run); ``unpublished`` the paths with
    ``published: false``; ``tags`` / ``categories``: folded value -> paths; ``years``: year -> paths.
    """

    paths: tuple[str, ...]
    unpublished: frozenset[str]
    tags: dict[str, frozenset[str]]
    categories: dict[str, frozenset[str]]
    years: dict[int, frozenset[str]]


def _build_filter_index(docs: Mapping[str, Any]) -> FilterIndex:
    tags: dict[str, set[str]] = {}
    categories: dict[str, set[str]] = {}
    years: dict[int, set[str]] = {}
    for path, doc in docs.items():
        for value in {fold(t) for t in doc.tags}:
            tags.setdefault(value, set()).add(path)
        for value in {fold(c) for c in doc.categories}:
            categories.setdefault(value, set()).add(path)
        if doc.year is not None:
            years.setdefault(doc.year, set()).add(path)
    return FilterIndex(
        paths=tuple(sorted(docs)),
        unpublished=frozenset(p for p, d in docs.items() if not d.published),
        tags={k: frozenset(v) for k, v in tags.items()},
        categories={k: frozenset(v) for k, v in categories.items()},
        years={k: frozenset(v) for k, v in years.items()},
    )


def unpublished_paths(bundle: OpenedBundle) -> frozenset[str]:
    """Return the paths of the documents with ``published: false`` (the facets are not read when there are none)."""
    if bundle.all_published():
        return frozenset()
    return filter_index(bundle).unpublished


def filter_index(bundle: OpenedBundle) -> FilterIndex:
    """Return the bundle's :class:`FilterIndex` (built on first use, then shared by every request)."""
    return bundle.derive("filter_index", lambda: _build_filter_index(bundle.doc_facets()))


def allowed_paths(bundle: OpenedBundle, flt: SearchFilter | None, published_only: bool) -> set[str] | None:
    """Return the document paths a filtered request may return, or ``None`` when ``flt`` restricts nothing.

    With ``None`` only the published rule applies (callers handle it through cached sets, so an
    unfiltered request costs nothing per document).  Cost: the request's values plus the paths found.
    """
    if flt is None or flt.is_empty():
        return None
    index = filter_index(bundle)
    found: set[str] | None = None

    def narrow(paths: Iterable[str]) -> None:
        nonlocal found
        found = set(paths) if found is None else found.intersection(paths)

    if flt.path_prefix:
        lo = hi = bisect.bisect_left(index.paths, flt.path_prefix)
        while hi < len(index.paths) and index.paths[hi].startswith(flt.path_prefix):
            hi += 1
        narrow(index.paths[lo:hi])
    if flt.tags:
        narrow(set().union(*(index.tags.get(v, ()) for v in {fold(t) for t in flt.tags})))
    if flt.categories:
        narrow(set().union(*(index.categories.get(v, ()) for v in {fold(c) for c in flt.categories})))
    years = flt.years()
    if years is not None:
        narrow(set().union(*(index.years.get(y, ()) for y in years)))
    result = found if found is not None else set(index.paths)
    return result - index.unpublished if published_only else result


def _docnums_by_path(searcher: Any) -> dict[str, tuple[int, ...]]:
    """Return document path -> Whoosh document numbers of its chunks (computed once per bundle)."""
    paths = list(searcher.reader().field_terms("path"))
    return {path: tuple(searcher.docs_for_query(wq.Term("path", path))) for path in paths}


def allowed_docnums(bundle: OpenedBundle, searcher: Any, paths: set[str] | None,
                    published_only: bool) -> set[int] | None:
    """Return the Whoosh document numbers a request may match, or ``None`` for all.

    ``paths`` (from :func:`allowed_paths`) gives the chunks of those documents; without it, the
    published rule alone gives a set computed once per bundle, or ``None`` when every document is
    published, so an unfiltered search does no per-document filter work.
    """
    if paths is not None:
        by_path = bundle.derive("docnums_by_path", lambda: _docnums_by_path(searcher))
        found: set[int] = set()
        for path in paths:
            found.update(by_path.get(path, ()))
        return found
    unpublished = unpublished_paths(bundle) if published_only else frozenset()
    if not unpublished:
        return None

    def compute() -> set[int]:  # a set, not a frozenset: the only type Whoosh takes as a filter (never mutated)
        by_path = bundle.derive("docnums_by_path", lambda: _docnums_by_path(searcher))
        hidden = {n for p in unpublished for n in by_path.get(p, ())}
        return {n for n in range(searcher.doc_count_all()) if n not in hidden}

    return bundle.derive("published_docnums", compute)


def _rows_by_path(bundle: OpenedBundle, matrix: BM25Matrix) -> dict[str, np.ndarray]:
    """Return document path -> matrix rows of its chunks (int64; computed once per bundle)."""
    def compute() -> dict[str, np.ndarray]:
        rows: dict[str, list[int]] = {}
        for row, cid in enumerate(matrix.chunk_ids):  # a chunk id is "<path>#<ordinal>": no record is parsed
            rows.setdefault(chunk_path(cid), []).append(row)
        return {path: np.array(r, dtype=np.int64) for path, r in rows.items()}

    return bundle.derive("bm25_rows_by_path", compute)


def allowed_rows(bundle: OpenedBundle, matrix: BM25Matrix, paths: set[str] | None,
                 published_only: bool) -> np.ndarray | None:
    """Return a bool mask over the matrix rows a request may match, or ``None`` for all.

    The matrix counterpart of :func:`allowed_docnums`: ``paths`` (from :func:`allowed_paths`) costs
    one pass over the allowed chunks; without it the published rule is a mask computed once per
    bundle, or ``None`` when every document is published.
    """
    if paths is not None:
        return _rows_mask(bundle, matrix, paths, allowed=True)
    unpublished = unpublished_paths(bundle) if published_only else frozenset()
    if not unpublished:
        return None

    def compute() -> np.ndarray:
        return _rows_mask(bundle, matrix, unpublished, allowed=False)

    return bundle.derive("published_rows", compute)


def _rows_mask(bundle: OpenedBundle, matrix: BM25Matrix, paths: Iterable[str], *, allowed: bool) -> np.ndarray:
    """Bool mask over the matrix rows: ``allowed`` for the chunks of ``paths``, the opposite for every other row."""
    by_path = _rows_by_path(bundle, matrix)
    mask = np.full(matrix.n_rows, not allowed, dtype=bool)
    for path in paths:
        rows = by_path.get(path)
        if rows is not None:
            mask[rows] = allowed
    return mask
