"""The lexical anchor: a document that a rare query word (or a quoted phrase) points to alone goes first.

It moves a document to the top when a rare query word (or a quoted phrase) occurs in that one
document only and BM25 itself ranks that document among its best ``anchor_bm25_rank`` documents
(by default: first).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from whoosh import query as wq

from artifacts.analysis import fold, normalize_text
from artifacts.records import chunk_path
from query.bundle import OpenedBundle
from query.errors import RetrievalUnavailableError
from query.search.filters import allowed_docnums, allowed_rows
from query.search.terms import QueryTerm, query_terms
from query.search.weighting import _chunk_id, bm25_matrix, ranking_searcher

_PHRASE = re.compile(r'"([^"]+)"|„([^“”"]+)[“”"]')


PHRASE_ANCHOR_MAX_CHUNKS = 64
"""A quoted phrase is checked only when at most this many chunks hold all its words (else too common to anchor)."""


def _anchor_word(word: str) -> bool:
    """Return whether a folded query word is long enough to anchor (4+ characters, 3+ with a digit)."""
    return len(word) >= 4 or (len(word) >= 3 and any(ch.isdigit() for ch in word))


def lexical_anchor(bundle: OpenedBundle, text: str, paths: set[str] | None, published_only: bool, max_chunks: int,
                   terms: list[QueryTerm] | None = None, *,
                   engine: Literal["auto", "matrix", "whoosh"] = "auto") -> str | None:
    """Return the one document path that all rare query words / quoted phrases point to, or ``None``.

    A word is rare when at most ``max_chunks`` chunks contain it (in the title or body) and all of
    them belong to one document; a quoted phrase counts when its chunks belong to one document
    (phrases whose words share more than :data:`PHRASE_ANCHOR_MAX_CHUNKS` chunks never anchor).
    Words shorter than 4 characters (3 when they hold a digit) never anchor.  ``paths`` /
    ``published_only``: the documents the request may match (:func:`allowed_paths`); ``terms``:
    the query's terms when already computed.  ``engine`` as in :func:`bm25_ranking` (the matrix
    reads the same postings without a Whoosh search per word).
    """
    terms = terms if terms is not None else query_terms(text)
    matrix = bm25_matrix(bundle) if engine != "whoosh" else None
    if engine == "matrix" and matrix is None:
        raise RetrievalUnavailableError("bundle has no BM25 matrix")
    if matrix is not None:
        allow_rows = allowed_rows(bundle, matrix, paths, published_only)

        def rows_ids(rows: np.ndarray) -> list[str]:
            rows = rows if allow_rows is None else rows[allow_rows[rows]]
            return [matrix.chunk_ids[r] for r in rows.tolist()]

        def word_df(word: str) -> int:
            return matrix.doc_frequency("title", word) + matrix.doc_frequency("body", word)

        def word_chunks(word: str, limit: int) -> list[str]:
            return rows_ids(np.union1d(matrix.term_rows("title", word), matrix.term_rows("body", word)))

        def phrase_chunks(words: list[str], limit: int) -> list[str]:
            rows = matrix.term_rows("body", words[0])
            for w in words[1:]:
                rows = np.intersect1d(rows, matrix.term_rows("body", w), assume_unique=True)
            return rows_ids(rows)

        return _anchor_document(bundle, text, terms, max_chunks, word_df, word_chunks, phrase_chunks)
    searcher: Any = ranking_searcher(bundle)
    allow = allowed_docnums(bundle, searcher, paths, published_only)
    if allow is not None and not allow:  # Whoosh reads an empty filter as "no filter"
        return None

    def search_ids(q: wq.Query, limit: int, scored: bool) -> list[str]:
        # At most limit + 1 ids: more than ``limit`` says "too many" as the matrix's full list does.
        results = searcher.search(q, limit=limit + 1, filter=allow, scored=scored)
        return [_chunk_id(bundle, searcher, n) for _, n in results.top_n]

    def whoosh_df(word: str) -> int:
        df: int = searcher.doc_frequency("title", word) + searcher.doc_frequency("body", word)
        return df

    def whoosh_word_chunks(word: str, limit: int) -> list[str]:
        return search_ids(wq.Or([wq.Term("title", word), wq.Term("body", word)]), limit, True)

    def whoosh_phrase_chunks(words: list[str], limit: int) -> list[str]:
        # Phrases are checked on the chunk text rather than with Whoosh position queries, whose
        # position decoding is not reliable in whoosh-ng 5.4.
        return search_ids(wq.And([wq.Term("body", w) for w in words]), limit, False)

    return _anchor_document(bundle, text, terms, max_chunks, whoosh_df, whoosh_word_chunks, whoosh_phrase_chunks)


def _anchor_document(bundle: OpenedBundle, text: str, terms: list[QueryTerm], max_chunks: int,
                     word_df: Callable[[str], int], word_chunks: Callable[[str, int], list[str]],
                     phrase_chunks: Callable[[list[str], int], list[str]]) -> str | None:
    """The rule of :func:`lexical_anchor`, over one engine's lookups.

    ``word_df(word)``: chunks holding the word in title or body, unfiltered; ``word_chunks(word,
    limit)`` / ``phrase_chunks(words, limit)``: ids of the allowed chunks holding the word (title or
    body) / all the words (body), where more than ``limit`` ids means "too many".
    """
    docs: set[str] = set()
    for term in terms:
        word = term.folded
        if not _anchor_word(word) or not 0 < word_df(word) <= max_chunks:
            continue
        ids = word_chunks(word, max_chunks)
        if 0 < len(ids) <= max_chunks:
            found = {chunk_path(chunk_id) for chunk_id in ids}
            if len(found) == 1:
                docs |= found
    for match in _PHRASE.finditer(normalize_text(text)):
        phrase = fold(match.group(1) or match.group(2))
        words = phrase.split()
        if len(words) < 2:
            continue
        ids = phrase_chunks(words, PHRASE_ANCHOR_MAX_CHUNKS)
        if len(ids) > PHRASE_ANCHOR_MAX_CHUNKS:
            continue
        found = {chunk.path for chunk in (bundle.chunks[bundle.chunk_index[i]] for i in ids)
                 if phrase in fold(chunk.text)}
        if len(found) == 1:
            docs |= found
    return docs.pop() if len(docs) == 1 else None


def apply_anchor(bundle: OpenedBundle, anchor: str, bm25: list[tuple[str, float]], order: list[str],
                 fused: dict[str, float], info: dict[str, dict[str, Any]]) -> None:
    """Move the anchored document's best BM25 chunk to the front of ``order`` (in place).

    Its fused score is raised to at least the next chunk's; ``info[chunk]["anchor"]`` is set.  The
    other chunks keep their fused order.  Nothing changes when BM25 has no chunk of ``anchor``.
    """
    best = next((cid for cid, _ in bm25 if chunk_path(cid) == anchor), None)
    if best is None:
        return
    order.remove(best)
    order.insert(0, best)
    if len(order) > 1:
        fused[best] = max(fused[best], fused[order[1]])
    info[best]["anchor"] = True
