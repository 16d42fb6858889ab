"""Polarity of a claim text and of its quote: their negations and the words each negation negates.

The ``polarity`` failure of :func:`query.answer.binding.bind_claim` (see :mod:`query.answer.binding` for the rule):
:func:`_negations` counts the negations of a text (profile ``negation``; a prefix entry such as ``ne*`` only
before a known word of that profile's language), :func:`_polarity` finds the scope of each negation, and
:func:`_moved_negation` says when a negated word stands on the other side outside every negation.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from artifacts.analysis import fold
from artifacts.text.profile import available
from artifacts.text.words import words_match
from query.answer.wordclasses import _CLAUSE_PUNCT, _WORD, _known, _lexicon, _tokens

_MIN_REST = 2          # a negation prefix counts only before a known word of at least this many letters


def _negation(token: str, lower: str) -> str | None:
    """``None`` when the folded ``token`` (``lower``: as written, lower case) is no negation; else the word it
    negates inside itself (the folded rest of a prefix negation: ``nebola`` -> ``bola``), or ``""`` for a
    negation word of its own ("nie", "not")."""
    lex = _lexicon()
    for code in available():
        if token in lex.negation[code] or (token.endswith("n't") and "n't" in lex.negation[code]):
            return ""
        if token in lex.other_classes[code]:
            continue
        # the prefix compared as written ("ne" is not the "ně" of "někdo"), the rest looked up with its diacritics
        prefix = next((p for p in lex.neg_prefixes[code] if lower.startswith(p)), None)
        if prefix is not None:
            rest = lower[len(prefix):]  # simplemma knows words with their diacritics
            lang = lex.simplemma[code]
            if len(rest) >= _MIN_REST and lang and _known(rest, lang):
                return fold(rest)
    return None


def _negations(text: str) -> list[str]:
    """The negation tokens of ``text`` (profile ``negation`` of any profile; a prefix entry only before a
    known word of that profile's language)."""
    lowered = [m.group(0).lower() for m in _WORD.finditer(unicodedata.normalize("NFC", text))]
    return [t for t, lower in zip(_tokens(text), lowered, strict=True) if _negation(t, lower) is not None]


@dataclass(frozen=True)
class _Scope:
    """One negation of a text: its ``head`` (the word it negates: the rest of a prefix negation when that is a
    content word, "nedosiahol", else the next content word of its clause, "nie na nárečových") and ``words``
    (the content words from the negation to the end of its clause, the head among them)."""

    head: str | None
    words: frozenset[str]


@dataclass(frozen=True)
class _Polarity:
    """The negations of a text (``scopes``), the content words inside them (``negated``) and the others
    (``positive``)."""

    scopes: tuple[_Scope, ...]
    negated: frozenset[str]
    positive: frozenset[str]


def _polarity(text: str) -> _Polarity:
    transparent = _lexicon().transparent
    scopes: list[_Scope] = []
    positive: set[str] = set()
    for part in _CLAUSE_PUNCT.split(unicodedata.normalize("NFC", text)):
        head: str | None = None
        words: set[str] | None = None  # the words of the open negation of this clause
        for match in _WORD.finditer(part):
            token, lower = fold(match.group(0)).replace("’", "'"), match.group(0).lower()
            rest = _negation(token, lower)
            if rest is not None:
                if words is not None:
                    scopes.append(_Scope(head, frozenset(words)))
                head, words = (rest, {rest}) if rest and rest not in transparent else (None, set())
                continue
            if token in transparent or token.isdigit():
                continue
            if words is None:
                positive.add(token)
                continue
            words.add(token)
            head = head or token
        if words is not None:
            scopes.append(_Scope(head, frozenset(words)))
    negated = frozenset(w for scope in scopes for w in scope.words)
    return _Polarity(tuple(scopes), negated, frozenset(positive))


def _moved_negation(a: _Polarity, b: _Polarity) -> bool:
    """True when a word inside a negation of ``a`` stands in ``b`` only outside every negation ("nebola
    zverejnená, ale bola odovzdaná" against "bola zverejnená, ale nebola odovzdaná").  The negated verb
    itself may lose its negation when another word of its clause keeps one ("nebol trénovaný na spisovnej
    slovenčine" = "bol trénovaný iba na nárečových nahrávkach, nie na spisovnej slovenčine")."""
    def has(words: frozenset[str], word: str) -> bool:
        return any(words_match(word, w) for w in words)

    for scope in a.scopes:
        for word in scope.words:
            if has(b.positive, word) and not has(b.negated, word):
                kept = any(has(b.negated, other) for other in scope.words if other != word)
                if not (word == scope.head and kept):
                    return True
    return False


def _unshared(negations: list[str], other_text: str) -> int:
    from artifacts.text.words import word_set

    others = word_set(other_text)
    return sum(1 for token in negations if not others.has(token))
