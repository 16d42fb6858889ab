"""What a count question or a "who did X" question asks of a quote (cs, sk, en, de).

A **count question** ("Kolik lidí z komunity pomohlo …?", "How many volunteers …?", "Wie viele …?")
is answered only by a number that counts the thing asked for (:func:`count_focus`,
:func:`states_count`):

- a *count* is a number written in digits (``130``, ``2,5``, ``80+``) or as a word (``patnáct``,
  ``pätnásť``, ``twelve``, ``zwölf``: every cardinal num2words spells as one word for 1..100, the
  hundreds and thousands, in cs/sk/en/de); no count are a year (``2019``), a date or clock time
  (``28. 11.``, ``9.00``), an ordinal (``2. ročník``), a share or an amount of money (``40 %``,
  ``200 Kč``), a number after "rok/year/strana/page/version" and a number glued to a word
  (``3leté`` counts years, ``5členný`` members: what the glued word names);
- a number right after "pro / for / für" counts for whom something was done, which answers only a
  question asking for whom ("Pro kolik lidí …?");
- it counts the asked noun when that noun (any inflected form, :func:`artifacts.text.words.words_match`)
  follows it within three words ("130 aktivních dobrovolníků", "600 tisíc lidí") or precedes it within
  four in the same sentence with no comma between ("se nás sešlo přes 40"), or is named right after
  "počet / number of / Anzahl" before it ("Počet dobrovolníků Česko.Digital: 130"; "Počet míst, kde lidé
  šili roušky: 1700" counts places); a
  noun for people ("lidí", "people", "Leute") is counted by any word for people ("dobrovolníků", "IT
  profesionálů", "členů", "nás"; the table ``count.people`` of ``asked.yaml``);
- a qualifier attached to the counted noun by a preposition ("lidí *z komunity*", "people *from the
  community*") must be named by the quote or the headings of its section (checked by the claim
  checker, :func:`query.answer.checker.claim_relevance`): "ochranné pomůcky pro 600 tisíc lidí" counts people
  helped, not people of the community who helped.

A **who question about an action** ("Kdo založil X?", "Kto založil X?", "Who founded X?", "Wer hat X
gegründet?", also "leads" and "created") is answered only by a quote with a word of the same action
family (any inflection or derivation: "založili", "zakladatel", "co-founded", "Gründer"; the table
``actions`` of ``asked.yaml``), naming a person ("Jan Novák"; "od svého založení" says who did nothing), that
is no contact line (an e-mail address or a phone number: "Radka
Horáková, Co-founder & CMO, <radka@…>, 734 420 216" lists a person, it says nothing about founding).

Number words come from num2words (well kept, cs/sk/en/de) rather than a hand list; the word tables of
what a number may count are data (``query/asked.yaml``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from artifacts.text.words import analyze, fold_word, stop_words, verb_words, words_match

_NUMBER_LANGS = ("cs", "sk", "en", "de")
_ADJECTIVE_PLURAL = ("ych", "ich")
"""Folded endings of Czech/Slovak adjectives after a count word ("kolik aktivních dobrovolníků")."""
_OPENERS = frozenset("a and und".split())
_TOKEN = re.compile(r"\d+(?:[.,:/]\d+)+\+?|\w+(?:[-–'’.]\w+)*\+?|[.,!?;:%€$£–—]")
_SENTENCE_STOP = frozenset(".!?;–—")
_DATE_TIME = re.compile(r"(?<!\d)\d{1,2}\.\s?\d{1,2}\.(?:\s?\d{4})?|(?<![\d.,])\d{1,2}:\d{2}(?![\d.,])"
                        r"|(?<![\d.,])\d{1,2}\.\d{2}(?=\s*(?:h\b|hod|am\b|pm\b|–|-|do\b|to\b|bis\b))")
_ORDINAL_AFTER = re.compile(r"\.\s+[a-záäčďéěíĺľňóôŕřšťúůýž]")
_YEAR = re.compile(r"(?:1[89]|20)\d\d")
_GLUED = re.compile(r"(\d+)[-–]?([^\W\d_].*)")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"(?<![\w])\+?\d{3}[ \u00a0]?\d{3}[ \u00a0]?\d{3}(?![\w])")
_PHONE_CUE = re.compile(r"\b(?:tel|telefon|phone|mobil|mob|kontakt|contact|volejte|call)", re.IGNORECASE)
_AFTER_WINDOW = 3
_BEFORE_WINDOW = 4


@lru_cache(maxsize=1)
def _tables() -> dict[str, Any]:
    import yaml

    text = resources.files("query.answer").joinpath("asked.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Words:
    """A word table: exact folded words and folded prefixes (entries ending in ``*``)."""

    exact: frozenset[str]
    prefixes: tuple[str, ...]

    @classmethod
    def of(cls, entries: list[str]) -> _Words:
        return cls(frozenset(e for e in entries if not e.endswith("*")),
                   tuple(e[:-1] for e in entries if e.endswith("*")))

    def has(self, folded: str) -> bool:
        return folded in self.exact or (folded.isalpha() and folded.startswith(self.prefixes))


@cache
def _table(*path: str) -> _Words:
    return _Words.of(list(phrases(*path)))


@cache
def phrases(*path: str) -> tuple[str, ...]:
    """The entries of the word table at ``path`` of ``asked.yaml`` as written (folded words or phrases):
    ``phrases("count", "cues")`` -> ``("kolko", "kolik", …, "how many", …)``.  Raises ``KeyError`` for
    a table that does not exist."""
    node: Any = _tables()
    for key in path:
        node = node[key]
    return tuple(str(e) for e in node)


def in_table(folded: str, *path: str) -> bool:
    """Whether the folded word ``folded`` is in the word table at ``path`` of ``asked.yaml`` (an entry
    ending in ``*`` matches every word it begins)."""
    return _table(*path).has(folded)


@lru_cache(maxsize=1)
def number_words() -> dict[str, int]:
    """Folded one-word cardinals of cs, sk, en and de -> their value: 1..100, the hundreds, thousand,
    million (num2words; ``patnáct`` -> 15, ``pätnásť`` -> 15, ``twelve`` -> 12, ``zwölf`` -> 12)."""
    from num2words import num2words

    values = [*range(1, 101), *range(200, 1000, 100), 1000, 1_000_000]
    out: dict[str, int] = {}
    for lang in _NUMBER_LANGS:
        for value in values:
            words = analyze(num2words(value, lang=lang))
            if len(words) == 1 and words[0].isalpha():
                out.setdefault(words[0], value)
    return out


# --------------------------------------------------------------------------- counts

@dataclass(frozen=True)
class CountFocus:
    """What a count question counts.

    ``nouns``: folded, the content word after "kolik / how many / počet", or a Czech/Slovak adjective and
    its noun (``("lidi",)``, ``("grafickych", "kariet")``); ``qualifiers``: folded words a preposition
    attaches to them (``("komunity",)`` of "lidí z komunity"); ``beneficiary``: the question asks for
    whom ("Pro kolik lidí …?", "For how many people …?")."""

    nouns: tuple[str, ...]
    qualifiers: tuple[str, ...] = ()
    beneficiary: bool = False


def count_focus(question: str) -> CountFocus | None:
    """Return what the count question ``question`` counts, or ``None`` when it names no counted noun
    (no count cue, or a verb right after it: "Kolik stojí vstupenka?" asks a price, not a count)."""
    tokens = analyze(question)
    stops = stop_words()
    verbs = verb_words(question)
    cues = _table("count", "cue_words")
    for i, token in enumerate(tokens):
        if not cues.has(token):
            continue
        rest = tokens[i + 1:]
        while rest and rest[0] in stops and not cues.has(rest[0]):
            rest = rest[1:]
        nouns: list[str] = []
        # one word, or an adjective and its noun ("grafických kariet"); "volunteers built" is no phrase
        while rest and rest[0] not in stops and rest[0] not in verbs and rest[0].isalpha() and (
                not nouns or (len(nouns) == 1 and nouns[0].endswith(_ADJECTIVE_PLURAL))):
            nouns.append(rest[0])
            rest = rest[1:]
        if not nouns:
            return None
        qualifiers: tuple[str, ...] = ()
        if rest and _table("count", "qualifier_prepositions").has(rest[0]):
            after = [t for t in rest[1:3] if t not in stops]  # "from the community", "aus der Stadt"
            if after and after[0].isalpha():
                qualifiers = (after[0],)
        beneficiary = any(_table("count", "beneficiary").has(t) for t in tokens[:i])
        return CountFocus(tuple(nouns), qualifiers, beneficiary)
    return None


@dataclass(frozen=True)
class _Token:
    text: str
    folded: str
    start: int
    end: int


def _tokens(text: str) -> list[_Token]:
    return [_Token(m.group(0), fold_word(m.group(0).rstrip("+")), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _is_people(folded: str) -> bool:
    return _table("count", "people").has(folded)


def _counts_noun(word: str, nouns: tuple[str, ...]) -> bool:
    return any(words_match(word, noun) or (_is_people(noun) and _is_people(word)) for noun in nouns)


@lru_cache(maxsize=8192)
def states_count(text: str, nouns: tuple[str, ...] = (), *, beneficiary: bool = False) -> bool:
    """True when ``text`` (one quote, Markdown shown as read) states a number, and, with ``nouns``
    (folded, :attr:`CountFocus.nouns`), a count of them (see the module docstring).

    Without ``nouns`` any number in digits or words counts (an amount or a price answers "Kolik
    stojí …?") except a year, a date or clock time, an ordinal and a number glued to a word.
    ``beneficiary``: the question counts for whom ("Pro kolik lidí …?"), so "pro 600 tisíc lidí" counts
    them; otherwise a number after "pro / for / für" is not a count of the asked noun."""
    from query.search.snippets import display_text

    flat = " ".join(display_text(text).split())
    masked = {i for m in _DATE_TIME.finditer(flat) for i in range(m.start(), m.end())}
    amount = any(_table("count", "not_counts").has(n) for n in nouns)  # the question asks a share or a sum
    tokens = _tokens(flat)
    numbers = number_words()
    not_counts, not_after, multipliers = (_table("count", "not_counts"), _table("count", "not_after"),
                                          _table("count", "multipliers"))
    for i, token in enumerate(tokens):
        glued = _GLUED.fullmatch(token.folded) if token.folded[:1].isdigit() else None
        if glued and not glued.group(2).replace(".", "").isdigit():
            # "3leté", "5členný": the glued word is what the number counts
            if nouns and _counts_noun(glued.group(2), nouns):
                return True
            continue
        digits = token.text.rstrip("+")
        if digits[:1].isdigit():
            if token.start in masked or _ORDINAL_AFTER.match(flat, token.end):
                continue
            if _YEAR.fullmatch(digits) and not (nouns and i + 1 < len(tokens)
                                                and _counts_noun(tokens[i + 1].folded, nouns)):
                continue  # a year, unless the counted noun follows it ("2000 dobrovolníků")
        elif token.folded not in numbers or (i and (tokens[i - 1].text[:1].isdigit()
                                                    or tokens[i - 1].folded in numbers)):
            continue  # no number word, or one that multiplies the number before it ("600 tisíc")
        if not nouns:
            return True  # "Kolik stojí …?": any amount, a price too
        following = tokens[i + 1].folded if i + 1 < len(tokens) else ""
        if following == "%":
            following = "procent"
        previous = tokens[i - 1] if i else None
        if amount and _counts_noun(following, nouns):
            return True  # "Kolik procent …?" answered by "40 %", "Kolik korun …?" by "200 Kč"
        if not_counts.has(following) or (previous is not None and (
                previous.text in ("$", "€", "£") or not_after.has(previous.folded)
                or (not beneficiary and _table("count", "beneficiary").has(previous.folded)))):
            continue
        between = 0
        for nxt in tokens[i + 1:]:
            if nxt.text in _SENTENCE_STOP or nxt.text in ",:" or between > _AFTER_WINDOW:
                break
            if _counts_noun(nxt.folded, nouns):
                return True
            if not multipliers.has(nxt.folded):
                between += 1
        if _counted_before(tokens[:i], nouns):
            return True
    return False


def _counted_before(before: list[_Token], nouns: tuple[str, ...]) -> bool:
    """Whether the words before a number (in its sentence) name what it counts: "Počet dobrovolníků
    Česko.Digital: 130" (the words right after "počet / number of"), "se nás sešlo přes 40" (a noun at most
    :data:`_BEFORE_WINDOW` words back, no comma between: "Počet míst, kde lidé šili: 1700" counts places)."""
    sentence: list[_Token] = []
    for prev in reversed(before):
        if prev.text in _SENTENCE_STOP:
            break
        sentence.insert(0, prev)
    count_nouns = _table("count", "count_nouns")
    for at, token in enumerate(sentence):
        if count_nouns.has(token.folded):
            named: list[_Token] = []
            for t in sentence[at + 1:]:
                if not t.folded[:1].isalnum() or len(named) == 3:
                    break
                if t.folded not in stop_words():
                    named.append(t)
            return any(_counts_noun(t.folded, nouns) for t in named)
    for between, prev in enumerate(reversed(sentence)):
        if prev.text == "," or between > _BEFORE_WINDOW:
            return False
        if _counts_noun(prev.folded, nouns):
            return True
    return False


# --------------------------------------------------------------------------- who did it

def action_family(question: str) -> str | None:
    """Return the action family ("found", "lead", "create" of ``asked.yaml``) a who question asks about
    ("Kdo založil X?", "Who founded X?", "Wer hat X gegründet?"), or ``None`` (no who question, or its
    verb is in no family)."""
    tokens = analyze(question)
    while tokens and tokens[0] in _OPENERS:
        tokens = tokens[1:]
    if not tokens or not _table("person", "who").has(tokens[0]):
        return None
    for family in _tables()["actions"]:
        if any(_table("actions", family).has(t) for t in tokens[1:]):
            return str(family)
    return None


def asks_person(question: str) -> bool:
    """True when ``question`` asks for a person: it opens with "kdo / kto / who / wer" (after "a / and"), or
    with "který / ktorý / which / welcher" and a word for people ("Which member of the board …?",
    "Který člen …?"; ``count.people`` of ``asked.yaml``).  A quote answering it must name someone."""
    tokens = analyze(question)
    while tokens and tokens[0] in _OPENERS:
        tokens = tokens[1:]
    if not tokens:
        return False
    if _table("person", "who").has(tokens[0]):
        return True
    return len(tokens) >= 2 and _table("person", "which").has(tokens[0]) and _is_people(tokens[1])


def asks_people(question: str) -> bool:
    """True when ``question`` asks for a list of people: a who question (:func:`asks_person`) with "všechno /
    všichni / all / alle" (``person.all`` of ``asked.yaml``): "Kdo všechno patří k zakládajícímu triu?"
    is not answered by a sentence naming one of them."""
    return asks_person(question) and any(_table("person", "all").has(t) for t in analyze(question))


def contact_line(text: str) -> bool:
    """True when ``text`` holds an e-mail address or a phone number (a contact line, no statement).

    Nine digits in groups of three are a phone number only with a cue: a leading ``+``, or a word
    such as "tel", "phone", "mobil", "kontakt" in the text ("250 000 000 Kč" is an amount)."""
    if _EMAIL.search(text):
        return True
    return any(m.group(0).startswith("+") or _PHONE_CUE.search(text) for m in _PHONE.finditer(text))


def action_words(family: str, words: tuple[str, ...]) -> tuple[str, ...]:
    """Those of the folded ``words`` that belong to the action ``family`` ("founded", "zalozil")."""
    table = _table("actions", family)
    return tuple(w for w in words if table.has(w) or any(table.has(p) for p in re.split(r"[-'’]", w)))


@lru_cache(maxsize=8192)
def states_action(family: str, text: str) -> bool:
    """True when ``text`` says who did the action of ``family``: it has a word of the family (any
    inflection or derivation), names a person (two to four capitalised words of letters, none glued
    to the one before: "Jan Novák", not "Česko.Digital") and is no :func:`contact_line`."""
    from query.graph.names import capital_runs, looks_like_person_name, tokenize

    if contact_line(text) or not action_words(family, tuple(analyze(text))):
        return False
    return any(looks_like_person_name(run, lexicon=False) for run in capital_runs(tokenize(text), set()))


__all__ = ["CountFocus", "action_family", "action_words", "asks_people", "asks_person", "contact_line", "count_focus",
           "in_table", "number_words", "phrases", "states_action", "states_count"]
