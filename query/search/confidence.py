"""Dense-arm confidence: how far one query's vector ranking agrees with BM25's beyond chance.

Used by :func:`query.search.fusion.fuse_rankings` to scale the vector arm's RRF weight per query.
"""

from __future__ import annotations

import math

CONFIDENCE_DEPTH = 10
"""Documents of each arm compared by :func:`vector_confidence`."""
CONFIDENCE_Z = (3.0, 5.0)
"""Agreement z-scores (against chance) up to which the dense arm gets no weight, and from which it
gets its whole weight (:func:`vector_confidence`).  Measured with ``bench/fusion_sweep.py --dump`` on
thesis-wiki gold with MiniLM (a weak arm, vector nDCG@10 0.37): blind RRF was 0.026 below BM25 on the
test split; (1, 2.5) still 0.018 below; (3, 5) 0.0005 below on test and equal to BM25 on dev."""
CONFIDENCE_TOP_FLOOR = 0.5
"""Least dense-arm confidence when the arm's best document is among BM25's best
:data:`CONFIDENCE_DEPTH` documents (:func:`vector_confidence`, ``top_floor``).  Measured with
``bench/fusion_sweep.py --from-dump`` on the README's sets (MiniLM: all; e5: all but obsidian-desc
en/cs/pl/de): hybrid stays within 0.0019 of BM25 (MiniLM, thesis dev) and gives e5 about half
of what the confidence took from it on xquad-de (test 0.9475 -> 0.9559; blind RRF 0.9680); a
floor of 1.0 puts MiniLM 0.014 below BM25 on thesis test."""


def vector_confidence(bm25_docs: list[str], vector_docs: list[str], n_docs: int,
                      z_none: float = CONFIDENCE_Z[0], z_full: float = CONFIDENCE_Z[1],
                      depth: int = CONFIDENCE_DEPTH, top_floor: float = 0.0,
                      top_depth: int = CONFIDENCE_DEPTH) -> float:
    """Return how much the dense arm's ranking of one query can be trusted, in [0, 1].

    The arms' agreement is tested against chance: ``o`` of the dense arm's best ``depth`` documents
    are among BM25's best ``depth``; for two unrelated rankings of ``n_docs`` documents ``o`` is
    hypergeometric with mean ``e = |B| |V| / n`` and variance ``e (1 - |B|/n) (n - |V|) / (n - 1)``;
    ``z = (o - e) / sd``.  The result is 0 up to ``z_none``, 1 from ``z_full``, linear between.  A
    model that reads the text shares part of BM25's top ten for almost every query (even when it
    lifts a page BM25 ranks low), while a model that cannot read it (an English model on Cyrillic
    text) agrees only by chance.  Being built on ranks, it does not depend on a model's similarity
    scale.  ``bm25_docs``/``vector_docs``: document paths, best first; ``n_docs``: documents the
    query can reach.  Without BM25 documents, in a corpus of fewer than ``2 * depth`` documents (too
    small to tell agreement from chance) or when chance alone fills the overlap: 1 (plain RRF).
    ``top_floor`` (0 = off): when the dense arm's best document is among BM25's best ``top_depth``
    documents, the confidence is at least ``top_floor`` (an arm whose favourite BM25 also finds
    plausible may reorder BM25's top; an arm without signal hits it with probability
    ``top_depth / n_docs`` only).
    """
    b = set(bm25_docs[:depth])
    v = set(vector_docs[:depth])
    n = max(n_docs, len(b | v))
    if not b or not v or n < 2 * depth:
        return 1.0
    floor = top_floor if top_floor > 0 and vector_docs[0] in bm25_docs[:top_depth] else 0.0
    expected = len(b) * len(v) / n
    variance = expected * (1 - len(b) / n) * (n - len(v)) / (n - 1)
    if variance <= 1e-9:
        return 1.0
    z = (len(b & v) - expected) / math.sqrt(variance)
    return max(floor, min(1.0, (z - z_none) / (z_full - z_none)))
