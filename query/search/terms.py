"""Query words: tokenisation as the index does it, typo expansion, and the BM25 strategy trees.

A query word that occurs nowhere in the index is expanded to the indexed words within edit distance 1
(2 for words of 8+ letters) or one swap of neighbouring letters, so a typo still finds its page while a
clean query is left untouched.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from whoosh import query as wq

from artifacts.analysis import EXACT_FIELDS, FIELD_BOOSTS, FOLDED_FIELDS, exact_analyzer, fold_token, normalize_text
from query.bundle import OpenedBundle
from query.search.typos import near_terms
from query.search.weighting import bm25_matrix

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


MAX_TYPO_WORDS = 8
"""Most words of one query expanded by edit distance (each expansion walks the term dictionary)."""
LONG_WORD = 24
"""Words longer than this (characters) are expanded only when some indexed word is long enough to be near."""


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

    return bundle.derive("longest_word", compute)


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
        fuzzy = tuple((f, forms) for f in FOLDED_FIELDS if (forms := _typo_forms(bundle, searcher, f, word, maxdist)))
        # Levenshtein distance counts a swap of two neighbours as 2 edits; add swapped forms that exist.
        swaps = {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1)} - {word}
        words.append(QueryWord(term, fuzzy, tuple(w for w in sorted(swaps) if _known(bundle, searcher, w)), narrow))
    return words


def _typo_forms(bundle: OpenedBundle, searcher: Any, fieldname: str, word: str, maxdist: int) -> tuple[str, ...]:
    """Return the indexed words of ``fieldname`` within ``maxdist`` edits of ``word`` sharing its first letter, sorted.

    On the BM25 matrix's one vocabulary when the bundle has one (:func:`query.search.typos.near_terms`,
    numpy over the words of that first letter); else Whoosh's automaton walk over each segment.
    """
    matrix = bm25_matrix(bundle)
    if matrix is not None:
        return tuple(near_terms(bundle, matrix, fieldname, word, maxdist))
    return tuple(sorted(w for w in searcher.reader().terms_within(fieldname, word, maxdist, prefix=1)
                        if _indexed(bundle, searcher, fieldname, w)))


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
