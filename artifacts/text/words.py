"""Words of a text as the index reads them: folded tokens, stop words, content words, inflection matching.

The one word tokenizer of index and question alike: :func:`analyze` yields the BM25 folding analyzer's
tokens (:func:`artifacts.analysis.folding_analyzer`: NFC, lower case, diacritics removed), so
``Česko.Digital`` is the same token(s) for the index and for a question.  Content words are those
tokens minus stop words (stopwords-iso lists, folded; numbers are never stop words).  Inflected forms
match by :func:`words_match` (a shared prefix), Slovak/Czech cognates by :func:`cognate_key`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from artifacts.analysis import fold_token, folded_spans, folding_analyzer, normalize_text

_STOP_LANGS = ("sk", "cs", "en", "de", "pl")


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """Folded stop words of sk, cs, en, de and pl (stopwords-iso), without numbers."""
    import stopwordsiso

    listed = [word for lang in _STOP_LANGS for word in stopwordsiso.stopwords(lang)
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


_INFINITIVE = re.compile(r"(?:[aeiouyáéěíóúůý]|ou)(?:t|ť|ti)$|ci$")
"""A Czech/Slovak infinitive ending (``sejít``, ``vybudovať``, ``pracovat``, ``ísť``, ``péci``)."""


def verb_words(text: str) -> frozenset[str]:
    """Return the folded words of ``text`` that are Czech or Slovak verb forms.

    A word is a verb form when simplemma (cs, sk) lemmatises it to another word that ends like an
    infinitive: ``sešlo`` -> ``sejít``, ``vybudoval`` -> ``vybudovat``.  Words simplemma leaves as
    they are (``kontrakt``, ``student``, unknown words like ``hackdayi``) and capitalised words (names)
    are not.  Used to tell what a question is about (its nouns) from what it says happened (a verb the
    pages may paraphrase).
    """
    return frozenset(fold_word(w) for w in re.findall(r"[^\W\d_]+", text) if w.islower() and _is_verb(w))


@lru_cache(maxsize=16384)
def _is_verb(word: str) -> bool:
    import simplemma

    lower = word.lower()
    for lang in ("cs", "sk"):
        lemma = simplemma.lemmatize(lower, lang=lang).lower()
        if lemma != lower and _INFINITIVE.search(lemma):
            return True
    return False


_COGNATE = re.compile(r"ie|ou")


def cognate_key(word: str) -> str:
    """Return the folded word with the regular Slovak/Czech vowel correspondences merged.

    Slovak ``ie`` = Czech ``í`` (``ciele``/``cíle``, ``miesto``/``místo``) and Czech ``ou`` =
    Slovak ``ú`` (``mouka``/``múka``) become ``i`` and ``u``; diacritics are already folded, so
    ``ô``/``ů``, ``ä``/``ě`` and ``ř``/``r`` need nothing more.
    """
    return _COGNATE.sub(lambda m: m.group(0)[-1] if m.group(0) == "ou" else "i", word)


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
