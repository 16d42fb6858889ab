"""Typo forms of a query word from the BM25 matrix's vocabulary, at array speed.

Whoosh finds the words near a misspelt one (``terms_within``) by walking a Levenshtein automaton over
the term list of every index segment in Python: 59-339 ms CPU per misspelt word on an incrementally
built bundle (many segments), 10-40 times a normal query.  The BM25 matrix holds one sorted
vocabulary per field for the whole bundle; here the words that share the misspelt word's first letter
(Whoosh's ``prefix=1``) and whose length is within the distance are compared with it at once: their
code points sit in one padded ``uint32`` array per (field, first letter), built on first use and kept
with the bundle, and one numpy pass per letter of the query word computes every Levenshtein distance
(insertions, deletions, substitutions, as Whoosh's automaton counts them).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from artifacts.bm25matrix import BM25Matrix
from query.bundle import OpenedBundle


@dataclass(frozen=True)
class _Letter:
    """The live terms of one field that start with one letter: ``terms``, ``lengths`` (int32) and
    ``codes`` (uint32 ``(n, longest)``, code points, 0 past each term's end)."""

    terms: tuple[str, ...]
    lengths: np.ndarray
    codes: np.ndarray


def _letter(matrix: BM25Matrix, fieldname: str, first: str) -> _Letter:
    terms = matrix.terms.get(fieldname) or []
    lo = bisect.bisect_left(terms, first)
    hi = bisect.bisect_left(terms, first + "\U0010ffff", lo)
    while hi < len(terms) and terms[hi].startswith(first):  # terms holding U+10FFFF itself
        hi += 1
    df = matrix.df(fieldname)[lo:hi] if hi > lo else np.zeros(0, dtype=np.int64)
    live = tuple(terms[lo + j] for j in np.flatnonzero(df).tolist())
    lengths = np.fromiter((len(t) for t in live), dtype=np.int32, count=len(live))
    codes = np.zeros((len(live), int(lengths.max(initial=0))), dtype=np.uint32)
    if live:
        flat = np.frombuffer("".join(live).encode("utf-32-le"), dtype=np.uint32)
        rows = np.repeat(np.arange(len(live)), lengths)
        starts = np.cumsum(lengths) - lengths
        cols = np.arange(len(flat)) - np.repeat(starts, lengths)
        codes[rows, cols] = flat
    return _Letter(live, lengths, codes)


def levenshtein_within(word: str, codes: np.ndarray, lengths: np.ndarray, maxdist: int) -> np.ndarray:
    """Return a bool mask: which of the padded words ``codes`` (uint32 ``(n, m)``, true lengths ``lengths``)
    are within Levenshtein distance ``maxdist`` of ``word``.

    One row of the dynamic programme per letter of ``word``, over all candidates at once; the
    insertion term (a minimum along the row) is a running minimum of ``d[j] - j``.
    """
    n, m = codes.shape
    if n == 0:
        return np.zeros(0, dtype=bool)
    steps = np.arange(m + 1, dtype=np.int32)
    prev = np.broadcast_to(steps, (n, m + 1)).copy()
    for i, ch in enumerate(word, start=1):
        cost = (codes != ord(ch)).astype(np.int32)
        best = np.empty_like(prev)
        best[:, 0] = i
        best[:, 1:] = np.minimum(prev[:, 1:] + 1, prev[:, :-1] + cost)
        prev = np.minimum.accumulate(best - steps, axis=1) + steps
    within: np.ndarray = prev[np.arange(n), lengths] <= maxdist
    return within


def near_terms(bundle: OpenedBundle, matrix: BM25Matrix, fieldname: str, word: str, maxdist: int) -> list[str]:
    """Return the live terms of ``fieldname`` within Levenshtein distance ``maxdist`` of ``word`` that start
    with its first letter, sorted (what Whoosh's ``terms_within(field, word, maxdist, prefix=1)`` gives,
    restricted to terms some chunk holds).  ``word`` itself is included when it is a term."""
    if not word:
        return []
    key = f"typo_letters:{fieldname}:{word[0]}"
    group: _Letter = bundle.derive(key, lambda: _letter(matrix, fieldname, word[0]))
    if not group.terms:
        return []
    close = np.abs(group.lengths - len(word)) <= maxdist
    picked = np.flatnonzero(close)
    if picked.size == 0:
        return []
    width = int(group.lengths[picked].max())
    ok = levenshtein_within(word, group.codes[picked, :width], group.lengths[picked], maxdist)
    return [group.terms[j] for j in picked[ok].tolist()]
