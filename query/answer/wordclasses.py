"""The language profiles' word classes as the binding of a claim to its quote reads them (:func:`_lexicon`).

Folded per language code: negations (words and ``ne*`` prefixes), number words, reporting, instruction, saying
and complementizer words, instruction leads and addressees, the conjunctions and the words that place nothing;
:func:`_tokens` (folded word tokens) and :func:`_known` (a word of a language's lexicon).  Used by
:mod:`query.answer.binding`, :mod:`query.answer.polarity`, :mod:`query.answer.claim_numbers` and
:mod:`query.answer.instructions`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from artifacts.analysis import fold
from artifacts.text.profile import Profile, available, load_profile
from artifacts.text.words import stop_words

_WORD = re.compile(r"\w+(?:['’-]\w+)*")  # a hyphenated compound is one word ("ignore-case", "Prompt-Antworten")
_CLAUSE_PUNCT = re.compile(r"[,;:()\[\]!?.\n–—]|\s-\s")


@dataclass(frozen=True)
class _Lexicon:
    """The profile word classes binding needs, folded, per language code."""

    negation: dict[str, frozenset[str]]           # exact negation words
    neg_prefixes: dict[str, tuple[str, ...]]      # prefix entries ("ne")
    numbers: dict[str, dict[str, int]]            # number words -> value, without not_numbers
    reporting: dict[str, frozenset[str]]
    reporting_prefixes: dict[str, tuple[str, ...]]
    verbs: dict[str, frozenset[str]]
    saying: dict[str, frozenset[str]]
    complementizer: dict[str, frozenset[str]]
    lead: dict[str, tuple[tuple[str, ...], ...]]  # phrases (token tuples)
    addressee: dict[str, tuple[tuple[str, ...], ...]]
    answer_noun: dict[str, frozenset[str]]
    conjunctions: frozenset[str]                  # single-word conjunction_and / conjunction_or of every profile
    transparent: frozenset[str]                   # stop, function, copula and reporting words of every profile
    verbal: frozenset[str]                        # copula and reporting words of every profile
    other_classes: dict[str, frozenset[str]]      # words of any other class or function word (not negations)
    simplemma: dict[str, str | None]


def _split(entries: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    exact = frozenset(e for e in entries if not e.endswith("*"))
    prefixes = tuple(sorted(e[:-1] for e in entries if e.endswith("*") and " " not in e))
    return exact, prefixes


def _phrases(entries: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    return tuple(sorted({tuple(e.split()) for e in entries}, key=len, reverse=True))


@lru_cache(maxsize=1)
def _lexicon() -> _Lexicon:
    negation, neg_prefixes, numbers, reporting, reporting_prefixes = {}, {}, {}, {}, {}
    verbs, saying, comp, lead, addressee, other, lemmas = {}, {}, {}, {}, {}, {}, {}
    answer: dict[str, frozenset[str]] = {}
    conjunctions: set[str] = set()
    transparent: set[str] = set(stop_words())
    verbal: set[str] = set()
    for code in available():
        prof: Profile = load_profile(code)
        negation[code], neg_prefixes[code] = _split(prof.words("negation"))
        skip = prof.words("not_numbers")
        numbers[code] = {w: v for w, v in prof.number_words.items() if w not in skip and " " not in w}
        reporting[code], reporting_prefixes[code] = _split(prof.words("reporting"))
        verbs[code] = prof.words("instruction_verbs")
        saying[code] = prof.words("saying_verbs")
        comp[code] = prof.words("complementizer")
        lead[code] = _phrases(prof.words("instruction_lead") | prof.words("negation"))
        addressee[code] = _phrases(prof.words("addressee"))
        answer[code] = prof.words("answer_noun")
        conjunctions |= {w for w in prof.words("conjunction_and") | prof.words("conjunction_or") if " " not in w}
        verbal |= prof.words("copula") | {w for w in prof.words("reporting") if not w.endswith("*")}
        transparent |= prof.function_words | verbal
        words = set(prof.function_words)
        for name, cls in prof.classes.items():
            if name not in ("negation", "multiplier"):  # a multiplier ("tisíc") is a number word, no other word
                words |= {w for w in cls if not w.endswith("*")}
        other[code] = frozenset((words - negation[code]) | prof.words("not_negation"))
        lemmas[code] = prof.simplemma
    return _Lexicon(negation, neg_prefixes, numbers, reporting, reporting_prefixes, verbs, saying, comp, lead,
                    addressee, answer, frozenset(conjunctions), frozenset(transparent), frozenset(verbal), other,
                    lemmas)


def _tokens(text: str) -> list[str]:
    """Folded word tokens of ``text`` (apostrophes kept inside a word: ``don't``)."""
    return [fold(m.group(0)).replace("’", "'") for m in _WORD.finditer(unicodedata.normalize("NFC", text))]


@lru_cache(maxsize=16384)
def _known(word: str, lang: str) -> bool:
    from artifacts.lexicon import is_known

    try:
        return is_known(word, lang)
    except (ValueError, KeyError):
        return False
