"""One analysis of a question, made once per request and handed to the answer path.

:func:`analyse_question` reads the question with the language profiles (:mod:`artifacts.text.profile`):
the detected language, the answer type its opening interrogative asks for, and its content words.
Nothing in this module names a word of a natural language; every word comes from a profile.

The answer type is read from the *first* question word of the question (scanning tokens from the start,
the longest profile phrase at each position wins): "Which date format …?" asks for a ``choice``, not a
``time``, and "What happens when …?" for nothing in particular, because the interrogative that opens
the question decides, not a word further on.  ``yes_no`` words count only as the question's first word.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from artifacts.text.profile import Profile, available, detect_language, load_profile

from .sentences import analyze, content_words

VALUE_TYPES = frozenset({"count", "quantity", "time", "person", "place", "procedure", "definition"})
"""Answer types whose answer is a recognisable kind of value (:func:`query.answerability.holds_value`)."""


@dataclass(frozen=True)
class QuestionAnalysis:
    """What one question asks, read once.

    ``text``: the question as asked; ``language``: the detected profile code (``None`` when it cannot be
    told); ``answer_type``: one of :data:`artifacts.text.profile.ANSWER_TYPES` or ``None``;
    ``question_phrase``: the folded profile phrase that set it; ``content_words``: the folded content
    words (stop words dropped) in order, without the question phrase's own words.
    """

    text: str
    language: str | None
    answer_type: str | None
    question_phrase: str | None
    content_words: tuple[str, ...]

    @property
    def wants_value(self) -> bool:
        """True when the answer type is a kind of value a unit can be seen to hold."""
        return self.answer_type in VALUE_TYPES


def _profiles_for(language: str | None) -> list[Profile]:
    if language is not None:
        return [load_profile(language)]
    return [load_profile(code) for code in available()]


def _phrase_table(profiles: list[Profile]) -> dict[tuple[str, ...], str]:
    table: dict[tuple[str, ...], str] = {}
    for prof in profiles:
        for phrase, kind in prof.question_words.items():
            table.setdefault(tuple(phrase.split()), kind)
    return table


def answer_type_of(tokens: list[str], profiles: list[Profile]) -> tuple[str | None, str | None]:
    """Return ``(answer type, phrase)`` of the first question phrase in folded ``tokens``, else ``(None, None)``."""
    table = _phrase_table(profiles)
    longest = max((len(k) for k in table), default=0)
    for i in range(len(tokens)):
        for n in range(min(longest, len(tokens) - i), 0, -1):
            kind = table.get(tuple(tokens[i:i + n]))
            if kind is None or (kind == "yes_no" and i > 0):
                continue
            return kind, " ".join(tokens[i:i + n])
    return None, None


@lru_cache(maxsize=4096)
def analyse_question(text: str) -> QuestionAnalysis:
    """Return the :class:`QuestionAnalysis` of ``text`` (cached; pure)."""
    language = detect_language(text)
    tokens = analyze(text)
    kind, phrase = answer_type_of(tokens, _profiles_for(language))
    if kind is None and language is not None:  # a question word of another profile language
        kind, phrase = answer_type_of(tokens, _profiles_for(None))
    skip = set(phrase.split()) if phrase else set()
    words = tuple(w for w in content_words(text) if w not in skip)
    return QuestionAnalysis(text, language, kind, phrase, words)


__all__ = ["VALUE_TYPES", "QuestionAnalysis", "analyse_question", "answer_type_of"]
