"""Words of a text as the index reads them: folded tokens, stop words, content words, inflection matching.

The one word tokenizer of index and question alike: :func:`analyze` yields the BM25 folding analyzer's
tokens (:func:`artifacts.analysis.folding_analyzer`: NFC, lower case, diacritics removed), so
``Česko.Digital`` is the same token(s) for the index and for a question.  Content words are those
tokens minus stop words (the stopwords-iso list of every language profile, folded; numbers are never
stop words).  Inflected forms match by :func:`words_match` (a shared prefix), cognates of close languages
(Slovak/Czech) by :func:`cognate_key` (the profiles' ``cognates``).  The language knowledge is in the
profiles (:mod:`artifacts.text.profile`); this module names no language.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from artifacts.analysis import fold_token, folded_spans, folding_analyzer, normalize_text
from artifacts.text.profile import available, load_profile, text_languages


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """Folded stop words of every installed language profile (the stopwords-iso list its ``stopwords`` names),
    without numbers.  One set for every text: a question mixes languages ("Aký je default timeout?") and
    reading one language's list would keep the other's function words as content words."""
    import stopwordsiso

    langs = [lang for lang in (load_profile(code).stopwords for code in available()) if lang]
    listed = [word for lang in langs for word in stopwordsiso.stopwords(lang)
              if not any(ch.isdigit() for ch in word)]
    # The analyzer's tokens of each word: one line per word, folded in one pass (a line break is no
    # token character, so no token spans two words).
    return frozenset(folded for folded, _, _ in folded_spans(normalize_text("\n".join(listed))))


def analyze(text: str) -> list[str]:
    """Return the folded BM25 tokens of ``text`` (NFC, lowercase, diacritics removed), in order."""
    return list(_analyze(text))


@lru_cache(maxsize=1)
def _analyzer():  # type: ignore[no-untyped-def]
    return folding_analyzer()


@lru_cache(maxsize=16384)
def _analyze(text: str) -> tuple[str, ...]:
    return tuple(t.text for t in _analyzer()(normalize_text(text)))


@lru_cache(maxsize=16384)
def word_set(text: str) -> WordSet:
    """Return the (cached) :class:`WordSet` of the folded tokens of ``text``."""
    return WordSet(_analyze(text))


def content_words(text: str) -> list[str]:
    """Return the distinct folded content words of ``text`` in order (stop words dropped)."""
    stops = stop_words()
    return list(dict.fromkeys(w for w in analyze(text) if w not in stops and (len(w) > 1 or w.isdigit())))


@lru_cache(maxsize=1)
def verb_languages() -> tuple[str, ...]:
    """Codes of the profiles whose verb forms :func:`verb_words` tells: those with an ``infinitive_ending``
    class and a simplemma language (Slovak and Czech)."""
    return tuple(code for code in available()
                 if load_profile(code).words("infinitive_ending") and load_profile(code).simplemma)


def verb_words(text: str) -> frozenset[str]:
    """Return the folded words of ``text`` that are verb forms in the text's languages (of :func:`verb_languages`).

    A word is a verb form when simplemma (in a language of the text's profiles,
    :func:`artifacts.text.profile.text_languages`) lemmatises it to another word that ends like an
    infinitive (the profile's ``infinitive_ending``, as written): ``sešlo`` -> ``sejít``, ``vybudoval`` ->
    ``vybudovat``.  Words simplemma leaves as they are (``kontrakt``, ``student``, unknown words like
    ``hackdayi``) and capitalised words (names) are not.  Used to tell what a question is about (its nouns)
    from what it says happened (a verb the pages may paraphrase).
    """
    codes = tuple(code for code in text_languages(text) if code in verb_languages())
    if not codes:
        return frozenset()
    return frozenset(fold_word(w) for w in re.findall(r"[^\W\d_]+", text) if w.islower() and _is_verb(w, codes))


@lru_cache(maxsize=16384)
def _is_verb(word: str, codes: tuple[str, ...]) -> bool:
    from artifacts.lexicon import lemmatize

    lower = word.lower()
    for code in codes:
        prof = load_profile(code)
        if prof.simplemma is None:
            continue
        lemma = lemmatize(lower, prof.simplemma).lower()
        if lemma != lower and lemma.endswith(prof.raw_words("infinitive_ending")):
            return True
    return False


@lru_cache(maxsize=1)
def _cognates() -> tuple[re.Pattern[str] | None, dict[str, str]]:
    table: dict[str, str] = {}
    for code in available():
        table.update(load_profile(code).cognates)
    if not table:
        return None, table
    return re.compile("|".join(re.escape(k) for k in sorted(table, key=len, reverse=True))), table


def cognate_key(word: str) -> str:
    """Return the folded word with the regular letter correspondences of close languages merged.

    The ``cognates`` of the profiles: Slovak ``ie`` = Czech ``í`` (``ciele``/``cíle``, ``miesto``/``místo``)
    and Czech ``ou`` = Slovak ``ú`` (``mouka``/``múka``) become ``i`` and ``u``; diacritics are already
    folded, so ``ô``/``ů``, ``ä``/``ě`` and ``ř``/``r`` need nothing more.
    """
    pattern, table = _cognates()
    return pattern.sub(lambda m: table[m.group(0)], word) if pattern is not None else word


def _prefix_match(a: str, b: str) -> bool:
    shorter = min(len(a), len(b))
    if shorter < 4 or (shorter <= 5 and max(len(a), len(b)) - shorter > 2):
        return False
    need = shorter - 1 if shorter <= 5 else max(4, shorter - 2)
    return a[:need] == b[:need]


def words_match(a: str, b: str) -> bool:
    """True when folded words ``a`` and ``b`` are the same word up to inflection (or a Slovak/Czech cognate).

    Equal, or (both alphabetic, the shorter one at least 4 letters) sharing a prefix of the
    shorter length minus 1 for words of 4-5 letters when the other is at most 2 letters longer
    (``jany``/``jana``, ``prace``/``praca``, ``night``/``nightly``, not ``stav``/``standard``)
    and of ``max(4, shorter length - 2)`` for longer ones (``zadania``/``zadanie``,
    ``strakovej``/``strakova``), directly or after :func:`cognate_key` (``cile``/``ciele``).
    Numbers match only exactly.
    """
    if a == b:
        return True
    if not (a.isalpha() and b.isalpha()):
        return False
    if _prefix_match(a, b):
        return True
    ca, cb = cognate_key(a), cognate_key(b)
    return (ca != a or cb != b) and (ca == cb or _prefix_match(ca, cb))


class WordSet:
    """Folded words of a text, indexed for :func:`words_match` look-ups."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words = set(words)
        self._by_prefix: dict[str, set[str]] = {}
        for word in self.words:
            if word.isalpha() and len(word) >= 4:
                self._by_prefix.setdefault(word[:3], set()).add(word)
                key = cognate_key(word)
                if key[:3] != word[:3]:
                    self._by_prefix.setdefault(key[:3], set()).add(word)

    def has(self, word: str) -> bool:
        """True when some word of the set matches ``word`` (:func:`words_match`)."""
        if word in self.words:
            return True
        if not word.isalpha() or len(word) < 4:
            return False
        keys = {word[:3], cognate_key(word)[:3]}
        return any(words_match(word, other) for key in keys for other in self._by_prefix.get(key, ()))


def fold_word(word: str) -> str:
    """Return one word lowercased (NFC) with diacritics folded."""
    return fold_token(normalize_text(word).lower())
