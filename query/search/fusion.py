"""Hybrid ranking: run the BM25 and vector arms and fuse them by weighted Reciprocal Rank Fusion.

The two rankings are fused by weighted RRF (the vector weight scaled per query by
:func:`query.search.confidence.vector_confidence`); the lexical anchor (:mod:`query.search.anchor`)
then may move one document to the top.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from artifacts.analysis import normalize_text
from artifacts.records import chunk_path
from query.bundle import OpenedBundle
from query.search.anchor import apply_anchor, lexical_anchor
from query.search.bm25 import bm25_ranking
from query.search.confidence import vector_confidence
from query.search.filters import allowed_paths
from query.search.request import SearchFilter, SearchOptions
from query.search.terms import expand_words, query_terms
from query.search.vectors import vector_ranking
from query.search.weighting import LazySearcher


@dataclass
class Ranking:
    """Per-arm and fused chunk rankings of one query (chunk ids, best first)."""

    bm25: list[tuple[str, float]]
    vector: list[tuple[str, float]]
    fused: list[str]
    fused_scores: dict[str, float]
    info: dict[str, dict[str, Any]] = field(default_factory=dict)
    bm25_full: bool = False
    anchor: str | None = None

    def chunk_ids(self, engine: str) -> list[str]:
        """Return the chunk ids of ``engine`` (``bm25``, ``vector`` or ``hybrid``), best first."""
        if engine == "bm25":
            return [cid for cid, _ in self.bm25]
        if engine == "vector":
            return [cid for cid, _ in self.vector]
        if engine == "hybrid":
            return self.fused
        raise ValueError(f"unknown engine {engine!r}")


def fuse_rankings(bundle: OpenedBundle, bm25: list[tuple[str, float]], dense: list[tuple[str, float]],
                  opts: SearchOptions, n_docs: int | None = None,
                  ) -> tuple[list[str], dict[str, float], dict[str, dict[str, Any]]]:
    """Fuse two chunk rankings by weighted RRF; return ``(chunk ids best first, fused score, debug info)``.

    ``opts.fusion_level == "chunk"``: a chunk scores ``sum(weight / (rrf_k + its rank in the arm))``.
    ``"document"``: each arm is first collapsed to a document ranking (a document takes the rank of
    its best chunk in that arm), documents are fused by the same formula, and chunks are ordered by
    their document's fused score, then by their own chunk-level score.  Document-level fusion lets
    two arms that agree on a document but prefer different chunks of it reinforce each other.
    With ``opts.vector_confidence`` the vector weight is scaled by :func:`vector_confidence` (the
    arms' agreement beyond chance on this query; ``n_docs``: documents the query can reach, default
    all), so an arm that carries no signal cannot reorder
    BM25's ranking (blind RRF let an English model on a Cyrillic corpus pull hybrid 0.016 nDCG@10
    below BM25).
    ``info[cid]`` holds ``bm25_rank``, ``bm25_score``, ``vector_rank``, ``vector_score`` (chunk level)
    and ``vector_weight`` (the weight the dense arm got for this query).
    """
    chunk_score: dict[str, float] = {}
    doc_score: dict[str, float] = {}
    info: dict[str, dict[str, Any]] = {}
    vector_weight = opts.vector_weight
    if opts.vector_confidence and dense and bm25:
        bm25_docs = top_documents(bundle, (cid for cid, _ in bm25), len(bm25))
        dense_docs = top_documents(bundle, (cid for cid, _ in dense), len(dense))
        vector_weight *= vector_confidence(bm25_docs, dense_docs, n_docs or len(bundle.docs),
                                           opts.confidence_z_none, opts.confidence_z_full,
                                           top_floor=opts.confidence_top_floor,
                                           top_depth=opts.confidence_top_depth)
    shown_weight = round(vector_weight, 4)
    rrf_k = opts.rrf_k
    for arm, hits, weight in (("bm25", bm25, opts.bm25_weight), ("vector", dense, vector_weight)):
        doc_rank: dict[str, int] = {}
        rank_key, score_key = f"{arm}_rank", f"{arm}_score"
        for rank, (cid, score) in enumerate(hits, start=1):
            chunk_score[cid] = chunk_score.get(cid, 0.0) + weight / (rrf_k + rank)
            entry = info.get(cid)
            if entry is None:
                entry = info[cid] = {"bm25_rank": None, "bm25_score": None, "vector_rank": None,
                                     "vector_score": None, "vector_weight": shown_weight}
            entry[rank_key] = rank
            entry[score_key] = round(score, 6)
            path = chunk_path(cid)
            if path not in doc_rank:
                doc_rank[path] = len(doc_rank) + 1
                doc_score[path] = doc_score.get(path, 0.0) + weight / (rrf_k + doc_rank[path])
    if opts.fusion_level == "chunk":
        return sorted(chunk_score, key=lambda cid: (-chunk_score[cid], cid)), chunk_score, info

    order = sorted(chunk_score, key=lambda cid: (-doc_score[chunk_path(cid)], -chunk_score[cid], cid))
    fused = {cid: doc_score[chunk_path(cid)] for cid in order}
    return order, fused, info


def top_documents(bundle: OpenedBundle, chunk_ids: Iterable[str], n: int) -> list[str]:
    """Return the first ``n`` distinct document paths of a chunk ranking, in order of their best chunk."""
    paths: list[str] = []
    seen: set[str] = set()
    for cid in chunk_ids:
        path = chunk_path(cid)
        if path not in seen:
            seen.add(path)
            paths.append(path)
            if len(paths) == n:
                break
    return paths


def rank_chunks(bundle: OpenedBundle, text: str, *, depth: int, published_only: bool = True,
                flt: SearchFilter | None = None, options: SearchOptions | None = None,
                engines: tuple[str, ...] = ("bm25", "vector")) -> Ranking:
    """Run the requested arms for ``text`` and fuse them; return every ranking (see :class:`Ranking`).

    ``depth``: chunks taken from each arm.  An arm not in ``engines`` is skipped (empty ranking).
    """
    opts = (options or SearchOptions()).for_bundle(bundle.manifest.fusion)
    text = normalize_text(text).strip()
    paths = allowed_paths(bundle, flt, published_only)
    terms = query_terms(text)
    bm25: list[tuple[str, float]] = []
    bm25_full = False
    if "bm25" in engines and terms and paths != set():
        words = expand_words(bundle, LazySearcher(bundle), terms, typo=opts.typo_tolerance)
        bm25, bm25_full = bm25_ranking(bundle, text, depth, published_only, flt=flt, options=opts, paths=paths,
                                       words=words)
    dense: list[tuple[str, float]] = []
    if "vector" in engines:
        dense = vector_ranking(bundle, text, depth, published_only, paths=paths)

    order, fused, info = fuse_rankings(bundle, bm25, dense, opts, len(paths) if paths is not None else None)

    anchor = None
    if opts.anchor and bm25:
        anchor = lexical_anchor(bundle, text, paths, published_only, opts.anchor_max_chunks, terms)
        if anchor is not None and anchor not in top_documents(bundle, (c for c, _ in bm25), opts.anchor_bm25_rank):
            anchor = None
        if anchor is not None:
            apply_anchor(bundle, anchor, bm25, order, fused, info)
    return Ranking(bm25=bm25, vector=dense, fused=order, fused_scores=fused, info=info,
                   bm25_full=bm25_full, anchor=anchor)
