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
from artifacts.text.profile import detect_language, question_type
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

_INTERROGATIVES = frozenset("""
ako aky aka ake aku akeho akej akom akym akych akymi akou co coho comu com cim kto koho komu kom kym kde kam
odkial kadial kedy odkedy dokedy preco naco kolko kolkych kolkym kolkej kolkeho kolkokrat ktory ktora ktore
ktoru ktoreho ktorej ktorom ktorym ktorych ktorymi jak jaky jaka jake jakou jakeho jakem jakym jakych jakymi kdo
cem kdy proc kolik kolika kolikrat odkdy dokdy ktery ktera ktere kterou ktereho kterem kterym kterych kterymi odkud
what which who whom whose when where why how
vypis vypiste uved uvedte napis napiste popis popiste povedz povedzte vymenuj vymenujte zhrn zhrnte ukaz
ukazte zisti najdi rekni reknete vyjmenuj vyjmenujte shrn list name give tell describe show summarize
summarise explain please prosim chcem chci vediet vedet potrebujem potrebuji informacie informace
body bod bodov bodu points items polozky polozek student studenta studentky studentke studentku studentovi
studentka osoba osoby osobe osobu person
""".split())
"""Folded words that frame a question and are never its topic: interrogatives, request verbs
("vypíš", "list", "povedz"), the list words of "the points of" and the role nouns of "of the student
X" (sk, cs, en)."""

_TIME_CUES = ("kedy", "kdy", "when", "odkedy", "dokedy", "odkdy", "dokdy", "since when",
               "datum", "date", "dna", "dni", "den", "kolkej", "kolik hodin")
_GRADE_WORDS = ("znamk", "hodnoten", "klasifikac", "grade", "graded", "grading")
_TIME_NOUNS = frozenset({"time", "cas", "hodin", "hodine", "hodinu", "rok", "roku", "roce", "year", "datum",
                         "date", "day", "den", "dna", "dni"})
"""Nouns that only say *which kind* of value a question wants (``what time``, ``v ktorom roku``)."""




_DETERMINERS = frozenset("aky aka ake aku akeho akej akom akym akych akymi jaky jaka jake jakou jakeho jakem "
                         "jakym jakych ktory ktora ktore ktoru ktoreho ktorej ktorom ktorym ktery ktera ktere "
                         "kterou ktereho kterem kterym kolko kolkych kolkym kolik kolika what which many".split())
_PRONOUNS = frozenset("kto kdo who co what".split())
_COPULAS = frozenset("je su bol bola bolo boli bude budu jsou byl byla bylo byli is are was were".split())
ARTICLES = frozenset("the a an".split())
"""English articles between a determiner and the thing asked for ("what is the capital of X")."""


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


@lru_cache(maxsize=1)
def _count_cues() -> tuple[str, ...]:
    """Folded words and phrases that make a question ask for a count or an amount (``count.cues`` and
    ``count.amount_cues`` of ``query/asked.yaml``: "kolik", "kolika", "how many", "wie viel")."""
    from query.answer.asked import phrases

    return phrases("count", "cues") + phrases("count", "amount_cues")


def question_focus(question: str) -> QuestionFocus:
    """Return the :class:`QuestionFocus` of ``question`` (sk, cs, en; cue words matched folded)."""
    tokens = analyze(question)
    flat = " " + " ".join(tokens) + " "
    kind: str | None = None
    if any(f" {g}" in flat for g in _GRADE_WORDS):
        kind = "grade"
    elif any(f" {c} " in flat for c in _count_cues()):
        kind = "count"
    elif question_type(list(tokens), detect_language(question))[0] == "time":
        kind = "time"
    words = [w for w in content_words(question) if w not in _INTERROGATIVES]
    if kind == "time":
        words = [w for w in words if w not in _TIME_NOUNS and w not in _TIME_CUES]
    if kind == "count":
        words = [w for w in words if w not in ("pocet", "poctu", "number")]
    head = thing = None
    for i, token in enumerate(tokens):
        if token in _DETERMINERS:  # "aké je heslo", "koľko grafických kariet", "which dataset"
            rest = [t for t in tokens[i + 1:] if t not in _COPULAS and t not in ARTICLES]
            head = rest[0] if rest and rest[0] in words else None
            thing = head if kind is None else None
            break
        if token in _PRONOUNS and i + 2 < len(tokens) and tokens[i + 1] in _COPULAS:  # "kto bol oponentom"
            head = tokens[i + 2] if tokens[i + 2] in words else None
            break
    return QuestionFocus(kind, tuple(words), head, thing)


# --------------------------------------------------------------------------- definition questions

_DEFINITION_FRAMES: dict[str, tuple[tuple[str, str], ...]] = {
    # language -> (frame, kind); ``(?P<x>...)`` is the subject.  Matched on the question in NFC, lower-cased
    # for the frame words only, without a final ``?``/``!``/``.``.
    "cs": ((r"(?:a\s+)?co\s+(?:to\s+)?(?:je|jsou|byl[aoiy]?)\s+(?:to\s+)?(?:za\s+)?(?P<x>.+)", "thing"),
           (r"co\s+znamená\s+(?:zkratka\s+|slovo\s+|pojem\s+)?(?P<x>.+)", "thing"),
           (r"(?:a\s+)?kdo\s+(?:to\s+)?(?:je|jsou|byl[aoiy]?)\s+(?:to\s+)?(?P<x>.+)", "person")),
    "sk": ((r"(?:a\s+)?čo\s+(?:to\s+)?(?:je|sú|bol[aoi]?)\s+(?:to\s+)?(?:za\s+)?(?P<x>.+)", "thing"),
           (r"čo\s+znamená\s+(?:skratka\s+|slovo\s+|pojem\s+)?(?P<x>.+)", "thing"),
           (r"(?:a\s+)?kto\s+(?:to\s+)?(?:je|sú|bol[aoi]?)\s+(?:to\s+)?(?P<x>.+)", "person")),
    "en": ((r"what(?:'s|’s|\s+is|\s+are|\s+was|\s+were)\s+(?P<x>.+)", "thing"),
           (r"what\s+does\s+(?P<x>.+?)\s+(?:mean|stand\s+for)", "thing"),
           (r"who(?:'s|’s|\s+is|\s+are|\s+was|\s+were)\s+(?P<x>.+)", "person")),
    "de": ((r"was\s+(?:ist|sind|war|waren|bedeutet)\s+(?P<x>.+)", "thing"),
           (r"wer\s+(?:ist|sind|war|waren)\s+(?P<x>.+)", "person")),
}
"""Question frames that ask what (``thing``) or who (``person``) something is, per language."""

ARTICLES = frozenset("the a an der die das ein eine einen".split())
CATEGORY_NOUNS = (
    "projekt", "project", "aplikac", "app", "organizac", "organisation", "organization", "organi", "spolek", "spolk",
    "spolok", "verein", "platform", "iniciativ", "initiative", "komunit", "community", "nadac", "foundation",
    "stiftung", "portal", "web", "kurz", "course", "program", "nastroj", "tool", "sluzb", "service", "newsletter",
    "podcast", "akceler", "accelerator", "hackathon", "soutez", "sutaz", "databaz", "database", "system",
    "firm", "company", "spolecnost", "spolocnost", "unie", "union", "hnuti", "hnutie", "sit", "siet", "network",
    "porad", "show", "tema", "topic", "thema",
    "metod", "method", "framework", "knihovn", "kniznic", "library", "format", "standard", "zakon", "law",
)
ROLE_NOUNS = (
    "koordinator", "coordinator", "zakladatel", "founder", "reditel", "director", "clen", "member", "dobrovolni",
    "volunteer", "expert", "manazer", "manager", "vedouc", "veduc", "lead", "designer", "vyvojar", "developer",
    "predsed", "chair", "autor", "author", "ambasador", "ambassador", "mentor", "lektor", "analyti", "analyst",
)
"""Folded prefixes of nouns that name the role of a person ("Koordinátor projektu Vojta Petrus"); before a
thing they govern it ("koordinátorka Safezóny" is no Safezóny) and do not count."""
"""Folded prefixes of nouns that name the kind of a thing ("Aplikace Preventivka byla ...", "vládní iniciativa
Digitální Česko"); a bare one after a preposition is no definition ("na projektu Jehlomat")."""
RELATIVES = (
    "který", "která", "které", "kterou", "jenž", "jež", "ktorý", "ktorá", "ktoré", "ktorú", "which", "who", "that",
    "der", "die", "das", "welche", "welcher", "welches",
)
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
    from query.answer.asked import in_table

    # particles ("Co to vlastně je X?") do not change what is asked
    text = " ".join(w for w in normalize_text(question).split()
                    if not in_table(fold_word(w), "definition", "particles")).rstrip(" ?!.")
    match = None
    kind = ""
    for frames in _DEFINITION_FRAMES.values():
        for frame, frame_kind in frames:
            match = re.fullmatch(frame, text, re.IGNORECASE)
            if match:
                kind = frame_kind
                break
        if match:
            break
    if match is None:
        return None
    subject, qualifier = _qualified(match.group("x").strip(" \"'„“”‚‘’«»*"))
    raw = SUBJECT_WORD.findall(subject)
    while raw and raw[0].lower() in ARTICLES:
        raw = raw[1:]
    if not 1 <= len(raw) <= 5 or re.search(r"['’]s\b", subject):
        return None
    if kind == "person" and len(raw) >= 2 and raw[0].islower() and fold_word(raw[0]).startswith(ROLE_NOUNS):
        return None  # "Kdo je zakladatelem Česko.Digital?" asks who holds a role, not who someone is
    stops = stop_words()
    words = tuple(fold_word(w) for w in raw)
    named = [i for i, w in enumerate(raw) if not w.islower() or any(c.isdigit() or c == "." for c in w)]
    inside = range(named[0] + 1, named[-1]) if named else range(0)
    lead_kind = len(raw) >= 2 and raw[0].islower() and is_category(raw[0]) and bool(named)  # "téma X"
    if any(fold_word(w) in stops for i, w in enumerate(raw)
           if w.islower() and i not in inside and not (i == 0 and lead_kind)):
        return None  # "Co je v zadání", "Co je nového": no subject (a capitalised "Nový" is a name word)
    if any(i in inside for i, w in enumerate(raw) if w.islower()):
        names = tuple(words[named[0]:named[-1] + 1])  # "Code for Romania": one name with a word inside
    elif len(raw) >= 2 and raw[0].islower() and is_category(raw[0]) and named:
        names = words[1:]  # "projekt Dáme roušky": what follows the noun of its kind is the name
    else:
        names = tuple(words[i] for i in named)
    return DefinitionQuestion(kind, " ".join(raw), words, names or words, qualifier)


def _qualified(subject: str) -> tuple[str, tuple[str, ...]]:
    """Split a definition question's subject from what qualifies it: "projekt X od Česko.Digital" ->
    ``("projekt X", ("cesko.digital",))``, "Mastermind, který pořádá Česko.Digital" -> ``("Mastermind",
    ("cesko.digital",))`` (a qualifying preposition of ``definition.qualifiers`` in ``query/asked.yaml``
    after the first word, or a relative clause after a comma).  The qualifier is its capitalised words
    (names), else its words that are no stop words; ``()`` when nothing qualifies the subject."""
    from query.answer.asked import in_table

    head, rest, located = subject, "", False
    comma = re.match(r"([^,]+),\s*(?:" + "|".join(RELATIVES) + r")\s+(.+)", subject, re.IGNORECASE)
    if comma:
        head, rest = comma.group(1), comma.group(2)
    else:
        words = subject.split()
        for i, word in enumerate(words[1:], 1):
            # where X is ("na wiki", "at Česko.Digital") qualifies only a subject that names something:
            # "Co je nového v Česko.Digital?" has no subject
            where = in_table(fold_word(word), "definition", "locations")
            if where and not any(not w.islower() for w in words[:i]):
                continue
            if (word.islower() and i + 1 < len(words)
                    and (where or in_table(fold_word(word), "definition", "qualifiers"))):
                head, rest, located = " ".join(words[:i]), " ".join(words[i + 1:]), where
                break
    if not rest:
        return subject, ()
    raw = SUBJECT_WORD.findall(rest)
    names = tuple(fold_word(w) for w in raw if not w.islower())
    if located and not names:
        return head.strip(), ()  # "Co je Jehlomat v praxi?": where X is, named by nothing the quote must repeat
    return head.strip(), names or tuple(fold_word(w) for w in raw if fold_word(w) not in stop_words())


def is_role(word: str) -> bool:
    """Whether ``word`` is a noun for a person's role ("koordinátorka", "Product Owner"'s "owner" is not)."""
    folded = fold_word(word)
    return folded.isalpha() and folded.startswith(ROLE_NOUNS) and len(folded) <= 14


def is_category(word: str, kind: str = "thing") -> bool:
    """Whether ``word`` is a noun of the kind of a thing (or, for ``kind`` ``person``, of a role)."""
    folded = fold_word(word)
    nouns = ROLE_NOUNS + CATEGORY_NOUNS if kind == "person" else CATEGORY_NOUNS
    return folded.isalpha() and folded.startswith(nouns) and len(folded) <= 14


__all__ = ["ARTICLES", "CATEGORY_NOUNS", "RELATIVES", "ROLE_NOUNS", "SUBJECT_WORD", "VALUE_TYPES",
           "DefinitionQuestion", "QuestionAnalysis", "QuestionFocus", "analyse_question", "definition_question",
           "is_category", "is_role", "question_focus"]
