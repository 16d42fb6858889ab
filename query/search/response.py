"""The ``/search`` response: hybrid ranking cut to the request's limits, with snippets, sources and the envelope."""

from __future__ import annotations

import math
from typing import Any

from artifacts.records import chunk_path
from query.bundle import OpenedBundle
from query.contract import Envelope, Source, source_url
from query.search.fusion import rank_chunks
from query.search.request import SearchOptions, SearchRequest
from query.search.snippets import display_text, make_snippet, near_duplicate
from query.search.terms import _stem_prefix, query_terms
from query.search.weighting import bm25_matrix, ranking_searcher


def snippet_terms(bundle: OpenedBundle, text: str) -> tuple[dict[str, float], dict[str, float]]:
    """Return the query's folded words and stem prefixes with their idf, for :func:`query.search.snippets.make_snippet`.

    Weight ``ln(1 + N / (df + 1))`` from the body field (N chunks); a word in more than half of
    the chunks (a function word) is left out, so it is never marked.
    """
    words: dict[str, float] = {}
    prefixes: dict[str, float] = {}
    matrix = bm25_matrix(bundle)
    source: Any = matrix if matrix is not None else ranking_searcher(bundle)
    n = max(1, matrix.n_rows if matrix is not None else source.doc_count_all())
    for term in query_terms(text):
        df = source.doc_frequency("body", term.folded)
        if df > n / 2:
            continue
        weight = math.log(1 + n / (df + 1))
        words[term.folded] = weight
        stem = _stem_prefix(term.folded)
        if stem is not None:
            prefixes[stem] = weight
    return words, prefixes


MATCH_KINDS = ("lexical", "semantic", "both")
"""Values of a search result's ``match``: which retrieval arm found the chunk."""


def match_kind(info: dict[str, Any]) -> str:
    """Return which arm found a chunk, from its :func:`fuse_rankings` ``info``: ``"both"`` when it is in
    the BM25 and the vector ranking, ``"lexical"`` when in BM25's only (its words), ``"semantic"``
    when in the vector arm's only (matched by meaning: its snippet may show no query word)."""
    lexical, semantic = info.get("bm25_rank") is not None, info.get("vector_rank") is not None
    return "both" if lexical and semantic else "semantic" if semantic else "lexical"


def search(bundle: OpenedBundle, request: SearchRequest, options: SearchOptions | None = None) -> dict[str, Any]:
    """Run hybrid retrieval and return the response body (contract envelope + ``results``).

    ``results``: list of ``{rank, source_id, chunk_id, document_path, title, heading_path, text,
    snippet, source_url, score, match}`` (``score`` is the fused RRF score; ``snippet`` the chunk's
    best-matching passage with matched words in ``**``, see :mod:`query.search.snippets`; ``match``
    ``"lexical"``, ``"semantic"`` or ``"both"``, see :func:`match_kind`); with
    ``request.debug`` each result also has ``debug: {bm25_rank, bm25_score, vector_rank,
    vector_score, vector_weight, fused_score, anchor}``.
    ``engines``: the arms that ran (:func:`engines_used`); ``warnings``: sentences about the answer's
    basis, e.g. :data:`LEXICAL_WARNING` when the served bundle has no vectors yet (then every result is
    ``lexical``).
    ``complete`` is null (a ranking is never provably exhaustive); ``truncated`` lists the limits
    that cut results.  A document's further chunk whose snippet is a near-duplicate of one already
    shown for it (:func:`query.search.snippets.near_duplicate`: overlapping chunks cut around the same
    matches) is skipped like one over ``max_per_document`` (``per_document_limit``).
    """
    opts = options or SearchOptions()
    depth = max(opts.candidates, request.limit * request.max_per_document * 2)
    ranking = rank_chunks(bundle, request.query, depth=depth, published_only=request.published_only,
                          flt=request.filter, options=opts)
    fused = ranking.fused_scores

    reasons: list[str] = []
    if ranking.bm25_full:
        reasons.append("candidate_limit")
    per_doc: dict[str, list[str]] = {}  # document path -> snippets of its chosen chunks
    chosen: list[str] = []
    snippets: dict[str, str] = {}
    dropped_per_doc = False
    terms: tuple[dict[str, float], dict[str, float]] | None = None
    for cid in ranking.fused:  # chunk records are read for the results only
        shown = per_doc.setdefault(chunk_path(cid), [])
        if len(shown) >= request.max_per_document:
            dropped_per_doc = True
            continue
        if len(chosen) == request.limit:
            reasons.append("result_limit")
            break
        if terms is None:
            terms = snippet_terms(bundle, request.query)
        snippet = make_snippet(bundle.chunks[bundle.chunk_index[cid]].text, *terms)
        if any(near_duplicate(snippet, other) for other in shown):
            dropped_per_doc = True  # overlapping chunks of one passage: the better-ranked one is shown
            continue
        shown.append(snippet)
        snippets[cid] = snippet
        chosen.append(cid)
    if dropped_per_doc:
        reasons.append("per_document_limit")

    sources: dict[str, Source] = {}
    results = []
    for rank, cid in enumerate(chosen, start=1):
        chunk = bundle.chunks[bundle.chunk_index[cid]]
        url = source_url(opts.base_url, chunk.path, bundle.manifest.commit)
        if chunk.path not in sources:  # a chunk carries its document's title: no document record is parsed
            sources[chunk.path] = Source(source_id=f"S{len(sources) + 1}", document_path=chunk.path,
                                         source_url=url, title=chunk.title)
        result = {
            "rank": rank,
            "source_id": sources[chunk.path].source_id,
            "chunk_id": cid,
            "document_path": chunk.path,
            "title": " ".join(display_text(chunk.title, tables=False).split()) or chunk.title,
            "heading_path": [" ".join(display_text(h, tables=False).split()) for h in chunk.heading_path],
            "text": chunk.text,
            "snippet": snippets[cid],
            "source_url": url,
            "score": round(fused[cid], 6),
            "match": match_kind(ranking.info.get(cid, {})),
        }
        if request.debug:
            result["debug"] = {**ranking.info[cid], "fused_score": round(fused[cid], 6),
                               "anchor": bool(ranking.info[cid].get("anchor"))}
        results.append(result)

    envelope = Envelope(
        status="ok" if results else "no_answer",
        reason=None if results else "no_matching_sources",
        sources=list(sources.values()),
        index_version=bundle.index_version,
        complete=None,
        truncated=bool(reasons),
        truncation_reasons=sorted(set(reasons)),
    )
    body = envelope.model_dump(mode="json")
    body["engines"] = engines_used(bundle)
    body["warnings"] = engine_warnings(bundle)
    body["results"] = results
    return body


LEXICAL_WARNING = ("The vectors of this commit are still being computed: results come from BM25 (words) only; "
                   "hybrid search follows by itself when the complete bundle is published.")
"""The warning of a response served by a lexical bundle (published before its vectors)."""


def engines_used(bundle: OpenedBundle) -> list[str]:
    """The retrieval arms a hybrid request runs on ``bundle``: ``["bm25", "vector"]``, or ``["bm25"]`` when lexical."""
    return list(bundle.engines)


def engine_warnings(bundle: OpenedBundle) -> list[str]:
    """Warnings about the arms of ``bundle``: ``[LEXICAL_WARNING]`` when it has no vectors yet, else ``[]``."""
    return [] if "vector" in bundle.engines else [LEXICAL_WARNING]
