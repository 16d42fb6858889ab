"""Recognise entities in a question: person names in Slovak and Czech grammatical cases, years.

Names are matched token by token against generated inflected forms of each name token (Slovak
declension patterns for first names and surnames, e.g. ``Ján`` -> ``Jána``, ``Jánovi``;
``Verešová`` -> ``Verešovej``; ``Marek`` -> ``Marka``), compared after lowercasing and, when the
exact form does not match, after folding diacritics.  One token of a full name may carry a small
typo (Damerau-Levenshtein distance 1, tokens of 5+ letters).  Scores per token: 3 exact
letters (when the question's word has diacritics or is capitalised), 2 folded (or exact, in a
lower-case word without diacritics), 1 typo; among candidates for the same words of the question,
only the best total score survives, so a carefully spelled name decides between names that fold to
the same letters, while "peter toth" fits "Peter Toth" and "Peter Tóth" equally.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from artifacts.analysis import fold

_WORD = re.compile(r"\w+(?:[-’']\w+)*")
_YEAR = re.compile(r"(?:19|20)[0-9]{2}")

# Case endings added to a stem; which stem and which endings depends on how the name ends.
# Slovak endings, plus the Czech ones that differ (-em, -ě, -é, -ího).
_MASC_CONSONANT = ("a", "ovi", "om", "e", "u", "ovia", "ov", "em", "ové", "ů")
_FEM_A = ("y", "e", "u", "ou", "i", "ě", "ej")  # -ej: adjectival surnames with a short -a (Čierna)
_FEM_IA = ("e", "i", "u", "ou")
_ADJ_FEM = ("ej", "ú", "ou", "u", "é")
_ADJ_MASC_LONG = ("ého", "ému", "ým", "om")
_ADJ_MASC_SHORT = ("eho", "emu", "ym", "om")
_MASC_O = ("a", "ovi", "om", "u")


def name_forms(token: str) -> set[str]:
    """Return ``token`` (lowercase NFC) and its likely Slovak case forms, diacritics kept."""
    t = unicodedata.normalize("NFC", token).lower()
    forms = {t}
    if len(t) < 2:
        return forms
    if t.endswith("á"):
        forms.update(t[:-1] + e for e in _ADJ_FEM)
    elif t.endswith("ia"):
        forms.update(t[:-1] + e for e in _FEM_IA)
    elif t.endswith("a"):
        forms.update(t[:-1] + e for e in _FEM_A)
        forms.update(t[:-1] + e for e in ("ovi", "om"))  # masculine -a (Baťa -> Baťovi)
    elif t.endswith("ý"):
        forms.update(t[:-1] + e for e in _ADJ_MASC_LONG)
    elif t.endswith("y"):
        forms.update(t[:-1] + e for e in _ADJ_MASC_SHORT)
    elif t.endswith("o"):
        forms.update(t[:-1] + e for e in _MASC_O)
    elif t[-1] not in "aeiouyáéíóúýäô":
        forms.update(t + e for e in _MASC_CONSONANT)
        if len(t) > 3 and t[-2] == "e" and t[-3] not in "aeiouyáéíóúýäô":  # fleeting e: Marek -> Marka
            forms.update(t[:-2] + t[-1] + e for e in _MASC_CONSONANT)
    return forms


def damerau1(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` differ by at most one edit (insert, delete, substitute, swap)."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    i = 0
    while i < min(la, lb) and a[i] == b[i]:
        i += 1
    if la == lb:
        if a[i + 1 :] == b[i + 1 :]:
            return True
        return i + 1 < la and a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2 :] == b[i + 2 :]
    if la > lb:
        return a[i + 1 :] == b[i:]
    return a[i:] == b[i + 1 :]


@dataclass(frozen=True)
class Token:
    """A word of the question: position, text as written, lowercase, folded, capitalised?
    ``joined``: the word is glued to the previous one by a character other than white space
    (``Digital`` in ``Česko.Digital``)."""

    index: int
    text: str
    lower: str
    folded: str
    capital: bool
    joined: bool = False


def tokenize(question: str, possessive_suffixes: Sequence[str] = ()) -> list[Token]:
    """Return the words of ``question`` (NFC); a word ending in one of ``possessive_suffixes``
    (``"'s"``) is taken without it (``Holp's`` -> ``Holp``)."""
    text = unicodedata.normalize("NFC", question)
    tokens = []
    previous_end = -2
    for i, match in enumerate(_WORD.finditer(text)):
        word = match.group(0)
        joined = match.start() == previous_end + 1 and not text[previous_end].isspace()
        previous_end = match.end()
        for suffix in possessive_suffixes:
            if len(word) > len(suffix) + 1 and word.lower().endswith(suffix):
                word = word[: -len(suffix)]
                break
        tokens.append(Token(i, word, word.lower(), fold(word).replace(" ", ""), word[:1].isupper(), joined))
    return tokens


def name_tokens(name: str) -> tuple[str, ...]:
    """Return the lowercase words of a name as the question tokenizer splits them (``content.team`` -> 2)."""
    return tuple(t.lower for t in tokenize(name))


@dataclass(frozen=True)
class NameEntry:
    """A nameable entity: ``ref`` is whatever the caller needs back (e.g. a Person id)."""

    ref: str
    name: str
    tokens: tuple[str, ...]  # lowercase NFC tokens of the name
    id_form: bool = False  # the tokens are an id (an author slug such as "zoul"): matched in lower case too


@dataclass
class NameMatch:
    """Entries matched on the same question words (``positions``), all with the best ``score``."""

    positions: tuple[int, ...]
    entries: list[NameEntry]
    score: int
    surname_only: bool = False


@dataclass
class NameIndex:
    """Inflected forms of every entry's name tokens, for :meth:`match`."""

    entries: list[NameEntry]
    exact: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # form -> [(entry, token#)]
    folded: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    @classmethod
    def build(cls, entries: Iterable[NameEntry]) -> NameIndex:
        index = cls(list(entries))
        for e, entry in enumerate(index.entries):
            for t, token in enumerate(entry.tokens):
                for form in name_forms(token):
                    index.exact.setdefault(form, []).append((e, t))
                    index.folded.setdefault(fold(form).replace(" ", ""), []).append((e, t))
        return index

    def _token_hits(self, token: Token, typos: bool) -> dict[tuple[int, int], int]:
        hits: dict[tuple[int, int], int] = {}
        for key in self.folded.get(token.folded, ()):
            hits[key] = 2
        # the exact letters outrank a folded match only when the question spelled the word with
        # care -- with diacritics, or capitalised as a name: "Peter Tóth" and "Peter Toth" each
        # name one person, while "peter toth" fits "Peter Toth" and "Peter Tóth" equally (ambiguous)
        exact = 3 if token.lower != token.folded or token.capital else 2
        for key in self.exact.get(token.lower, ()):
            hits[key] = exact
        if typos and not hits and len(token.folded) >= 5 and token.capital:
            for form, keys in self.folded.items():
                if len(form) >= 5 and abs(len(form) - len(token.folded)) <= 1 and damerau1(form, token.folded):
                    for key in keys:
                        hits.setdefault(key, 1)
        return hits

    def match(self, tokens: Sequence[Token], skip: set[int] = frozenset()) -> list[NameMatch]:  # type: ignore[assignment]
        """Return full-name matches (all tokens of a name on adjacent question words, any order).

        At most one word may match by typo.  Matches are grouped by the question words they use;
        within a group only the best score is kept; overlapping groups keep the better one.
        """
        hits = [self._token_hits(tok, typos=True) if tok.index not in skip else {} for tok in tokens]
        by_entry: dict[int, dict[int, list[tuple[int, int]]]] = {}
        for pos, token_hits in enumerate(hits):
            for (e, t), score in token_hits.items():
                by_entry.setdefault(e, {}).setdefault(t, []).append((pos, score))
        found: dict[tuple[int, ...], dict[int, int]] = {}
        for e, per_token in by_entry.items():
            entry = self.entries[e]
            if len(entry.tokens) == 1:  # a one-word name: capitalised, spelled right (exact or folded)
                for pos, score in per_token.get(0, ()):
                    if score >= 2 and (tokens[pos].capital or entry.id_form):
                        found.setdefault((tokens[pos].index,), {})[e] = score
                continue
            if len(per_token) < len(entry.tokens):
                continue
            best = _best_assignment(per_token, len(entry.tokens))
            if best is None:
                continue
            positions, score = best
            found.setdefault(positions, {})[e] = score
        groups = []
        for positions, scores in found.items():
            top = max(scores.values())
            entries = [self.entries[e] for e, s in sorted(scores.items()) if s == top]
            groups.append(NameMatch(positions, entries, top))
        groups.sort(key=lambda g: (-g.score, -len(g.positions), g.positions))
        kept: list[NameMatch] = []
        used: set[int] = set()
        for group in groups:
            if used.isdisjoint(group.positions):
                kept.append(group)
                used.update(group.positions)
        kept.sort(key=lambda g: g.positions)
        return kept

    def match_surname(self, token: Token) -> NameMatch | None:
        """Entries whose last name token matches ``token`` (no typos), best score only."""
        scores: dict[int, int] = {}
        for (e, t), score in self._token_hits(token, typos=False).items():
            if t == len(self.entries[e].tokens) - 1 and len(self.entries[e].tokens) >= 2:
                scores[e] = max(scores.get(e, 0), score)
        if not scores:
            return None
        top = max(scores.values())
        entries = [self.entries[e] for e, s in sorted(scores.items()) if s == top]
        return NameMatch((token.index,), entries, top, surname_only=True)


def _best_assignment(
    per_token: dict[int, list[tuple[int, int]]], size: int
) -> tuple[tuple[int, ...], int] | None:
    """Choose one question position per name token: distinct, adjacent, at most one typo, best score."""
    best: tuple[tuple[int, ...], int] | None = None

    def walk(t: int, chosen: list[tuple[int, int]]) -> None:
        nonlocal best
        if t == size:
            positions = sorted(p for p, _ in chosen)
            if positions[-1] - positions[0] != size - 1 or sum(s == 1 for _, s in chosen) > 1:
                return
            score = sum(s for _, s in chosen)
            if best is None or score > best[1]:
                best = (tuple(positions), score)
            return
        for pos, score in per_token.get(t, ()):
            if all(pos != p for p, _ in chosen):
                walk(t + 1, chosen + [(pos, score)])

    walk(0, [])
    return best


def find_years(tokens: Sequence[Token]) -> list[int]:
    """Four-digit years 1900-2099 in question order, de-duplicated."""
    return list(dict.fromkeys(int(t.text) for t in tokens if _YEAR.fullmatch(t.text)))


def looks_like_person_name(run: Sequence[Token], single: bool = False, lexicon: bool = True) -> bool:
    """Whether a run of capitalised question words can be a person's name: two to four words (one
    also, with ``single``: a bare surname) of
    letters only, each capitalised and not all capitals (no acronym), none glued to the previous one
    (``Česko.Digital``), and not every one an English dictionary word (simplemma's English lexicon:
    ``Ministry Defence``, ``Open Data Day``, ``Code Germany`` are no names; Czech and Slovak
    lexicons list given names and surnames, so they cannot tell; ``lexicon=False`` skips this test,
    for a word a person question names: ``Eva`` in "Aké práce má Eva?").  An English name made of
    dictionary words (``Grace Hopper``) is not recognised as one."""
    if not (1 if single else 2) <= len(run) <= 4:
        return False
    for i, token in enumerate(run):
        letters = token.text.replace("-", "").replace("'", "").replace("’", "")
        if not letters.isalpha() or not token.text[:1].isupper() or (len(letters) > 1 and letters.isupper()):
            return False
        if i and token.joined:
            return False
    return not lexicon or not all(_english_word(t.lower) for t in run)


def _english_word(word: str) -> bool:
    from artifacts.graphmap import NAME_LEXICON
    from artifacts.lexicon import is_known

    return is_known(word, NAME_LEXICON)


def capital_runs(tokens: Sequence[Token], ignore: set[str]) -> list[list[Token]]:
    """Maximal runs of adjacent capitalised words, leaving out words in ``ignore`` (folded)."""
    runs: list[list[Token]] = []
    current: list[Token] = []
    for token in tokens:
        if token.capital and token.folded not in ignore and not token.text.isdigit():
            current.append(token)
        else:
            if current:
                runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs
