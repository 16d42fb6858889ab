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

import re
from dataclasses import dataclass
from functools import lru_cache

from artifacts.analysis import normalize_text
from artifacts.text.profile import (
    detect_language,
    frame_patterns,
    possessive,
    question_languages,
    question_type,
    word_class,
)
from artifacts.text.words import analyze, content_words, fold_word, stop_words

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


# --------------------------------------------------------------------------- what a question asks
#
# Word classes of the question's profiles (artifacts/text/profiles/<code>.yaml, read for the question's
# detected language and its close languages, quoted titles left out,
# :func:`artifacts.text.profile.question_languages`):
# ``question_frame`` (words that frame a question and are never its topic), ``time_word`` (words that only
# say a time is asked), ``grade_cue``, ``count_cue`` / ``amount_cue`` / ``count_noun``, ``determiner`` and
# ``head_pronoun`` (what the thing asked for follows), ``question_copula``, ``article``.


@dataclass(frozen=True)
class QuestionFocus:
    """What kind of value a question asks for and which of its words carry the topic.

    ``kind``: ``count`` (koľko / kolik / how many / počet: a number), ``time`` (kedy / kdy /
    when / what time / v ktorom roku: a date, year, time of day, weekday, month or period),
    ``grade`` (známka / hodnotenie / grade: a grade value) or ``None`` (no particular value);
    ``words``: the question's folded content words without interrogatives and the nouns that
    only name the kind of value (``time`` of "what time"), in order; ``head``: the word right
    after a determiner or count interrogative (and a copula), or after a pronoun and a copula:
    ``heslo`` in "Aké je heslo ...?", ``grafickych`` in "Koľko grafických kariet ...?",
    ``oponentom`` in "Kto bol oponentom ...?", else ``None`` (what the question asks about, when
    it can be told without a part-of-speech tagger).
    """

    kind: str | None
    words: tuple[str, ...]
    head: str | None = None
    thing: str | None = None
    """The ``head`` of a "which/what X" question that asks for no value ("heslo" in "Jaké je heslo k
    firemní wifi?"): the thing asked for, which a claim's own words must name."""


def question_focus(question: str) -> QuestionFocus:
    """Return the :class:`QuestionFocus` of ``question`` (cue words of the question's profiles, matched folded)."""
    codes = question_languages(question)
    tokens = analyze(question)
    kind: str | None = None
    if any(word_class("grade_cue", codes).has(t) for t in tokens):
        kind = "grade"
    elif word_class("count_cue", codes).in_text(tokens) or word_class("amount_cue", codes).in_text(tokens):
        kind = "count"
    elif question_type(list(tokens), detect_language(question))[0] == "time":
        kind = "time"
    frame = word_class("question_frame", codes)
    words = [w for w in content_words(question) if not frame.has(w)]
    if kind == "time":
        words = [w for w in words if not word_class("time_word", codes).has(w)]
    if kind == "count":
        words = [w for w in words if not word_class("count_noun", codes).has(w)]
    determiners, pronouns = word_class("determiner", codes), word_class("head_pronoun", codes)
    copulas, articles = word_class("question_copula", codes), word_class("article", codes)
    head = thing = None
    for i, token in enumerate(tokens):
        if determiners.has(token):  # "aké je heslo", "koľko grafických kariet", "which dataset"
            rest = [t for t in tokens[i + 1:] if not copulas.has(t) and not articles.has(t)]
            head = rest[0] if rest and rest[0] in words else None
            thing = head if kind is None else None
            break
        if pronouns.has(token) and i + 2 < len(tokens) and copulas.has(tokens[i + 1]):  # "kto bol oponentom"
            head = tokens[i + 2] if tokens[i + 2] in words else None
            break
    return QuestionFocus(kind, tuple(words), head, thing)


# --------------------------------------------------------------------------- definition questions

# Word classes and frames of the question's profiles: ``frames.definition_thing`` / ``definition_person``
# (what or who X is), ``definition_particle``, ``definition_qualifier``, ``definition_location``,
# ``relative``, ``article``; ``category_noun`` and ``role_noun`` (:func:`is_category`, :func:`is_role`).
SUBJECT_WORD = re.compile(r"\w+(?:[.\-–/&+']\w+)*")



@dataclass(frozen=True)
class DefinitionQuestion:
    """A question that asks what (``kind`` ``thing``: "Co je X?", "What is X?", "Was ist X?") or who
    (``person``: "Kdo je X?", "Who is X?") ``subject`` is.

    ``words``: the subject's folded words (articles dropped); ``names``: those written with a capital
    letter, a digit or an inner dot (``Jehlomat``, ``UNIPA``, ``Česko.Digital``), else all ``words``:
    a sentence must name them to be about the subject ("projekt Jehlomat" is about ``jehlomat``); after a
    leading noun of its kind the words that follow ("projekt Dáme roušky" names ``dame rousky``), and
    a name with a lower-case word inside ("Code for Romania") is named whole.
    """

    kind: str
    subject: str
    words: tuple[str, ...]
    names: tuple[str, ...]
    qualifier: tuple[str, ...] = ()
    """Folded name words of what qualifies the subject: ``("cesko.digital",)`` of "Co je projekt X od
    Česko.Digital?" and of "Co je Mastermind, který pořádá Česko.Digital?" (a quote must name them too,
    in itself or the headings above it)."""


def definition_question(question: str) -> DefinitionQuestion | None:
    """Return the :class:`DefinitionQuestion` of ``question`` (cs, sk, en, de), or ``None``.

    Only a whole question of the form *frame + subject* counts, with a subject of 1-5 words that
    contains no lower-case stop word (a leading article is dropped) and no possessive: "What is the title of
    X's thesis?" and "Čo je v zadaní práce?" ask for something else.
    """
    codes = question_languages(question)
    # particles ("Co to vlastně je X?") do not change what is asked
    particles = word_class("definition_particle", codes)
    text = " ".join(w for w in normalize_text(question).split() if not particles.has(fold_word(w))).rstrip(" ?!.")
    match = None
    kind = ""
    for frame_kind in ("thing", "person"):
        for frame in frame_patterns(f"definition_{frame_kind}", codes):
            match = frame.fullmatch(text)
            if match:
                kind = frame_kind
                break
        if match:
            break
    if match is None:
        return None
    subject, qualifier = _qualified(match.group("x").strip(" \"'„“”‚‘’«»*"), codes)
    raw = SUBJECT_WORD.findall(subject)
    articles = word_class("article", codes)
    while raw and articles.has(fold_word(raw[0])):
        raw = raw[1:]
    owner = possessive(codes)
    if not 1 <= len(raw) <= 5 or (owner is not None and owner.search(subject)):
        return None
    if kind == "person" and len(raw) >= 2 and raw[0].islower() and is_role(raw[0], codes, bounded=False):
        return None  # "Kdo je zakladatelem Česko.Digital?" asks who holds a role, not who someone is
    stops = stop_words()
    words = tuple(fold_word(w) for w in raw)
    named = [i for i, w in enumerate(raw) if not w.islower() or any(c.isdigit() or c == "." for c in w)]
    inside = range(named[0] + 1, named[-1]) if named else range(0)
    lead_kind = len(raw) >= 2 and raw[0].islower() and is_category(raw[0], codes=codes) and bool(named)  # "téma X"
    if any(fold_word(w) in stops for i, w in enumerate(raw)
           if w.islower() and i not in inside and not (i == 0 and lead_kind)):
        return None  # "Co je v zadání", "Co je nového": no subject (a capitalised "Nový" is a name word)
    if any(i in inside for i, w in enumerate(raw) if w.islower()):
        names = tuple(words[named[0]:named[-1] + 1])  # "Code for Romania": one name with a word inside
    elif len(raw) >= 2 and raw[0].islower() and is_category(raw[0], codes=codes) and named:
        names = words[1:]  # "projekt Dáme roušky": what follows the noun of its kind is the name
    else:
        names = tuple(words[i] for i in named)
    return DefinitionQuestion(kind, " ".join(raw), words, names or words, qualifier)


def _qualified(subject: str, codes: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """Split a definition question's subject from what qualifies it: "projekt X od Česko.Digital" ->
    ``("projekt X", ("cesko.digital",))``, "Mastermind, který pořádá Česko.Digital" -> ``("Mastermind",
    ("cesko.digital",))`` (a qualifying preposition of the profiles' ``definition_qualifier`` or
    ``definition_location`` after the first word, or a ``relative`` clause after a comma).  The qualifier is
    its capitalised words (names), else its words that are no stop words; ``()`` when nothing qualifies the subject."""
    head, rest, located = subject, "", False
    comma = re.match(r"([^,]+),\s*(\w+)\s+(.+)", subject)
    if comma and word_class("relative", codes).has(fold_word(comma.group(2))):
        head, rest = comma.group(1), comma.group(3)
    else:
        words = subject.split()
        for i, word in enumerate(words[1:], 1):
            # where X is ("na wiki", "at Česko.Digital") qualifies only a subject that names something:
            # "Co je nového v Česko.Digital?" has no subject
            where = word_class("definition_location", codes).has(fold_word(word))
            if where and not any(not w.islower() for w in words[:i]):
                continue
            if (word.islower() and i + 1 < len(words)
                    and (where or word_class("definition_qualifier", codes).has(fold_word(word)))):
                head, rest, located = " ".join(words[:i]), " ".join(words[i + 1:]), where
                break
    if not rest:
        return subject, ()
    raw = SUBJECT_WORD.findall(rest)
    names = tuple(fold_word(w) for w in raw if not w.islower())
    if located and not names:
        return head.strip(), ()  # "Co je Jehlomat v praxi?": where X is, named by nothing the quote must repeat
    return head.strip(), names or tuple(fold_word(w) for w in raw if fold_word(w) not in stop_words())


def is_role(word: str, codes: tuple[str, ...] | None = None, *, bounded: bool = True) -> bool:
    """Whether ``word`` is a noun for a person's role ("koordinátorka"; "Product Owner"'s "owner" is not): a
    ``role_noun`` prefix of the profiles ``codes`` (every profile when None) begins it; ``bounded``: and it
    has at most 14 letters."""
    folded = fold_word(word)
    return word_class("role_noun", codes).has(folded) and (not bounded or len(folded) <= 14)


def is_category(word: str, kind: str = "thing", codes: tuple[str, ...] | None = None) -> bool:
    """Whether ``word`` is a noun of the kind of a thing (``category_noun`` of the profiles ``codes``, every
    profile when None), or, for ``kind`` ``person``, also of a role (``role_noun``)."""
    folded = fold_word(word)
    if not folded.isalpha() or len(folded) > 14:
        return False
    if word_class("category_noun", codes).has(folded):
        return True
    return kind == "person" and word_class("role_noun", codes).has(folded)


__all__ = ["SUBJECT_WORD", "VALUE_TYPES",
           "DefinitionQuestion", "QuestionAnalysis", "QuestionFocus", "analyse_question", "definition_question",
           "is_category", "is_role", "question_focus"]
