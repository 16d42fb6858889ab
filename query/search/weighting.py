"""BM25 weighting (BM25F with the Robertson-Sparck Jones idf) and the bundle's two scorers of it.

The BM25 matrix (``bm25/``, :mod:`artifacts.bm25matrix`) when the bundle has one, else a Whoosh
searcher; both give the same scores.
"""

from __future__ import annotations

from typing import Any

from whoosh import scoring

from artifacts.bm25matrix import BM25Matrix, BM25Params, MatrixFormatError, rsj_idf
from artifacts.layout import BM25_DIR, IDS_FILE
from query.bundle import OpenedBundle
from query.search.filters import filter_index


class RSJBM25F(scoring.BM25F):  # type: ignore[misc]  # whoosh's names are Any ([tool.mypy])
    """Whoosh BM25F with the Robertson-Sparck Jones idf ``log(1 + (N - n + 0.5) / (n + 0.5))``.

    Whoosh's default idf ``log(N / (n + 1)) + 1`` never falls below 1, so words found in nearly every
    chunk ("der", "je", "the") weigh almost as much as rare ones; this idf (Lucene's, close to SQLite
    FTS5's) drives them towards 0.  ``k1 = 1.2``, ``b = 0.75``.
    """

    def idf(self, searcher, fieldname, text):  # type: ignore[no-untyped-def]
        parent = searcher.get_parent()
        return rsj_idf(parent.doc_frequency(fieldname, text), parent.doc_count_all())


_WEIGHTING = RSJBM25F()
_PARAMS = BM25Params(k1=_WEIGHTING.K1, b=_WEIGHTING.B, field_b=dict(_WEIGHTING._field_B), idf=rsj_idf)
"""The same per-field BM25 as :data:`_WEIGHTING`, for :class:`artifacts.bm25matrix.BM25Matrix`."""


def bm25_matrix(bundle: OpenedBundle) -> BM25Matrix | None:
    """Return the bundle's BM25 matrix (``bm25/``, loaded on first use, memory-mapped), or ``None``.

    ``None`` when the bundle has none (built before feature version 2) or it does not hold exactly
    the bundle's chunks; search then scores with Whoosh.
    """
    def load() -> BM25Matrix | bool:
        if not (bundle.path / BM25_DIR).is_dir():
            return False
        try:
            ids = bundle.chunks.ids  # parsed from vectors/ids.json, usually the same bytes as bm25/chunk_ids.json
            same = ((bundle.path / IDS_FILE).read_bytes(), ids) if bundle.hnsw is not None else None  # lexical: none
            matrix = BM25Matrix.load(bundle.path / BM25_DIR, same_ids=same)
        except (MatrixFormatError, OSError):
            return False
        # bundle.chunks has one entry per vector label: a chunk embedded as several segments has
        # several, the matrix one row.  Compare the distinct chunk ids (bundle.chunk_index).
        if matrix.chunk_ids is not ids and (len(matrix.chunk_ids) != len(bundle.chunk_index)
                                            or set(matrix.chunk_ids) != bundle.chunk_index.keys()):
            return False
        return matrix  # postings are weighed per query term until warm_up() weighs them all

    found = bundle.derive("bm25_matrix", load)
    return found if isinstance(found, BM25Matrix) else None


def warm_up(bundle: OpenedBundle) -> None:
    """Prepare what searches of a long-lived bundle use: the BM25 matrix with every posting weighed, and
    the filter tables (every document's facets read).

    A server calls it once per opened bundle (about half a second on a 50k-chunk vault) so that
    requests only slice precomputed weights and the first filtered request reads no documents; a
    one-shot CLI search skips it and reads only what its query needs.
    """
    filter_index(bundle)
    matrix = bm25_matrix(bundle)
    if matrix is not None:
        with bundle.derive_lock:
            matrix.prepare(_PARAMS)


def ranking_searcher(bundle: OpenedBundle) -> Any:
    """Return the calling thread's Whoosh searcher of ``bundle``, scoring with :class:`RSJBM25F`."""
    return bundle.thread_searcher(_WEIGHTING)


class LazySearcher:
    """The calling thread's :func:`ranking_searcher`, opened on first use.

    With a BM25 matrix a query whose words are all indexed never needs Whoosh; a one-shot CLI search
    then does not read Whoosh's term index (a fifth of a second on a 50k-chunk vault).
    """

    def __init__(self, bundle: OpenedBundle) -> None:
        self._bundle = bundle

    def __getattr__(self, name: str) -> Any:
        return getattr(ranking_searcher(self._bundle), name)


def _chunk_id(bundle: OpenedBundle, searcher: Any, docnum: int) -> str:
    """Return the chunk id stored with Whoosh document ``docnum`` (cached per bundle)."""
    cache: dict[int, str] = bundle.derive("chunk_ids", dict)
    cid = cache.get(docnum)
    if cid is None:
        cid = cache[docnum] = searcher.stored_fields(docnum)["chunk_id"]
    return cid
