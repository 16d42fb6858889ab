"""Hybrid retrieval: BM25 (Whoosh) + dense (hnswlib), fused by weighted Reciprocal Rank Fusion.

BM25 (Whoosh BM25F with the Robertson-Sparck Jones idf) runs three strategies over the folded and
exact fields (see :mod:`artifacts.analysis`): ``all_terms`` (every query word must match),
``prefix_terms`` (every word must match, inflected forms through a stem prefix) and ``any_term``
(at least one word); a chunk's score is its best strategy score scaled by the strategy's weight, so
stricter matches rank first and ``any_term`` counts least.  A query word that occurs nowhere in the
index is expanded to the indexed words within edit distance 1 (2 for words of 8+ letters) or one swap
of neighbouring letters, so a typo still finds its page while a clean query is left untouched.
The dense arm is a cosine k-NN over hnswlib.
The two rankings are fused by weighted RRF; a *lexical anchor* then moves a document to the top
when a rare query word (or a quoted phrase) occurs in that one document only and BM25 itself ranks
that document among its best ``anchor_bm25_rank`` documents (by default: first).
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, Field, field_validator
from whoosh import query as wq
from whoosh import scoring

from artifacts.analysis import (
    EXACT_FIELDS,
    FIELD_BOOSTS,
    FOLDED_FIELDS,
    exact_analyzer,
    fold,
    fold_token,
    normalize_text,
)
from artifacts.bm25matrix import BM25Matrix, BM25Params, MatrixFormatError, UnsupportedQuery, rsj_idf, top_rows
from artifacts.layout import BM25_DIR, IDS_FILE
from artifacts.records import chunk_path
from query.bundle import OpenedBundle
from query.contract import Envelope, Source, source_url, validate_request
from query.errors import RetrievalUnavailableError
from query.search.snippets import display_text, make_snippet, near_duplicate

MAX_QUERY_CHARS = 1000
MAX_QUERY_TERMS = 64
MAX_PREFIX_QUERY_TERMS = 6
MAX_STEM_FORMS = 0
"""In a query of more than :data:`MAX_PREFIX_QUERY_TERMS` words, a word's stem prefix is used only
when it expands to at most this many indexed words in every prefix field, so that a long query
scores at most ``MAX_QUERY_TERMS * len(PREFIX_FIELDS) * MAX_STEM_FORMS`` expanded terms (on the BM25
matrix: as many posting columns).  0 (the default) turns the stem prefixes of long queries off:
with 64 the BM25 arm gains 0.008-0.065 nDCG@10 on obsidian-desc en/cs/pl/de/ru, but the MiniLM
hybrid of the thesis test set falls 0.009 below its own BM25 arm (measurements: longq note)."""
PREFIX_FIELDS = ("title", "headings", "body")
"""Folded fields searched by stem prefix in the ``prefix_terms`` strategy."""
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
MAX_FILTER_VALUES = 64
"""Most values in one ``filter.tags``, ``filter.categories`` or ``filter.year`` list."""
MAX_FILTER_VALUE_CHARS = 200
"""Longest tag or category accepted in a filter (characters)."""
MAX_PATH_PREFIX_CHARS = 1000
"""Longest ``filter.path_prefix`` accepted (characters)."""
MAX_TYPO_WORDS = 8
"""Most words of one query expanded by edit distance (each expansion walks the term dictionary)."""
LONG_WORD = 24
"""Words longer than this (characters) are expanded only when some indexed word is long enough to be near."""

FilterValue = Annotated[str, Field(max_length=MAX_FILTER_VALUE_CHARS)]


class SearchFilter(BaseModel):
    """Restrict results to documents matching every given criterion (omitted = no restriction).

    ``path_prefix``: document path starts with this string (at most 1,000 characters); ``tags`` /
    ``categories``: the document has at least one of them (compared case- and diacritics-insensitively;
    at most 64 values of at most 200 characters); ``year``: the document's year is this one or one of
    these (at most 64).  The bounds keep a request's cost proportional to its size.
    """

    model_config = {"extra": "forbid"}

    path_prefix: str | None = Field(None, max_length=MAX_PATH_PREFIX_CHARS)
    tags: list[FilterValue] | None = Field(None, max_length=MAX_FILTER_VALUES)
    categories: list[FilterValue] | None = Field(None, max_length=MAX_FILTER_VALUES)
    year: int | Annotated[list[int], Field(max_length=MAX_FILTER_VALUES)] | None = None

    def is_empty(self) -> bool:
        """Return true when the filter restricts nothing."""
        return not (self.path_prefix or self.tags or self.categories or self.year is not None)

    def years(self) -> set[int] | None:
        """Return the accepted years, or ``None`` when the year is not restricted."""
        if self.year is None:
            return None
        return {self.year} if isinstance(self.year, int) else set(self.year)


class SearchRequest(BaseModel):
    """Body of ``POST /search`` and the options of ``gitrag search``.

    ``limit``: results returned (1..100); ``max_per_document``: results per document (1..100);
    ``published_only``: exclude documents whose front matter says ``published: false``;
    ``debug``: add per-arm ranks and scores to each result; ``filter``: a :class:`SearchFilter`.
    """

    # strict: "5", 5.0, true are not integers and "false" is not a boolean (no silent coercion).
    model_config = {"extra": "forbid", "strict": True}

    query: str
    limit: int = Field(10, ge=1, le=100)
    max_per_document: int = Field(3, ge=1, le=100)
    published_only: bool = True
    debug: bool = False
    filter: SearchFilter | None = None

    @field_validator("query", mode="before")
    @classmethod
    def _query_is_text(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError("query must be a string")
        return value


class SearchOptions(BaseModel):
    """Server-side retrieval settings (not per request).

    Fusion defaults (k = 5, vector weight 0.5, chunk level, anchor on BM25's first document) were
    chosen with ``bench/fusion_sweep.py`` as the setting with the smallest worst-case loss of hybrid
    nDCG@10 against the better arm on the dev sets with both the English MiniLM and the multilingual
    e5 arm (README, "Retrieval quality"); with RRF's usual k = 60 the gap between ranks 1 and 2 (0.0003) is so
    small that a weak arm reorders the top of a strong one.

    ``rrf_k``: RRF constant; ``fusion_level``: fuse chunk or document rankings (:func:`fuse_rankings`);
    ``bm25_weight`` / ``vector_weight``: per-arm RRF weights;
    ``prefix_weight`` / ``any_term_weight``: score scale of the looser BM25 strategies;
    ``candidates``: chunks taken from each arm; ``typo_tolerance``: expand words absent from the index
    by edit distance; ``anchor``: enable the lexical anchor; ``anchor_max_chunks``: a word is rare
    when at most this many chunks contain it; ``anchor_bm25_rank``: the anchored document must be
    among BM25's best this many documents (an inflected form that happens to be rare elsewhere must
    not override a better lexical match); ``vector_confidence``: scale the vector weight per query by
    :func:`vector_confidence` (an arm with no signal then counts for nothing, see there);
    ``confidence_z_none`` / ``confidence_z_full``: its z thresholds; ``confidence_top_floor`` /
    ``confidence_top_depth``: the least confidence when the dense arm's best document is among
    BM25's best ``confidence_top_depth`` documents (0 = off; see :func:`vector_confidence` and
    :data:`CONFIDENCE_TOP_FLOOR`);
    ``base_url``: prefix of ``source_url``.
    """

    rrf_k: int = Field(5, ge=1)
    fusion_level: Literal["chunk", "document"] = "chunk"
    bm25_weight: float = Field(1.0, ge=0)
    vector_weight: float = Field(0.5, ge=0)
    prefix_weight: float = Field(0.7, ge=0)
    any_term_weight: float = Field(0.5, ge=0)
    candidates: int = Field(100, ge=1)
    typo_tolerance: bool = True
    anchor: bool = True
    anchor_max_chunks: int = Field(8, ge=1)
    anchor_bm25_rank: int = Field(1, ge=1)
    vector_confidence: bool = True
    confidence_z_none: float = CONFIDENCE_Z[0]
    confidence_z_full: float = CONFIDENCE_Z[1]
    confidence_top_floor: float = Field(CONFIDENCE_TOP_FLOOR, ge=0, le=1)
    confidence_top_depth: int = Field(CONFIDENCE_DEPTH, ge=1)
    base_url: str | None = None

    def retrieval_config(self) -> dict[str, Any]:
        """Return the settings that change rankings (everything but ``base_url``)."""
        return self.model_dump(exclude={"base_url"})


def parse_search_request(payload: Any) -> SearchRequest:
    """Validate a decoded JSON payload as a :class:`SearchRequest`.

    Raises :class:`InvalidQueryError` for a missing, non-string, empty or oversized query and
    :class:`InvalidRequestError` for any other problem (wrong types, unknown fields).
    """
    return validate_request(payload, SearchRequest, "query", MAX_QUERY_CHARS)


# -- query terms -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryTerm:
    """One query word: ``folded`` (matches folded fields) and ``exact`` (diacritics kept)."""

    folded: str
    exact: str


def query_terms(text: str) -> list[QueryTerm]:
    """Return the distinct words of ``text`` (NFC, lowercased), at most :data:`MAX_QUERY_TERMS`."""
    seen: set[str] = set()
    terms: list[QueryTerm] = []
    for token in exact_analyzer()(normalize_text(text)):
        if token.text not in seen:
            seen.add(token.text)
            terms.append(QueryTerm(folded=fold_token(token.text), exact=token.text))
    return terms[:MAX_QUERY_TERMS]


def _stem_prefix(term: str) -> str | None:
    """Return the prefix used for inflected forms of ``term`` (``None`` for short words or numbers)."""
    if len(term) < 5 or term.isdigit():
        return None
    return term[: max(4, (len(term) * 3 + 3) // 4)]


def _indexed(bundle: OpenedBundle, searcher: Any, fieldname: str, term: str) -> bool:
    """Return whether some chunk holds ``term`` in ``fieldname``.

    Asked of the BM25 matrix when the bundle has one: it holds the bundle's chunks only, while a
    Whoosh index that was updated in place still lists the words of deleted documents.
    """
    matrix = bm25_matrix(bundle)
    if matrix is not None:
        return matrix.doc_frequency(fieldname, term) > 0
    return bool(searcher.doc_frequency(fieldname, term))


def _known(bundle: OpenedBundle, searcher: Any, term: str) -> bool:
    return any(_indexed(bundle, searcher, f, term) for f in FOLDED_FIELDS)


@dataclass(frozen=True)
class QueryWord:
    """A query word with its typo forms, found once per query and shared by every field and strategy.

    ``fuzzy``: per folded field, ``(field, words)`` of that field within edit distance 1 (2 for
    words of 8+ letters) sharing the first letter; ``swaps``: indexed words equal to ``term`` with
    two neighbouring letters swapped.
    Both are empty for a word found in the index, and for words no indexed word could be near.
    """

    term: QueryTerm
    fuzzy: tuple[tuple[str, tuple[str, ...]], ...] = ()
    swaps: tuple[str, ...] = ()
    narrow_stem: bool = False
    """The word's stem prefix expands to at most :data:`MAX_STEM_FORMS` indexed words in every prefix
    field (checked only in queries of more than :data:`MAX_PREFIX_QUERY_TERMS` words)."""


def _longest_word(bundle: OpenedBundle, searcher: Any) -> int:
    """Return the length (characters) of the longest word in the folded fields, found once per bundle."""
    def compute() -> int:
        matrix = bm25_matrix(bundle)
        if matrix is not None:
            return max((len(w) for f in FOLDED_FIELDS for w, df in zip(matrix.terms[f], matrix.df(f), strict=True)
                        if df), default=0)
        reader = searcher.reader()
        return max((len(w) for f in FOLDED_FIELDS for w in reader.field_terms(f)), default=0)

    return int(bundle.derive("longest_word", compute))


def expand_words(bundle: OpenedBundle, searcher: Any, terms: list[QueryTerm], typo: bool = True) -> list[QueryWord]:
    """Return each query term with its typo forms (see :class:`QueryWord`).

    A word is expanded only when it has at least 4 letters, is not a number, occurs in no folded
    field, could be within the edit distance of some indexed word (a word of more than
    :data:`LONG_WORD` letters must be at most that distance longer than the longest indexed word)
    and is among the first :data:`MAX_TYPO_WORDS` such words of the query: the cost of expansion
    grows with the word's length, so it is bounded by the index, not by the request.
    In a query of more than :data:`MAX_PREFIX_QUERY_TERMS` words each word's
    :attr:`QueryWord.narrow_stem` is set (whatever ``typo``).
    """
    words: list[QueryWord] = []
    expanded = 0
    long_query = len(terms) > MAX_PREFIX_QUERY_TERMS
    for term in terms:
        word = term.folded
        narrow = long_query and MAX_STEM_FORMS > 0 and _narrow_stem(bundle, searcher, word)
        if not typo or len(word) < 4 or word.isdigit() or expanded >= MAX_TYPO_WORDS or _known(bundle, searcher, word):
            words.append(QueryWord(term, narrow_stem=narrow))
            continue
        maxdist = 2 if len(word) >= 8 else 1
        # The longest word is found once per bundle, and only asked for long words (short ones are cheap).
        if len(word) > LONG_WORD and len(word) - maxdist > _longest_word(bundle, searcher):
            words.append(QueryWord(term, narrow_stem=narrow))
            continue
        expanded += 1
        fuzzy = tuple((f, forms) for f in FOLDED_FIELDS
                      if (forms := tuple(sorted(w for w in searcher.reader().terms_within(f, word, maxdist, prefix=1)
                                                if _indexed(bundle, searcher, f, w)))))
        # Levenshtein distance counts a swap of two neighbours as 2 edits; add swapped forms that exist.
        swaps = {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1)} - {word}
        words.append(QueryWord(term, fuzzy, tuple(w for w in sorted(swaps) if _known(bundle, searcher, w)), narrow))
    return words


def _narrow_stem(bundle: OpenedBundle, searcher: Any, word: str) -> bool:
    """Return whether ``word`` has a stem prefix matching at most :data:`MAX_STEM_FORMS` indexed words per prefix field.

    Counted on the BM25 matrix when the bundle has one (its live terms: two bisections per field);
    else reads at most ``MAX_STEM_FORMS + 1`` entries of each field's Whoosh term list.
    """
    stem = _stem_prefix(word)
    if stem is None:
        return False
    matrix = bm25_matrix(bundle)
    if matrix is not None:
        return all(matrix.prefix_count(f, stem) <= MAX_STEM_FORMS for f in PREFIX_FIELDS)
    reader = searcher.reader()
    return all(sum(1 for _ in itertools.islice(reader.expand_prefix(f, stem), MAX_STEM_FORMS + 1)) <= MAX_STEM_FORMS
               for f in PREFIX_FIELDS)


def _word_query(word: QueryWord, *, prefix: bool) -> wq.Query:
    """Return the query matching one word in any field (folded + exact, optionally stem or typo forms)."""
    term = word.term
    options: list[wq.Query] = [wq.Term(f, term.folded, boost=FIELD_BOOSTS[f]) for f in FOLDED_FIELDS]
    options += [wq.Term(f, term.exact, boost=FIELD_BOOSTS[f]) for f in EXACT_FIELDS]
    for f, forms in word.fuzzy:
        # As Whoosh's FuzzyTerm did: a field with a single typo form scores it with weight 1 (its
        # boost is dropped), several forms get half the field weight.  Kept so rankings stay as
        # measured (thesis wiki dev: inflected Slovak names depend on it).
        boost = 1.0 if len(forms) == 1 else 0.5 * FIELD_BOOSTS[f]
        options += [wq.Term(f, w, boost=boost) for w in forms]
    options += [wq.Term(f, w, boost=0.5 * FIELD_BOOSTS[f]) for w in word.swaps for f in FOLDED_FIELDS]
    stem = _stem_prefix(term.folded) if prefix else None
    if stem is not None:
        options += [wq.Prefix(f, stem, boost=0.5 * FIELD_BOOSTS[f], constantscore=False) for f in PREFIX_FIELDS]
    return wq.Or(options)


def build_text_queries(words: list[QueryWord]) -> list[tuple[str, wq.Query]]:
    """Return the BM25 strategies ``[(name, query)]`` for ``words``, strictest first.

    ``any_term`` is omitted for a one-word query (it would equal ``all_terms``); ``prefix_terms``
    for long queries and for queries without a word long enough to have a stem.  In a long query
    (more than :data:`MAX_PREFIX_QUERY_TERMS` words, such as a description of the page) ``any_term``
    also matches the stem prefixes of the words whose stem is narrow (:attr:`QueryWord.narrow_stem`),
    so that a page using those words in other inflected forms is found.
    """
    if not words:
        return []
    plain = [_word_query(w, prefix=False) for w in words]
    strategies: list[tuple[str, wq.Query]] = [("all_terms", wq.And(plain))]
    long_query = len(words) > MAX_PREFIX_QUERY_TERMS
    if not long_query and any(_stem_prefix(w.term.folded) for w in words):
        strategies.append(("prefix_terms", wq.And([_word_query(w, prefix=True) for w in words])))
    if len(words) > 1:
        any_words = [_word_query(w, prefix=True) if long_query and w.narrow_stem else q
                     for w, q in zip(words, plain, strict=True)]
        strategies.append(("any_term", wq.Or(any_words)))
    return strategies


# -- filters ---------------------------------------------------------------------------------------


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


def _build_filter_index(docs: dict[str, Any]) -> FilterIndex:
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
    return bundle.derive("filter_index", lambda: _build_filter_index(bundle.doc_facets()))  # type: ignore[no-any-return]


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

    return bundle.derive("published_docnums", compute)  # type: ignore[no-any-return]


# -- arms ------------------------------------------------------------------------------------------


class RSJBM25F(scoring.BM25F):
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


def _rows_by_path(bundle: OpenedBundle, matrix: BM25Matrix) -> dict[str, np.ndarray]:
    """Return document path -> matrix rows of its chunks (int64; computed once per bundle)."""
    def compute() -> dict[str, np.ndarray]:
        rows: dict[str, list[int]] = {}
        for row, cid in enumerate(matrix.chunk_ids):  # a chunk id is "<path>#<ordinal>": no record is parsed
            rows.setdefault(chunk_path(cid), []).append(row)
        return {path: np.array(r, dtype=np.int64) for path, r in rows.items()}

    return bundle.derive("bm25_rows_by_path", compute)  # type: ignore[no-any-return]


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

    return bundle.derive("published_rows", compute)  # type: ignore[no-any-return]


def _rows_mask(bundle: OpenedBundle, matrix: BM25Matrix, paths: Iterable[str], *, allowed: bool) -> np.ndarray:
    """Bool mask over the matrix rows: ``allowed`` for the chunks of ``paths``, the opposite for every other row."""
    by_path = _rows_by_path(bundle, matrix)
    mask = np.full(matrix.n_rows, not allowed, dtype=bool)
    for path in paths:
        rows = by_path.get(path)
        if rows is not None:
            mask[rows] = allowed
    return mask


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
    qvec = bundle.embedder.embed_query(text)
    ids = bundle.chunks.ids  # label -> chunk id: no chunk record is read per visited node or hit
    if paths is not None:
        def accept(label: int) -> bool:
            return chunk_path(ids[label]) in paths
    elif published_only and unpublished_paths(bundle):
        unpublished = unpublished_paths(bundle)  # a chunk is published when its document is

        def accept(label: int) -> bool:
            return chunk_path(ids[label]) not in unpublished
    else:
        accept = None  # type: ignore[assignment]  # every vector may match: no per-node callback
    count = n if accept is None else _filtered_count(bundle, paths, n)
    k = min(count, depth * 2)  # never more than the index can return
    if k == 0:
        return []
    with bundle.vector_lock:  # ef is index state shared by every thread
        bundle.hnsw.set_ef(max(k, 200))
        try:
            labels, distances = bundle.hnsw.knn_query(qvec.reshape(1, -1), k=k, filter=accept)
        except RuntimeError:  # the graph search reached fewer than k (a narrow filter, a sparse small graph)
            labels, distances = _exact_knn(bundle, qvec, accept, k, n)
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


def _exact_knn(bundle: OpenedBundle, qvec: Any, accept: Any, k: int, n: int):  # type: ignore[no-untyped-def]
    """The ``k`` nearest of the labels ``0..n-1`` that pass ``accept`` (all when ``None``) by an exact scan.

    The fallback of :func:`vector_ranking` when hnswlib's graph search returns fewer than ``k``: the
    stored vectors (``Index.get_items``) are scored against ``qvec`` (inner product); returns
    ``knn_query``-shaped ``(labels, distances)``, distance ``1 - dot``.  Cost: one pass over the
    passing vectors (``n x dim`` floats at most).
    """
    labels = [label for label in range(n) if accept is None or accept(label)]
    if not labels:
        return np.zeros((1, 0), dtype=np.int64), np.zeros((1, 0), dtype=np.float32)
    vectors = np.asarray(bundle.hnsw.get_items(labels), dtype=np.float32)
    scores = vectors @ np.asarray(qvec, dtype=np.float32).reshape(-1)
    order = np.argsort(-scores, kind="stable")[:k]
    return np.asarray(labels, dtype=np.int64)[order].reshape(1, -1), (1.0 - scores[order]).reshape(1, -1)


# -- lexical anchor --------------------------------------------------------------------------------

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
        return searcher.doc_frequency("title", word) + searcher.doc_frequency("body", word)

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


# -- fusion ----------------------------------------------------------------------------------------


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


def rank_chunks(bundle: OpenedBundle, text: str, *, depth: int, published_only: bool = True,
                flt: SearchFilter | None = None, options: SearchOptions | None = None,
                engines: tuple[str, ...] = ("bm25", "vector")) -> Ranking:
    """Run the requested arms for ``text`` and fuse them; return every ranking (see :class:`Ranking`).

    ``depth``: chunks taken from each arm.  An arm not in ``engines`` is skipped (empty ranking).
    """
    opts = options or SearchOptions()
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
