"""Hybrid retrieval: BM25 (Whoosh) + dense (hnswlib), fused by weighted Reciprocal Rank Fusion."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, Field, ValidationError, field_validator
from whoosh import query as wq

from artifacts.analysis import (
    EXACT_FIELDS,
    FIELD_BOOSTS,
    FOLDED_FIELDS,
    exact_analyzer,
    folding_analyzer,
    normalize_text,
)

from .bundle import OpenedBundle
from .contract import Envelope, Source
from .errors import InvalidQueryError, InvalidRequestError

MAX_QUERY_CHARS = 1000
MAX_QUERY_TERMS = 64


class SearchRequest(BaseModel):
    """Body of ``POST /search`` and the options of ``gitrag search``.

    ``limit``: results returned (1..100); ``max_per_document``: results per document (1..100);
    ``published_only``: exclude documents whose front matter says ``published: false``;
    ``debug``: add per-arm ranks and scores to each result.
    """

    model_config = {"extra": "forbid"}

    query: str
    limit: int = Field(10, ge=1, le=100)
    max_per_document: int = Field(3, ge=1, le=100)
    published_only: bool = True
    debug: bool = False

    @field_validator("query", mode="before")
    @classmethod
    def _query_is_text(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError("query must be a string")
        return value


class SearchOptions(BaseModel):
    """Server-side retrieval settings (not per request): RRF k, per-arm weights, candidate depth."""

    rrf_k: int = 60
    bm25_weight: float = 1.0
    vector_weight: float = 1.0
    any_term_weight: float = 0.5
    candidates: int = 100
    base_url: str | None = None


def parse_search_request(payload: Any) -> SearchRequest:
    """Validate a decoded JSON payload as a :class:`SearchRequest`.

    Raises :class:`InvalidQueryError` for a missing, non-string, empty or oversized query and
    :class:`InvalidRequestError` for any other problem (wrong types, unknown fields).
    """
    if not isinstance(payload, dict):
        raise InvalidRequestError("body must be a JSON object")
    query = payload.get("query")
    if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY_CHARS:
        raise InvalidQueryError("query must be a non-empty string of at most 1000 characters")
    try:
        return SearchRequest.model_validate(payload)
    except ValidationError as exc:
        raise InvalidRequestError("invalid search request") from exc


def source_url(base_url: str | None, path: str) -> str | None:
    """Return ``base_url`` joined with the URL-quoted document path, or ``None`` without a base URL."""
    if not base_url:
        return None
    return base_url.rstrip("/") + "/" + quote(path)


def _terms(text: str, analyzer) -> list[str]:  # type: ignore[no-untyped-def]
    seen: list[str] = []
    for token in analyzer(text):
        if token.text not in seen:
            seen.append(token.text)
    return seen[:MAX_QUERY_TERMS]


def build_text_queries(text: str) -> tuple[wq.Query | None, wq.Query | None]:
    """Return (all_terms, any_term) Whoosh queries for ``text`` over the folded and exact fields.

    Each query word matches any field: folded fields take the folded form, exact fields the form
    with diacritics, so exact spelling adds score without being required.
    """
    folded = _terms(text, folding_analyzer())
    exact = _terms(text, exact_analyzer())
    if not folded:
        return None, None
    per_word = []
    for i, term in enumerate(folded):
        options: list[wq.Query] = [wq.Term(f, term, boost=FIELD_BOOSTS[f]) for f in FOLDED_FIELDS]
        if i < len(exact):
            options += [wq.Term(f, exact[i], boost=FIELD_BOOSTS[f]) for f in EXACT_FIELDS]
        per_word.append(wq.Or(options))
    return wq.And(per_word), wq.Or(per_word)


def bm25_ranking(bundle: OpenedBundle, text: str, depth: int, published_only: bool,
                 any_term_weight: float) -> tuple[list[tuple[str, float]], bool]:
    """Return BM25 hits as ``[(chunk_id, score)]`` best first, and whether ``depth`` was reached.

    Strategy cascade: chunks matching all terms first, then chunks matching any term (their scores
    scaled by ``any_term_weight``).
    """
    all_q, any_q = build_text_queries(text)
    if all_q is None:
        return [], False
    flt = wq.NumericRange("published", 1, 1) if published_only else None
    hits: list[tuple[str, float]] = []
    seen: set[str] = set()
    hit_depth = False
    with bundle.text_lock:
        searcher = bundle.searcher
        for q, weight in ((all_q, 1.0), (any_q, any_term_weight)):
            results = searcher.search(q, limit=depth + 1, filter=flt, scored=True)  # type: ignore[attr-defined]
            if len(results) > depth:
                hit_depth = True
            for hit in results[:depth]:
                cid = hit["chunk_id"]
                if cid not in seen:
                    seen.add(cid)
                    hits.append((cid, float(hit.score) * weight))
            if len(hits) >= depth:
                break
    return hits[:depth], hit_depth


def vector_ranking(bundle: OpenedBundle, text: str, depth: int, published_only: bool) -> list[tuple[str, float]]:
    """Return dense hits as ``[(chunk_id, cosine similarity)]`` best first (at most ``depth``)."""
    n = len(bundle.chunks)
    if n == 0 or bundle.embedder is None:
        return []
    qvec = bundle.embedder.embed_query(text)
    k = min(n, depth * 2 if published_only else depth)
    bundle.hnsw.set_ef(max(k, 100))
    labels, distances = bundle.hnsw.knn_query(qvec.reshape(1, -1), k=k)
    hits = []
    for label, dist in zip(labels[0], distances[0], strict=True):
        chunk = bundle.chunks[int(label)]
        if published_only and not chunk.published:
            continue
        hits.append((chunk.chunk_id, 1.0 - float(dist)))  # ip space: distance = 1 - dot
    return hits[:depth]


def search(bundle: OpenedBundle, request: SearchRequest, options: SearchOptions | None = None) -> dict[str, Any]:
    """Run hybrid retrieval and return the response body (contract envelope + ``results``).

    ``results``: list of ``{rank, source_id, chunk_id, document_path, title, heading_path, text,
    source_url, score}`` (``score`` is the fused RRF score); with ``request.debug`` each result also
    has ``debug: {bm25_rank, bm25_score, vector_rank, vector_score}``.  ``complete`` is null (a
    ranking is never provably exhaustive); ``truncated`` lists the limits that cut results.
    """
    opts = options or SearchOptions()
    text = normalize_text(request.query).strip()
    depth = max(opts.candidates, request.limit * request.max_per_document * 2)
    bm25, bm25_full = bm25_ranking(bundle, text, depth, request.published_only, opts.any_term_weight)
    dense = vector_ranking(bundle, text, depth, request.published_only)

    fused: dict[str, float] = {}
    info: dict[str, dict[str, Any]] = {}
    for arm, hits, weight in (("bm25", bm25, opts.bm25_weight), ("vector", dense, opts.vector_weight)):
        for rank, (cid, score) in enumerate(hits, start=1):
            fused[cid] = fused.get(cid, 0.0) + weight / (opts.rrf_k + rank)
            entry = info.setdefault(cid, {"bm25_rank": None, "bm25_score": None, "vector_rank": None,
                                          "vector_score": None})
            entry[f"{arm}_rank"] = rank
            entry[f"{arm}_score"] = round(score, 6)
    order = sorted(fused, key=lambda cid: (-fused[cid], cid))

    reasons: list[str] = []
    if bm25_full:
        reasons.append("candidate_limit")
    per_doc: dict[str, int] = {}
    chosen: list[str] = []
    dropped_per_doc = False
    for cid in order:
        chunk = bundle.chunks[bundle.chunk_index[cid]]
        if per_doc.get(chunk.path, 0) >= request.max_per_document:
            dropped_per_doc = True
            continue
        if len(chosen) == request.limit:
            reasons.append("result_limit")
            break
        per_doc[chunk.path] = per_doc.get(chunk.path, 0) + 1
        chosen.append(cid)
    if dropped_per_doc:
        reasons.append("per_document_limit")

    sources: dict[str, Source] = {}
    results = []
    for rank, cid in enumerate(chosen, start=1):
        chunk = bundle.chunks[bundle.chunk_index[cid]]
        doc = bundle.docs.get(chunk.path)
        url = source_url(opts.base_url, chunk.path)
        if chunk.path not in sources:
            sources[chunk.path] = Source(source_id=f"S{len(sources) + 1}", document_path=chunk.path,
                                         source_url=url, title=doc.title if doc else chunk.title)
        result = {
            "rank": rank,
            "source_id": sources[chunk.path].source_id,
            "chunk_id": cid,
            "document_path": chunk.path,
            "title": chunk.title,
            "heading_path": chunk.heading_path,
            "text": chunk.text,
            "source_url": url,
            "score": round(fused[cid], 6),
        }
        if request.debug:
            result["debug"] = info[cid]
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
    body["results"] = results
    return body
