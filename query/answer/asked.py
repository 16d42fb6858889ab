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
  profesionálů", "členů", "nás"; the class ``people`` of the language profiles);
- a qualifier attached to the counted noun by a preposition ("lidí *z komunity*", "people *from the
  community*") must be named by the quote or the headings of its section (checked by the claim
  checker, :func:`query.answer.relevance.claim_relevance`): "ochranné pomůcky pro 600 tisíc lidí" counts people
  helped, not people of the community who helped.

A **who question about an action** ("Kdo založil X?", "Kto založil X?", "Who founded X?", "Wer hat X
gegründet?", also "leads" and "created") is answered only by a quote with a word of the same action
family (any inflection or derivation: "založili", "zakladatel", "co-founded", "Gründer"; the classes
``action_<family>`` of the language profiles), naming a person ("Jan Novák"; "od svého založení" says who
did nothing), that is no contact line (an e-mail address or a phone number: "Radka Horáková, Co-founder &
CMO, <radka@…>, 734 420 216" lists a person, it says nothing about founding).

Number words come from num2words (well kept; the ``num2words`` code of each language profile) rather than
a hand list; the words of what a number may count are data: word classes of the language profiles
(``artifacts/text/profiles/<code>.yaml``: ``count_cue_word``, ``people``, ``multiplier``, ``not_count``,
``not_count_after``, ``percent``, ``beneficiary``, ``count_noun``, ``count_qualifier``, ``adjective_ending``, ``who``,
``which_person``, ``all_people``, ``action_*``, ``phone_cue``, ``clock_unit``, ``range_to``), read for the
question's languages on the question and for the text's languages on a quote
(:func:`artifacts.text.profile.text_languages`).  A counted noun is a question word whose language this
module is not told, so whether it names people is read in every profile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from artifacts.text.profile import (
    available,
    class_names,
    load_profile,
    question_languages,
    text_languages,
    union,
    word_class,
)
from artifacts.text.words import analyze, fold_word, stop_words, verb_words, words_match

_TOKEN = re.compile(r"\d+(?:[.,:/]\d+)+\+?|\w+(?:[-–'’.]\w+)*\+?|[.,!?;:%€$£–—]")
_SENTENCE_STOP = frozenset(".!?;–—")
_DATE = re.compile(r"(?<!\d)\d{1,2}\.\s?\d{1,2}\.(?:\s?\d{4})?|(?<![\d.,])\d{1,2}:\d{2}(?![\d.,])")
_DOT_TIME = re.compile(r"(?<![\d.,])\d{1,2}\.\d{2}(?=\s*(?:([–-])|([^\W\d_]+)))")
"""``9.00`` is a clock time when a dash or a ``clock_unit`` / ``range_to`` word follows ("9.00 h", "9.00 do 17.00")."""
_ORDINAL_AFTER = re.compile(r"\.\s+([^\W\d_])")
_YEAR = re.compile(r"(?:1[89]|20)\d\d")
_GLUED = re.compile(r"(\d+)[-–]?([^\W\d_].*)")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"(?<![\w])\+?\d{3}[ \u00a0]?\d{3}[ \u00a0]?\d{3}(?![\w])")
_AFTER_WINDOW = 3
_BEFORE_WINDOW = 4


@lru_cache(maxsize=16)
def number_words(codes: tuple[str, ...] | None = None) -> dict[str, int]:
    """Folded one-word cardinals of the profiles ``codes`` (every profile when None) -> their value: 1..100,
    the hundreds, thousand, million (num2words in each profile's ``num2words`` language; ``patnáct`` -> 15,
    ``pätnásť`` -> 15, ``twelve`` -> 12, ``zwölf`` -> 12)."""
    from num2words import num2words

    values = [*range(1, 101), *range(200, 1000, 100), 1000, 1_000_000]
    out: dict[str, int] = {}
    for code in codes if codes is not None else available():
        lang = load_profile(code).num2words
        if lang is None:
            continue
        for value in values:
            words = analyze(num2words(value, lang=lang))
            if len(words) == 1 and words[0].isalpha():
                out.setdefault(words[0], value)
    return out


def _masked(flat: str) -> set[int]:
    """Character offsets of ``flat`` inside a date or a clock time (no count)."""
    spans = [m.span() for m in _DATE.finditer(flat)]
    codes = text_languages(flat)
    units, ranges = word_class("clock_unit", codes), word_class("range_to", codes)
    for m in _DOT_TIME.finditer(flat):
        word = fold_word(m.group(2)) if m.group(2) else ""
        if m.group(1) or units.has(word) or ranges.has(word):
            spans.append((m.start(), m.start() + len(m.group(0))))
    return {i for start, end in spans for i in range(start, end)}


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
    codes = question_languages(question)
    cues = word_class("count_cue_word", codes)
    endings = tuple(union("adjective_ending", codes))
    for i, token in enumerate(tokens):
        if not cues.has(token):
            continue
        rest = tokens[i + 1:]
        while rest and rest[0] in stops and not cues.has(rest[0]):
            rest = rest[1:]
        nouns: list[str] = []
        # one word, or an adjective and its noun ("grafických kariet"); "volunteers built" is no phrase
        while rest and rest[0] not in stops and rest[0] not in verbs and rest[0].isalpha() and (
                not nouns or (len(nouns) == 1 and bool(endings) and nouns[0].endswith(endings))):
            nouns.append(rest[0])
            rest = rest[1:]
        if not nouns:
            return None
        qualifiers: tuple[str, ...] = ()
        if rest and word_class("count_qualifier", codes).has(rest[0]):
            after = [t for t in rest[1:3] if t not in stops]  # "from the community", "aus der Stadt"
            if after and after[0].isalpha():
                qualifiers = (after[0],)
        beneficiary = any(word_class("beneficiary", codes).has(t) for t in tokens[:i])
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


def _is_people(folded: str, codes: tuple[str, ...] | None = None) -> bool:
    return word_class("people", codes).has(folded)


def _counts_noun(word: str, nouns: tuple[str, ...], codes: tuple[str, ...]) -> bool:
    """Whether the text's word ``word`` (of the languages ``codes``) counts one of the question's ``nouns``."""
    return any(words_match(word, noun) or (_is_people(noun) and _is_people(word, codes)) for noun in nouns)


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
    masked = _masked(flat)
    codes = text_languages(flat)
    amount = any(word_class("not_count").has(n) for n in nouns)  # the question asks a share or a sum
    tokens = _tokens(flat)
    numbers = number_words(codes)
    not_counts, not_after, multipliers = (word_class("not_count", codes), word_class("not_count_after", codes),
                                          word_class("multiplier", codes))
    beneficiaries = word_class("beneficiary", codes)
    for i, token in enumerate(tokens):
        glued = _GLUED.fullmatch(token.folded) if token.folded[:1].isdigit() else None
        if glued and not glued.group(2).replace(".", "").isdigit():
            # "3leté", "5členný": the glued word is what the number counts
            if nouns and _counts_noun(glued.group(2), nouns, codes):
                return True
            continue
        digits = token.text.rstrip("+")
        if digits[:1].isdigit():
            ordinal = _ORDINAL_AFTER.match(flat, token.end)
            if token.start in masked or (ordinal and ordinal.group(1).islower()):
                continue
            if _YEAR.fullmatch(digits) and not (nouns and i + 1 < len(tokens)
                                                and _counts_noun(tokens[i + 1].folded, nouns, codes)):
                continue  # a year, unless the counted noun follows it ("2000 dobrovolníků")
        elif token.folded not in numbers or (i and (tokens[i - 1].text[:1].isdigit()
                                                    or tokens[i - 1].folded in numbers)):
            continue  # no number word, or one that multiplies the number before it ("600 tisíc")
        if not nouns:
            return True  # "Kolik stojí …?": any amount, a price too
        following = tokens[i + 1].folded if i + 1 < len(tokens) else ""
        percent = following == "%"  # "40 %" reads as "40 percent" (a ``percent`` word)
        previous = tokens[i - 1] if i else None
        if amount and (any(word_class("percent").has(n) for n in nouns) if percent
                       else _counts_noun(following, nouns, codes)):
            return True  # "Kolik procent …?" answered by "40 %", "Kolik korun …?" by "200 Kč"
        if percent or not_counts.has(following) or (previous is not None and (
                previous.text in ("$", "€", "£") or not_after.has(previous.folded)
                or (not beneficiary and beneficiaries.has(previous.folded)))):
            continue
        between = 0
        for nxt in tokens[i + 1:]:
            if nxt.text in _SENTENCE_STOP or nxt.text in ",:" or between > _AFTER_WINDOW:
                break
            if _counts_noun(nxt.folded, nouns, codes):
                return True
            if not multipliers.has(nxt.folded):
                between += 1
        if _counted_before(tokens[:i], nouns, codes):
            return True
    return False


def _counted_before(before: list[_Token], nouns: tuple[str, ...], codes: tuple[str, ...]) -> bool:
    """Whether the words before a number (in its sentence) name what it counts: "Počet dobrovolníků
    Česko.Digital: 130" (the words right after "počet / number of"), "se nás sešlo přes 40" (a noun at most
    :data:`_BEFORE_WINDOW` words back, no comma between: "Počet míst, kde lidé šili: 1700" counts places)."""
    sentence: list[_Token] = []
    for prev in reversed(before):
        if prev.text in _SENTENCE_STOP:
            break
        sentence.insert(0, prev)
    count_nouns = word_class("count_noun", codes)
    for at, token in enumerate(sentence):
        if count_nouns.has(token.folded):
            named: list[_Token] = []
            for t in sentence[at + 1:]:
                if not t.folded[:1].isalnum() or len(named) == 3:
                    break
                if t.folded not in stop_words():
                    named.append(t)
            return any(_counts_noun(t.folded, nouns, codes) for t in named)
    for between, prev in enumerate(reversed(sentence)):
        if prev.text == "," or between > _BEFORE_WINDOW:
            return False
        if _counts_noun(prev.folded, nouns, codes):
            return True
    return False


# --------------------------------------------------------------------------- who did it

def _opened(question: str) -> tuple[list[str], tuple[str, ...]]:
    """The folded tokens of ``question`` without the ``conjunction_and`` words that open it ("A kdo …?",
    "And who …?"), and the question's profile codes."""
    codes = question_languages(question)
    tokens = analyze(question)
    openers = word_class("conjunction_and", codes)
    while tokens and openers.has(tokens[0]):
        tokens = tokens[1:]
    return tokens, codes


def action_family(question: str) -> str | None:
    """Return the action family (``found``, ``lead``, ``create``: the profiles' classes ``action_<family>``) a
    who question asks about ("Kdo založil X?", "Who founded X?", "Wer hat X gegründet?"), or ``None`` (no who
    question, or its verb is in no family)."""
    tokens, codes = _opened(question)
    if not tokens or not word_class("who", codes).has(tokens[0]):
        return None
    for name in class_names("action_", codes):
        if any(word_class(name, codes).has(t) for t in tokens[1:]):
            return name[len("action_"):]
    return None


def asks_person(question: str) -> bool:
    """True when ``question`` asks for a person: it opens with a ``who`` word ("kdo / kto / who / wer", after "a /
    and"), or with a ``which_person`` word and a word for people ("Which member of the board …?", "Který člen
    …?"; ``people``).  A quote answering it must name someone."""
    tokens, codes = _opened(question)
    if not tokens:
        return False
    if word_class("who", codes).has(tokens[0]):
        return True
    return len(tokens) >= 2 and word_class("which_person", codes).has(tokens[0]) and _is_people(tokens[1], codes)


def asks_people(question: str) -> bool:
    """True when ``question`` asks for a list of people: a who question (:func:`asks_person`) with an
    ``all_people`` word ("všechno / všichni / all / alle"): "Kdo všechno patří k zakládajícímu triu?" is not
    answered by a sentence naming one of them."""
    codes = question_languages(question)
    return asks_person(question) and any(word_class("all_people", codes).has(t) for t in analyze(question))


def contact_line(text: str) -> bool:
    """True when ``text`` holds an e-mail address or a phone number (a contact line, no statement).

    Nine digits in groups of three are a phone number only with a cue: a leading ``+``, or a ``phone_cue``
    word of the text's profiles such as "tel", "phone", "mobil", "kontakt" ("250 000 000 Kč" is an amount)."""
    if _EMAIL.search(text):
        return True
    phones = [m.group(0) for m in _PHONE.finditer(text)]
    if any(p.startswith("+") for p in phones):
        return True
    cues = word_class("phone_cue", text_languages(text))
    return bool(phones) and any(cues.has(t) for t in analyze(text))


def action_words(family: str, words: tuple[str, ...], codes: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Those of the folded ``words`` that belong to the action ``family`` ("founded", "zalozil") in the profiles
    ``codes`` (every profile when None)."""
    table = word_class(f"action_{family}", codes)
    return tuple(w for w in words if table.has(w) or any(table.has(p) for p in re.split(r"[-'’]", w)))


@lru_cache(maxsize=8192)
def states_action(family: str, text: str) -> bool:
    """True when ``text`` says who did the action of ``family``: it has a word of the family (any
    inflection or derivation, in the text's profiles), names a person (two to four capitalised words of
    letters, none glued to the one before: "Jan Novák", not "Česko.Digital") and is no :func:`contact_line`."""
    from query.graph.names import capital_runs, looks_like_person_name, tokenize

    if contact_line(text) or not action_words(family, tuple(analyze(text)), text_languages(text)):
        return False
    return any(looks_like_person_name(run, lexicon=False) for run in capital_runs(tokenize(text), set()))


__all__ = ["CountFocus", "action_family", "action_words", "asks_people", "asks_person", "contact_line", "count_focus",
           "number_words", "states_action", "states_count"]
