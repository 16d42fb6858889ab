"""Quotes and the details of a claim text, as the attribution check, the binding and the relevance gate compare them.

:func:`normalize_quote` (NFC, case folding, whitespace, outer quotes and ellipses), an evidence text in its two
comparison forms (:class:`_Hay`: as written, and without inline Markdown) matched on word boundaries; what the
details of a claim may rest on (:func:`support_text`); the numbers (:func:`_numbers`) and the name or title
words (:func:`_detail_tokens`) of a claim text and the evidence words they compare to, in every Slovak case
form (:class:`_NameSupport`); the full names of a question (:func:`question_names`, :func:`name_occurs`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from artifacts.text.profile import possessive, question_languages, text_languages, union
from artifacts.text.words import fold_word, stop_words
from query.answer.evidence import EvidenceItem
from query.graph.names import capital_runs, damerau1, name_forms, tokenize

_SPACE = re.compile(r"\s+")
_OUTER = "\"'„“”‚‘’«»`"
_ELLIPSIS = re.compile(r"^(?:\.\.\.|…)\s*|\s*(?:\.\.\.|…)$")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_MARK = re.compile(r"\*\*|__|[*`]")
_DATE_SPACED = re.compile(r"(?<!\d)(\d{1,2})\.\s+(\d{1,2})\.\s*(\d{4})(?!\d)")
_NUMBER = re.compile(r"(?<![\w])\d+(?:[.,:/]\d+)*")
_DATE = re.compile(r"\d{1,2}[./]\d{1,2}[./](\d{4})")
_SENTENCE_END = re.compile(r"[.!?:;]\s*[\"'„“”»)*_]*\s*$")


# --------------------------------------------------------------------------- normalisation

def normalize_quote(text: str) -> str:
    """Return ``text`` in NFC, case-folded, whitespace collapsed, outer quotes and ellipses removed."""
    text = _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()
    previous = None
    while previous != text:
        previous = text
        text = _ELLIPSIS.sub("", text).strip().strip(_OUTER).strip()
    return text.casefold()


def _strip_markup(text: str) -> str:
    return _SPACE.sub(" ", _MD_MARK.sub("", _MD_LINK.sub(r"\1", text))).strip()


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _occurs(needle: str, hay: str) -> bool:
    """``needle`` occurs in ``hay`` (both normalised) starting and ending on word boundaries."""
    if not needle:
        return False
    start = hay.find(needle)
    while start >= 0:
        end = start + len(needle)
        left_ok = start == 0 or not (_is_word_char(needle[0]) and _is_word_char(hay[start - 1]))
        right_ok = end == len(hay) or not (_is_word_char(needle[-1]) and _is_word_char(hay[end]))
        if left_ok and right_ok:
            return True
        start = hay.find(needle, start + 1)
    return False


@dataclass(frozen=True)
class _Hay:
    """An evidence text in both comparison forms."""

    plain: str
    light: str

    @classmethod
    def of(cls, text: str) -> _Hay:
        plain = normalize_quote(text)
        return cls(plain, normalize_quote(_strip_markup(text)))

    def contains(self, quote: str) -> bool:
        plain = normalize_quote(quote)
        return _occurs(plain, self.plain) or _occurs(normalize_quote(_strip_markup(quote)), self.light)


# --------------------------------------------------------------------------- details

def support_text(item: EvidenceItem) -> str:
    """What details of a claim citing ``item`` may rest on: its text, title, heading path and graph facts."""
    parts = [item.text, item.title or "", " / ".join(item.heading_path)]
    parts.extend(_flatten(fact) for fact in item.facts)
    return "\n".join(p for p in parts if p)


def _flatten(value: Any) -> str:
    if isinstance(value, dict):
        return " ; ".join(_flatten(v) for k, v in sorted(value.items()) if not str(k).endswith("_id"))
    if isinstance(value, (list, tuple)):
        return " ; ".join(_flatten(v) for v in value)
    if value is None or isinstance(value, bool):
        return ""
    return str(value)


def _strings(value: Any) -> list[str]:
    """The string values (not numbers) inside nested dicts and lists."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _numbers(text: str) -> list[str]:
    """Numbers of ``text`` as compared: decimal comma = point, spaced dates joined."""
    text = _DATE_SPACED.sub(r"\1.\2.\3", unicodedata.normalize("NFC", text))
    out = []
    for match in _NUMBER.finditer(text):
        token = match.group(0)
        out.append(token.replace(",", "."))
    return out


def _number_support(text: str) -> set[str]:
    numbers = set(_numbers(text))
    for token in list(numbers):
        date = _DATE.fullmatch(token)
        if date:
            numbers.add(date.group(1))
    return numbers


_WORD_RE = re.compile(r"\w+(?:[-’']\w+)*")


def _squash(word: str) -> str:
    return fold_word(word).replace("-", "").replace("’", "").replace("'", "")


class _NameSupport:
    """Words of the cited evidence with their Slovak case forms, all folded."""

    def __init__(self, text: str) -> None:
        self.words: set[str] = set()
        self.forms: set[str] = set()
        seen: set[str] = set()
        for match in _WORD_RE.finditer(unicodedata.normalize("NFC", text)):
            word = match.group(0)
            if word in seen:
                continue
            seen.add(word)
            self.words.add(_squash(word))
            if word[:1].isupper():
                self.forms.update(_squash(f) for f in name_forms(word))

    def has(self, word: str) -> bool:
        folded = _squash(word)
        if folded in self.words or folded in self.forms:
            return True
        return any(_squash(f) in self.words for f in name_forms(word))


@lru_cache(maxsize=256)
def _name_support(text: str) -> _NameSupport:
    return _NameSupport(text)


def _detail_tokens(text: str) -> list[str]:
    """Capitalised name/title words and mixed tokens (``mT5``, ``GPT-2``) of a claim text.

    A lone capitalised word that opens a sentence (the next word is not capitalised) is not taken
    for a name: without a lexicon it cannot be told from an ordinary word, and nearly every claim
    starts with one.  Full names and capitalised words inside a sentence are checked.
    """
    text = unicodedata.normalize("NFC", text)
    tokens = tokenize(text)
    words = list(re.finditer(r"\w+(?:[-’']\w+)*", text))
    out = []
    for i, token in enumerate(tokens):
        word = token.text
        if word.isdigit():
            continue
        mixed = any(ch.isdigit() for ch in word) or any(ch.isupper() for ch in word[1:])
        if not (token.capital or mixed):
            continue
        if not mixed:
            if len(word) == 1:
                continue
            start = words[i].start()
            before = text[:start]
            initial = not before.strip(" \t\n-*>#(\"'„“") or bool(_SENTENCE_END.search(before))
            next_capital = i + 1 < len(tokens) and tokens[i + 1].capital and not tokens[i + 1].text.isdigit()
            if initial and not next_capital:
                continue
        out.append(word)
    return out


def _list_parts(text: str, punctuation: str, codes: tuple[str, ...] | None = None) -> list[str]:
    """``text`` split at ``punctuation`` and at the one-word ``conjunction_and`` words of the profiles ``codes``
    (the text's own when None): "Jan Novák a Petra Malá", "Jan Novák and Petra Malá" are two names."""
    words = sorted((w for w in union("conjunction_and", codes or text_languages(text)) if " " not in w),
                   key=len, reverse=True)
    conjunctions = r"|\s(?:" + "|".join(re.escape(w) for w in words) + r")\s" if words else ""
    return re.split(punctuation + conjunctions, text)


def question_names(question: str) -> list[tuple[str, ...]]:
    """Full names in ``question``: runs of two or more adjacent capitalised words (``Petry Strakovej``).

    Stop words ("Aký", "Which" opening the question) and all-capital acronyms ("WER", "BERT") are
    never name words: "Aký WER dosiahla Natália Lukáčová" names only Natália Lukáčová.  An English
    possessive is not part of the name ("Denis Bača's thesis" names Denis Bača).
    """
    stops = stop_words()
    names = []
    owner = possessive(question_languages(question))  # the profiles' possessive_ending
    text = unicodedata.normalize("NFC", question)
    text = owner.sub("", text) if owner is not None else text
    for part in _list_parts(text, r"[,;:()/?!.]", question_languages(question)):
        for run in capital_runs(tokenize(part), set()):
            piece: list[str] = []
            for word in [t.text for t in run] + [""]:
                if word and not (word.isupper() and len(word) > 1) and fold_word(word) not in stops:
                    piece.append(word)
                    continue
                if len(piece) >= 2:
                    names.append(tuple(piece))
                piece = []
    return names


@lru_cache(maxsize=16384)
def _forms(word: str) -> frozenset[str]:
    """``word`` and its Slovak case forms, folded (computed from the word as written)."""
    return frozenset({_squash(word), *(_squash(f) for f in name_forms(word))})


def name_occurs(name: tuple[str, ...], text: str) -> bool:
    """The name's words occur adjacent in ``text``, each in some Slovak case form (folded); one word
    of 5+ letters may differ by one edit (a typo), as in graph name matching."""
    raw = [m.group(0) for m in _WORD_RE.finditer(unicodedata.normalize("NFC", text))]
    targets = [_squash(token) for token in name]
    wanted = [_forms(token) for token in name]

    def same(i: int, word: str) -> int:  # 2 exact or inflected, 1 typo, 0 no
        folded = _squash(word)
        if folded in wanted[i] or targets[i] in _forms(word):
            return 2
        return 1 if len(folded) >= 5 and damerau1(folded, targets[i]) else 0

    for start in range(len(raw) - len(name) + 1):
        scores = [same(i, raw[start + i]) for i in range(len(name))]
        if all(scores) and scores.count(1) <= 1:
            return True
    return False
