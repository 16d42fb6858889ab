"""The BM25 arm: strategies ``all_terms``, ``prefix_terms`` and ``any_term`` over the folded and exact fields.

BM25 (Whoosh BM25F with the Robertson-Sparck Jones idf) runs three strategies over the folded and
exact fields (see :mod:`artifacts.analysis`): ``all_terms`` (every query word must match),
``prefix_terms`` (every word must match, inflected forms through a stem prefix) and ``any_term``
(at least one word); a chunk's score is its best strategy score scaled by the strategy's weight, so
stricter matches rank first and ``any_term`` counts least.
"""

from __future__ import annotations

from typing import Any, Literal

from whoosh import query as wq

from artifacts.bm25matrix import BM25Matrix, UnsupportedQuery, top_rows
from query.bundle import OpenedBundle
from query.errors import RetrievalUnavailableError
from query.search.filters import allowed_docnums, allowed_paths, allowed_rows
from query.search.request import SearchFilter, SearchOptions
from query.search.terms import QueryWord, build_text_queries, expand_words, query_terms
from query.search.weighting import _PARAMS, LazySearcher, _chunk_id, bm25_matrix, ranking_searcher


def bm25_ranking(bundle: OpenedBundle, text: str, depth: int, published_only: bool, any_term_weight: float = 0.5,
                 *, flt: SearchFilter | None = None, options: SearchOptions | None = None,
                 paths: set[str] | None = None, words: list[QueryWord] | None = None,
                 engine: Literal["auto", "matrix", "whoosh"] = "auto",
                 ) -> tuple[list[tuple[str, float]], bool]:
    """Return BM25 hits as ``[(chunk_id, score)]`` best first, and whether ``depth`` was reached.

    Strategies ``all_terms``, ``prefix_terms`` and ``any_term`` run in that order; a chunk's score is
    the best of its strategy scores, each scaled by the strategy's weight (1, ``prefix_weight``,
    ``any_term_weight``), so a chunk matching every word outranks one with a similar BM25 score that
    matches only some.  ``prefix_terms`` runs only for queries of at most
    :data:`MAX_PREFIX_QUERY_TERMS` words (keyword queries, where inflection matters).
    ``words``: the query's words already expanded by :func:`expand_words` (else done here).
    ``engine``: ``"matrix"`` scores the strategies' query trees on the bundle's BM25 matrix
    (:func:`bm25_matrix`), ``"whoosh"`` with Whoosh's matchers, ``"auto"`` (default) the matrix
    when the bundle has one and every node of the trees is one it evaluates, else Whoosh.  Both
    give the same scores (to the last bits of a sum) and the same ranking.
    """
    opts = options or SearchOptions(any_term_weight=any_term_weight)
    if paths is None and flt is not None and not flt.is_empty():
        paths = allowed_paths(bundle, flt, published_only)
    if paths is not None and not paths:
        return [], False
    weights = {"all_terms": 1.0, "prefix_terms": opts.prefix_weight, "any_term": opts.any_term_weight}
    if words is None:
        words = expand_words(bundle, LazySearcher(bundle), query_terms(text), typo=opts.typo_tolerance)
    strategies = build_text_queries(words)
    found: list[tuple[str, list[tuple[float, str]], int]] | None = None
    matrix = bm25_matrix(bundle) if engine != "whoosh" else None
    if engine == "matrix" and matrix is None:
        raise RetrievalUnavailableError("bundle has no BM25 matrix")
    if matrix is not None:
        try:
            found = _matrix_strategies(bundle, matrix, strategies, depth, paths, published_only)
        except UnsupportedQuery:
            if engine == "matrix":
                raise
    if found is None:
        searcher = ranking_searcher(bundle)
        allow = allowed_docnums(bundle, searcher, paths, published_only)
        if allow is not None and not allow:  # Whoosh reads an empty filter as "no filter"
            return [], False
        found = []
        for name, q in strategies:
            results = searcher.search(q, limit=depth + 1, filter=allow, scored=True)
            found.append((name, [(float(score), _chunk_id(bundle, searcher, docnum))
                                 for score, docnum in results.top_n[:depth]], results.scored_length()))
    best: dict[str, float] = {}
    hit_depth = False
    for name, hits, matched in found:
        hit_depth = hit_depth or matched > depth
        for score, cid in hits:
            score = score * weights[name]
            if score > best.get(cid, -1.0):
                best[cid] = score
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:depth], hit_depth or len(ranked) > depth


def _matrix_strategies(bundle: OpenedBundle, matrix: BM25Matrix, strategies: list[tuple[str, wq.Query]],
                       depth: int, paths: set[str] | None, published_only: bool,
                       ) -> list[tuple[str, list[tuple[float, str]], int]]:
    """Score ``strategies`` on ``matrix``: per strategy its best ``depth`` ``(score, chunk_id)`` and its match count.

    Raises :class:`UnsupportedQuery` (before any result) when a tree holds a node the matrix does not evaluate.
    """
    memo: dict[Any, Any] = {}  # the strategies share their per-word subtrees
    scored = [(name, matrix.evaluate(q, _PARAMS, memo)) for name, q in strategies]
    allow = allowed_rows(bundle, matrix, paths, published_only)
    ids = matrix.chunk_ids
    found = []
    for name, hits in scored:
        rows, scores, matched = top_rows(hits, depth, allow)
        found.append((name, [(float(sc), ids[r]) for r, sc in zip(rows.tolist(), scores.tolist(), strict=True)],
                      min(matched, depth + 1)))
    return found
