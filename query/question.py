"""One analysis of a question, made once per request and handed to the answer path.

:func:`analyse_question` reads the question with the language profiles (:mod:`artifacts.text.profile`):
the detected language, the answer type its opening interrogative asks for, and its content words.
Nothing in this module names a word of a natural language; every word comes from a profile.

The answer type is read from the *first* question word of the question
(:func:`artifacts.text.profile.question_type`): "Which date format …?" asks for a ``choice``, not a
``time``, and "What happens when …?" for nothing in particular, because the interrogative that opens
the question decides, not a word further on.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from artifacts.text.profile import detect_language, question_type
from query.answer.sentences import analyze, content_words

VALUE_TYPES = frozenset({"count", "quantity", "time", "person", "place", "procedure", "definition"})
"""Answer types whose answer is a recognisable kind of value (:func:`query.answer.answerability.holds_value`)."""


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


@lru_cache(maxsize=4096)
def analyse_question(text: str) -> QuestionAnalysis:
    """Return the :class:`QuestionAnalysis` of ``text`` (cached; pure)."""
    language = detect_language(text)
    kind, phrase = question_type(analyze(text), language)
    skip = set(phrase.split()) if phrase else set()
    words = tuple(w for w in content_words(text) if w not in skip)
    return QuestionAnalysis(text, language, kind, phrase, words)


__all__ = ["VALUE_TYPES", "QuestionAnalysis", "analyse_question"]
