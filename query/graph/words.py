"""Question words of graph retrieval: the mapping's vocabulary compiled for matching.

The vocabulary is data (:func:`artifacts.graphmap.question_words`: ``artifacts/graphwords.yaml``
plus the mapping's ``questions`` section; work-type words from ``works.types``).  This module only
reads it: every question word is compared in its own folded form and in its folded simplemma
lemmas for each language of the vocabulary's ``lemmatize`` list (default: its ``languages``), so
entries are written as lemmas and cover inflected
forms ("odkazovať" matches "odkazujú").  An entry ending in ``*`` is a prefix; an entry of several
words matches consecutive question words.  Stop words (stopwordsiso, per language) and the
``filler`` concept are words a question may contain without changing what it asks.

Graph answers are phrased in the question's language with the words of the ``answers`` section of
the same file (:func:`phrasing`): a new language is new lists and phrases, not new code.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from artifacts.analysis import fold
from artifacts.graphmap import GraphMapping, answer_words, lemma_languages, question_words, words_of
from artifacts.lexicon import lemmatize
from query.graph.names import Token, damerau1


def _fold_word(word: str) -> str:
    return fold(word).replace(" ", "")


@dataclass(frozen=True)
class Entry:
    """One vocabulary entry: folded words (``prefix`` per word) and the language it belongs to."""

    words: tuple[tuple[str, bool], ...]
    lang: str
    literal: bool = False  # compare with the word as written only (prepositions), never lemmas


def _entry(text: str, lang: str, literal: bool = False) -> Entry | None:
    parts = []
    for word in str(text).split():
        prefix = word.endswith("*")
        folded = _fold_word(word.rstrip("*"))
        if folded:
            parts.append((folded, prefix))
    return Entry(tuple(parts), lang, literal) if parts else None


def _entries(words: Any, languages: Sequence[str], literal: bool = False) -> list[Entry]:
    out: list[Entry] = []
    per_lang = words if isinstance(words, dict) else {lang: words for lang in languages}
    for lang, items in per_lang.items():
        for item in items or ():
            if (entry := _entry(item, str(lang), literal)) is not None:
                out.append(entry)
    return out


@lru_cache(maxsize=65536)
def _lemmas(word: str, languages: tuple[str, ...]) -> frozenset[str]:
    forms = {_fold_word(word)}
    for lang in languages:
        try:
            # simplemma's lemma, from the lexicon file (no dictionary decoded per process)
            forms.add(_fold_word(lemmatize(word, lang)))
        except ValueError:  # a language simplemma does not know: the word itself only
            continue
    forms.discard("")
    return frozenset(forms)


@lru_cache(maxsize=16)
def _stopwords(languages: tuple[str, ...]) -> frozenset[str]:
    try:
        import stopwordsiso
    except ImportError:  # pragma: no cover - declared dependency
        return frozenset()
    words: set[str] = set()
    for lang in languages:
        words.update(_fold_word(w) for w in stopwordsiso.stopwords(lang))
    return frozenset(words)


@dataclass
class Vocabulary:
    """A mapping's question words, ready for :meth:`find`."""

    languages: tuple[str, ...]
    possessive_suffixes: tuple[str, ...]
    concepts: dict[str, list[Entry]]
    work_types: dict[str, list[Entry]]
    links: dict[str, list[Entry]]
    verb_before_title: dict[str, str]
    stopwords: frozenset[str] = field(default_factory=frozenset)
    lemma_languages: tuple[str, ...] = ()  # languages whose lemmas are compared (default: ``languages``)
    structure: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Concept names of a structure question (``asks``, ``targets``, ``selectors``,
    ``selectors_with_name``; see the ``structure`` section of graphwords.yaml)."""
    _first_cache: dict[int, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_mapping(cls, mapping: GraphMapping) -> Vocabulary:
        data = question_words(mapping)
        languages = tuple(str(x) for x in data.get("languages") or ("sk", "cs", "en"))
        concepts = {name: _entries(words, languages) for name, words in (data.get("concepts") or {}).items()}
        work_types: dict[str, list[Entry]] = {}
        if mapping.works is not None:
            for key, work_type in mapping.works.types.items():
                # a plain list is the first mapping format: stems compared by prefix ("bakalar")
                work_types[key] = _entries(work_type.words, languages) if isinstance(work_type.words, dict) \
                    else _entries([w if w.endswith("*") else w + "*" for w in words_of(work_type.words)], languages)
        links_data = data.get("links") or {}
        links = {
            name: _entries(links_data.get(name) or {}, languages, literal=name in ("incoming", "outgoing"))
            for name in ("incoming", "outgoing", "incoming_words", "outgoing_words", "fillers")
        }
        return cls(
            languages=languages,
            possessive_suffixes=tuple(str(s).lower() for s in data.get("possessive_suffixes") or ()),
            concepts=concepts,
            work_types=work_types,
            links=links,
            verb_before_title={str(k): str(v) for k, v in (links_data.get("verb_before_title") or {}).items()},
            stopwords=_stopwords(tuple(str(x) for x in data.get("stopwords") or languages)),
            lemma_languages=lemma_languages(mapping),
            structure={str(k): tuple(str(c) for c in v or ()) for k, v in (data.get("structure") or {}).items()},
        )

    def forms(self, token: Token) -> frozenset[str]:
        """The folded word and its folded lemmas in every language of the vocabulary."""
        return _lemmas(token.lower, self.lemma_languages or self.languages)

    def _word_matches(self, token: Token, word: str, prefix: bool, literal: bool) -> bool:
        forms = {token.folded} if literal else self.forms(token)
        return any(f == word or (prefix and f.startswith(word)) for f in forms)

    def match_at(self, tokens: Sequence[Token], start: int, entry: Entry, free: set[int]) -> int:
        """Number of words ``entry`` covers when it starts at ``start`` (0: no match)."""
        for k, (word, prefix) in enumerate(entry.words):
            pos = start + k
            if pos >= len(tokens) or pos not in free:
                return 0
            if not self._word_matches(tokens[pos], word, prefix, entry.literal):
                return 0
        return len(entry.words)

    def _first_words(self, entries: list[Entry]) -> tuple[dict[str, list[Entry]], list[tuple[str, list[Entry]]]]:
        """Entries by their first word: exact words in a dict, prefixes in a list (cached per list)."""
        key = id(entries)
        cached = self._first_cache.get(key)
        if cached is None or cached[0] is not entries:
            exact: dict[str, list[Entry]] = {}
            prefixes: dict[str, list[Entry]] = {}
            for entry in entries:
                word, prefix = entry.words[0]
                (prefixes if prefix else exact).setdefault(word, []).append(entry)
            cached = (entries, exact, list(prefixes.items()))
            self._first_cache[key] = cached
        return cached[1], cached[2]

    def find(self, tokens: Sequence[Token], entries: Iterable[Entry], free: set[int]) -> list[tuple[int, int, str]]:
        """Matches ``(start, end exclusive, language)`` of ``entries`` on the ``free`` positions."""
        entries = entries if isinstance(entries, list) else list(entries)
        exact, prefixes = self._first_words(entries)
        found = []
        for start in sorted(free):
            token = tokens[start]
            forms = self.forms(token)
            candidates = [e for f in forms | {token.folded} for e in exact.get(f, ())]
            candidates += [e for word, es in prefixes if any(f.startswith(word) for f in forms | {token.folded})
                           for e in es]
            for entry in dict.fromkeys(candidates):
                if n := self.match_at(tokens, start, entry, free):
                    found.append((start, start + n, entry.lang))
        return found

    def find_work_types(self, tokens: Sequence[Token], free: set[int]) -> tuple[list[str], set[int]]:
        """Work types named on ``free`` positions (a one-edit typo allowed in prefixes of 5+ letters)."""
        named, per_type = self.work_type_spans(tokens, free)
        return named, {p for positions in per_type.values() for p in positions}

    def is_entry_word(self, folded: str) -> bool:
        """Whether ``folded`` is a one-word entry of some concept (a prefix entry counts when it begins it)."""
        for entries in self.concepts.values():
            exact, prefixes = self._first_words(entries)
            if any(len(e.words) == 1 for e in exact.get(folded, ())):
                return True
            if any(folded.startswith(w) and any(len(e.words) == 1 for e in es) for w, es in prefixes):
                return True
        return False

    def work_type_spans(self, tokens: Sequence[Token], free: set[int]) -> tuple[list[str], dict[str, set[int]]]:
        """Work types named on ``free`` positions and, per type, the positions that name it."""
        named: list[str] = []
        per_type: dict[str, set[int]] = {}
        for key, entries in self.work_types.items():
            hits = self.find(tokens, entries, free)
            if not hits:
                for pos in sorted(free):
                    word = tokens[pos].folded
                    if len(word) < 5 or word in self.stopwords:
                        continue
                    for entry in entries:
                        if len(entry.words) == 1 and entry.words[0][1] and len(stem := entry.words[0][0]) >= 5 and any(
                            damerau1(word[:n], stem) for n in (len(stem) - 1, len(stem), len(stem) + 1)
                        ):
                            hits.append((pos, pos + 1, entry.lang))
            if hits:
                named.append(key)
                per_type[key] = {p for start, end, _ in hits for p in range(start, end)}
        return named, per_type

    def is_stopword(self, token: Token) -> bool:
        return token.folded in self.stopwords or token.lower in self.stopwords


@dataclass(frozen=True)
class Phrasing:
    """The words graph answers are phrased in, for one language (``answers`` in graphwords.yaml).

    ``count``/``more``: ``str.format`` templates with ``{count}``; ``predicates``: templates with
    ``{subject}`` and ``{object}`` per graph predicate; ``quotes``: marks around a title;
    ``premise_holds``/``premise_fails``: the opening of an answer that confirms / corrects a stated fact.
    """

    lang: str
    quotes: tuple[str, str]
    count: str
    more: str
    untitled: str
    predicates: dict[str, str]
    premise_holds: str = ""
    premise_fails: str = ""

    def title(self, text: str) -> str:
        """``text`` in this language's title quotes (``„Příručka“``)."""
        return f"{self.quotes[0]}{text}{self.quotes[1]}"


@lru_cache(maxsize=16)
def phrasing(lang: str | None) -> Phrasing:
    """Return the :class:`Phrasing` of ``lang`` (the file's ``default`` language when ``lang`` is
    ``None`` or has no phrases).

    :raises GraphMappingError: the shared vocabulary file has no usable ``answers`` section.
    """
    data = answer_words()
    chosen = lang if lang is not None and isinstance(data.get(lang), dict) else str(data["default"])
    words = data[chosen]
    quotes = tuple(str(q) for q in words.get("quotes") or ("„", "“"))
    return Phrasing(
        lang=chosen,
        quotes=(quotes[0], quotes[-1]),
        count=str(words["count"]),
        more=str(words["more"]),
        untitled=str(words["untitled"]),
        predicates={str(k): str(v) for k, v in (words.get("predicates") or {}).items()},
        premise_holds=str(words.get("premise_holds") or ""),
        premise_fails=str(words.get("premise_fails") or ""),
    )


def phrasings() -> list[Phrasing]:
    """Every language's :class:`Phrasing` (for re-checking an answer in any language)."""
    return [phrasing(lang) for lang, words in answer_words().items() if isinstance(words, dict)]
