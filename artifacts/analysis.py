"""Text analysis shared by the indexer (writing) and the query side (reading).

Whoosh pickles the schema, analyzers included, into the index; the classes used here must stay
importable under these names.  Any change to tokenisation is a change of
:data:`artifacts.config.ANALYZER_VERSION`.

Two analyzers:

* ``folding``: NFC text -> word tokens -> lowercase -> diacritics folded (``práca`` -> ``praca``,
  ``Łódź`` -> ``lodz``), so a query typed without diacritics matches
  Slovak, Czech, Polish and German text.
* ``exact``: the same tokens lowercased but with diacritics kept, indexed in ``*_exact`` fields so
  that a query typed with the right diacritics scores higher than a near-homograph.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

from whoosh.analysis import CharsetFilter, LowercaseFilter, RegexTokenizer
from whoosh.fields import ID, NUMERIC, STORED, TEXT, Schema
from whoosh.support.charset import accent_map

TOKEN_PATTERN = r"\w+(?:[.'’]\w+)*"
"""Regex of one token: a run of word characters, joined by inner dots or apostrophes.

Hyphens split (analyzer version 2): German and Slovak compounds such as ``HTML-Blöcke`` or
``Pop-out-Fenster`` then match their parts (measured: obsidian-desc-de BM25 nDCG@10 0.805 -> 0.888,
xquad-de dev 0.908 -> 0.924).  A hyphenated identifier (``ERR-4711``) is found through its parts.
"""


def folding_analyzer() -> Any:
    """Return the diacritics-folding analyzer (tokens lowercased, accents removed)."""
    return RegexTokenizer(TOKEN_PATTERN) | LowercaseFilter() | CharsetFilter(accent_map)


_TOKEN = re.compile(TOKEN_PATTERN)
_JOINERS = ".'’"
_WORD_CHAR = re.compile(r"\w")


def _unaligned_chars() -> str:
    """Characters after which a whole-text fold no longer lines up with the tokens (see :func:`fold_aligned`).

    ``İ`` lowercases to two characters; a capital sigma's lowercase depends on the characters after it
    (the one context rule of ``str.lower``); and ``accent_map`` turns some combining marks (not word
    characters) into letters.  ``tests/query/test_analysis.py`` checks every code point against this set.
    """
    chars = {"\u0130", "\u03a3"}
    for code, folded in accent_map.items():
        char = chr(code)
        if (bool(_WORD_CHAR.match(char)) != bool(_WORD_CHAR.match(folded))
                or (char in _JOINERS) != (folded in _JOINERS)):
            chars.add(char)
    return "".join(sorted(chars))


UNALIGNED_CHARS = _unaligned_chars()
_UNALIGNED = re.compile("[" + re.escape(UNALIGNED_CHARS) + "]")


def fold_aligned(text: str) -> str | None:
    """Return ``text`` lowercased and folded character by character, or ``None`` when that would not line up.

    When a string is returned it has ``len(text)`` characters, each token of ``text`` (offsets from
    :func:`token_spans`) folded is the same slice of it, and its tokens are at the same offsets (word
    characters and the joiners ``.'’`` stay what they are): one C-level pass instead of one per token.
    ``None`` for a text holding one of :data:`UNALIGNED_CHARS`.
    """
    if text.isascii():  # accent_map folds no lowercase ASCII letter: lowercasing is all
        return text.lower()
    if _UNALIGNED.search(text):
        return None
    folded = text.lower().translate(accent_map)
    return folded if len(folded) == len(text) else None


def token_spans(text: str) -> list[tuple[int, int]]:
    """Return the ``(start, end)`` character offsets of the folding analyzer's tokens of ``text`` (end exclusive)."""
    return [match.span() for match in _TOKEN.finditer(text)]


def folded_spans(text: str) -> Iterator[tuple[str, int, int]]:
    """Yield ``(folded token, start, end)`` for each token of ``text`` (character offsets, end exclusive).

    The same tokens, texts and offsets as :func:`folding_analyzer` with ``chars=True`` (tokenise,
    lowercase, fold diacritics), without Whoosh's per-token filter chain: for code that visits
    every token of a text per request (result snippets).
    """
    folded = fold_aligned(text)
    if folded is not None:
        for match in _TOKEN.finditer(text):
            start, end = match.span()
            yield folded[start:end], start, end
        return
    for match in _TOKEN.finditer(text):
        yield match.group(0).lower().translate(accent_map), match.start(), match.end()


def exact_analyzer() -> Any:
    """Return the exact analyzer (tokens lowercased, accents kept)."""
    return RegexTokenizer(TOKEN_PATTERN) | LowercaseFilter()


def normalize_text(text: str) -> str:
    """Return ``text`` in Unicode NFC, the form every indexed and queried string is in."""
    return unicodedata.normalize("NFC", text)


def fold_token(token: str) -> str:
    """Return one already lowercased token with diacritics removed (the folding analyzer's last step)."""
    return token.translate(accent_map)


def fold(text: str) -> str:
    """Return lowercase ``text`` with diacritics removed, as the folding analyzer would: its tokens
    (:func:`folded_spans`, without building a Whoosh analyzer per call) joined by single spaces."""
    return " ".join(token for token, _, _ in folded_spans(normalize_text(text)))


FIELD_BOOSTS = {
    "title": 2.0,
    "title_exact": 0.6,
    "headings": 1.2,
    "meta": 1.5,
    "body": 1.0,
    "body_exact": 0.3,
}
"""Query-time weight of each searchable field (BM25F field weights).

The ``*_exact`` fields only add to a match already made in the folded field (a query word matches
both when its diacritics are right), so their weights are a fraction of the folded ones: enough to
break ties in favour of the correct spelling, too little to outweigh term rarity.  Measured on
xquad-de dev (BM25 nDCG@10): title 3.0 / exact 1.0 gave 0.891, these weights 0.897.
"""

FOLDED_FIELDS = ("title", "headings", "meta", "body")
EXACT_FIELDS = ("title_exact", "body_exact")


def text_schema() -> Schema:
    """Return the Whoosh schema of a bundle's ``text/`` index (one Whoosh document per chunk).

    ``meta`` holds tags, categories and authors; ``published`` is 1 or 0; ``year`` may be absent.
    """
    folding = folding_analyzer()
    exact = exact_analyzer()
    return Schema(
        chunk_id=ID(stored=True, unique=True),
        path=ID(stored=True),
        ordinal=STORED(),
        published=NUMERIC(int, bits=8, stored=False),
        year=NUMERIC(int, bits=32, stored=False),
        title=TEXT(analyzer=folding, phrase=True),
        title_exact=TEXT(analyzer=exact, phrase=False),
        headings=TEXT(analyzer=folding, phrase=False),
        meta=TEXT(analyzer=folding, phrase=False),
        body=TEXT(analyzer=folding, phrase=True),
        body_exact=TEXT(analyzer=exact, phrase=False),
    )
