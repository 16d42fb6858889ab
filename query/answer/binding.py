"""A claim's text bound to its own quote, and evidence text that addresses the reader (issue 24).

The checker (:mod:`query.answer.checker`) proves that a claim's ``quote`` stands verbatim in the cited
evidence; this module proves that the claim's *text* says no more than that quote.  Everything is
deterministic and every natural-language word comes from the language profiles
(:mod:`artifacts.text.profile`): ``negation``, ``number_words``, ``not_numbers``, ``reporting``,
``instruction_verbs``, ``instruction_lead``, ``addressee``, ``answer_noun``, ``months``, ``copula`` and the
conjunctions.

**The frame of a quote** in an evidence item: the quote itself and, for a list item, the sentence that
introduces its list (*own* words); the headings above the quote, the item's heading path and title
(*context*); a ``graph`` item is one fact: its whole text and structured facts are the frame.  Other
sentences of the cited chunk are not part of it: a "2" of "GPT-2" three lines below does not support "F1 2".

**Binding** (:func:`bind_claim`), for a claim whose quote already passed the verbatim check:

* ``unbound_detail``: every number of the claim text (digits, or number words of the language
  profile: "štyri", "four"), every date and year, and every name or title word (capitalised or mixed
  tokens, :func:`query.answer.checker._detail_tokens`, in any Slovak case form) must occur in the frame.  A
  number glued to letters (``GPT-2``, ``3leté``) is part of a name, not a number.  With a ``/graph``
  body, a claim citing a graph item may also state the graph's counts (checked by ``graph_mismatch``).
* ``unbound_detail`` also when a number stands in another place than in the frame (:func:`_misplaced_number`):
  the nearest word on each side of a claim's number ("presnosť 25 %", "300 viet"), where the frame has that
  word by a number (within two words, no other number or clause stop between), must be by the same number
  there, so numbers swapped inside one quote fail; a day, month name and year are one number ("14. júna 2020").
* ``unbound_detail`` when the quote's own words name a person (a run of two or more capitalised words) and
  the claim text names persons, none of them the quote's: a name from the title or a heading may stand
  beside the quote's person ("Vedúcim práce Jána Holpa je Daniel Hládek"), never instead of it.
* ``polarity``: the claim text and the quote's own words must agree in polarity: each side counts its
  negations (profile ``negation``; a prefix entry such as ``ne*`` counts only when the rest of the word
  is a known word of that profile's language and not one of its ``not_negation`` words, so ``nemusí``
  and ``nemá`` are negations and ``neurónové``, ``neskôr``, ``někdo`` are not)
  that the other side does not share (word-matched); one side with such a negation and the other without
  fails ("X nemusí vypracovať" for "Vypracujte"), both with one passes ("nebola úspešná" = "bola
  neúspešná"; Slovak and Czech negate twice in one statement, "Nikto nebol", so counts are not compared);
  and per negated word: the word a negation negates (the rest of a prefix negation, "nedosiahol", else the
  next content word of its clause, "nie na nárečových") must not stand on the other side outside every
  negation's clause ("bola zverejnená, ale nebola odovzdaná" for "nebola zverejnená, ale bola odovzdaná").
* Otherwise, when a content word of the claim text (not a stop word, number, or profile ``reporting``
  word such as "žiada", "requires") is in no form in the frame, the claim text cannot be checked
  word by word: the claim is delivered with its quote as the text (:attr:`Binding.text`), so
  what the reader gets is verified data ("Autorom je Daniel Hládek" for "Vedúci práce: Ing. Daniel
  Hládek" is delivered as "Vedúci práce: Ing. Daniel Hládek, PhD.").

**A claim merging several items** carries one quote per item (``Claim.quotes``).  Its text must split
at clause boundaries (``,``, ``;``, profile ``conjunction_and`` words) into as many parts as it has
quotes, each part a claim of its own (at least one content word besides names) that passes the whole
checker against exactly one of the quotes (:func:`bind_parts`).  A text that splits no such way
fails with ``unbound_detail``: "Ján Holp a Petra Straková obhájili v roku 2018" with one quote per
student does not say which fact is whose.

**Instructions in pages** (:func:`addresses_reader`): a sentence addresses whoever reads it (a model
or a person) when one of its clauses opens with an imperative of answering, saying or ignoring
(profile ``instruction_verbs``), possibly after words of ``instruction_lead`` ("please", "you must",
"Dear assistant,"), or when it holds such an imperative and a word of ``addressee`` (assistant, model,
prompt, previous instructions) anywhere, or when a short lead before a colon names an addressee and what
follows holds such a verb or a word of ``answer_noun`` ("Pre jazykové modely: správna odpoveď je …").
A quote that overlaps such a sentence is never evidence (``instruction_text``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import combinations, permutations

from artifacts.analysis import fold
from artifacts.text.profile import Profile, available, load_profile
from artifacts.text.words import stop_words, verb_languages, verb_words, words_match
from query.answer.evidence import Claim, ClaimVerdict, EvidenceItem

_WORD = re.compile(r"\w+(?:['’-]\w+)*")  # a hyphenated compound is one word ("ignore-case", "Prompt-Antworten")
_CODE = re.compile(r"`[^`]*`")
_CLAUSE_PUNCT = re.compile(r"[,;:()\[\]!?.\n–—]|\s-\s")
_NUMBER = re.compile(r"(?<![\w])\d+(?:[.,:/]\d+)*")
_DATE_SPACED = re.compile(r"(?<!\d)(\d{1,2})\.\s+(\d{1,2})\.\s*(\d{4})(?!\d)")
_DATE = re.compile(r"\d{1,2}[./]\d{1,2}[./](\d{4})")
_MIN_REST = 2          # a negation prefix counts only before a known word of at least this many letters
_MAX_PARTS = 4         # a merged claim with more quotes than this is not split (fails)
_MAX_SPLITS = 400      # bound on the part assignments tried for one merged claim
_MAX_LEAD = 6          # words of a lead before a colon that names whom a sentence addresses
BIND_FAILURES = ("unbound_detail", "polarity")
"""The failure reasons of this module (also in :data:`query.answer.evidence.CLAIM_FAILURES`)."""


# --------------------------------------------------------------------------- profile data

@dataclass(frozen=True)
class _Lexicon:
    """The profile word classes binding needs, folded, per language code."""

    negation: dict[str, frozenset[str]]           # exact negation words
    neg_prefixes: dict[str, tuple[str, ...]]      # prefix entries ("ne")
    numbers: dict[str, dict[str, int]]            # number words -> value, without not_numbers
    reporting: dict[str, frozenset[str]]
    reporting_prefixes: dict[str, tuple[str, ...]]
    verbs: dict[str, frozenset[str]]
    saying: dict[str, frozenset[str]]
    complementizer: dict[str, frozenset[str]]
    lead: dict[str, tuple[tuple[str, ...], ...]]  # phrases (token tuples)
    addressee: dict[str, tuple[tuple[str, ...], ...]]
    answer_noun: dict[str, frozenset[str]]
    conjunctions: frozenset[str]                  # single-word conjunction_and / conjunction_or of every profile
    transparent: frozenset[str]                   # stop, function, copula and reporting words of every profile
    verbal: frozenset[str]                        # copula and reporting words of every profile
    other_classes: dict[str, frozenset[str]]      # words of any other class or function word (not negations)
    simplemma: dict[str, str | None]


def _split(entries: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    exact = frozenset(e for e in entries if not e.endswith("*"))
    prefixes = tuple(sorted(e[:-1] for e in entries if e.endswith("*") and " " not in e))
    return exact, prefixes


def _phrases(entries: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    return tuple(sorted({tuple(e.split()) for e in entries}, key=len, reverse=True))


@lru_cache(maxsize=1)
def _lexicon() -> _Lexicon:
    negation, neg_prefixes, numbers, reporting, reporting_prefixes = {}, {}, {}, {}, {}
    verbs, saying, comp, lead, addressee, other, lemmas = {}, {}, {}, {}, {}, {}, {}
    answer: dict[str, frozenset[str]] = {}
    conjunctions: set[str] = set()
    transparent: set[str] = set(stop_words())
    verbal: set[str] = set()
    for code in available():
        prof: Profile = load_profile(code)
        negation[code], neg_prefixes[code] = _split(prof.words("negation"))
        skip = prof.words("not_numbers")
        numbers[code] = {w: v for w, v in prof.number_words.items() if w not in skip and " " not in w}
        reporting[code], reporting_prefixes[code] = _split(prof.words("reporting"))
        verbs[code] = prof.words("instruction_verbs")
        saying[code] = prof.words("saying_verbs")
        comp[code] = prof.words("complementizer")
        lead[code] = _phrases(prof.words("instruction_lead") | prof.words("negation"))
        addressee[code] = _phrases(prof.words("addressee"))
        answer[code] = prof.words("answer_noun")
        conjunctions |= {w for w in prof.words("conjunction_and") | prof.words("conjunction_or") if " " not in w}
        verbal |= prof.words("copula") | {w for w in prof.words("reporting") if not w.endswith("*")}
        transparent |= prof.function_words | verbal
        words = set(prof.function_words)
        for name, cls in prof.classes.items():
            if name not in ("negation", "multiplier"):  # a multiplier ("tisíc") is a number word, no other word
                words |= {w for w in cls if not w.endswith("*")}
        other[code] = frozenset((words - negation[code]) | prof.words("not_negation"))
        lemmas[code] = prof.simplemma
    return _Lexicon(negation, neg_prefixes, numbers, reporting, reporting_prefixes, verbs, saying, comp, lead,
                    addressee, answer, frozenset(conjunctions), frozenset(transparent), frozenset(verbal), other,
                    lemmas)


def _tokens(text: str) -> list[str]:
    """Folded word tokens of ``text`` (apostrophes kept inside a word: ``don't``)."""
    return [fold(m.group(0)).replace("’", "'") for m in _WORD.finditer(unicodedata.normalize("NFC", text))]


@lru_cache(maxsize=16384)
def _known(word: str, lang: str) -> bool:
    from artifacts.lexicon import is_known

    try:
        return is_known(word, lang)
    except (ValueError, KeyError):
        return False


# --------------------------------------------------------------------------- the frame

@dataclass(frozen=True)
class _Frame:
    own: str        # the quote and the introduction of its list
    context: str    # headings above it, heading path, title, graph facts


def _frame(quote: str, item: EvidenceItem) -> _Frame:
    from query.answer.checker import _flatten, _strip_markup, normalize_quote
    from query.answer.sentences import text_units

    if item.kind == "graph":  # one graph fact rendered as one sentence: its values belong together
        facts = "\n".join(_flatten(fact) for fact in item.facts)
        return _Frame(f"{quote}\n{item.text}", "\n".join(c for c in (item.title or "", facts) if c))
    wanted = normalize_quote(_strip_markup(quote))
    units = text_units(item.text)
    own = [quote]
    context = [item.title or "", *item.heading_path]
    for unit in units:
        text = normalize_quote(_strip_markup(unit.text))
        if text and (text in wanted or wanted in text):
            context.extend(unit.headings)
            if unit.list_id is not None:
                own.extend(u.text for u in units if u.leads == unit.list_id)
    return _Frame("\n".join(own), "\n".join(dict.fromkeys(c for c in context if c)))


# --------------------------------------------------------------------------- numbers

def _bare_numbers(text: str) -> list[str]:
    """Numbers of ``text`` that stand alone (not glued to letters: ``GPT-2``, ``3leté``, ``F1`` are names),
    decimal comma = point, spaced dates joined (``22. 10. 2019`` = ``22.10.2019``)."""
    text = _DATE_SPACED.sub(r"\1.\2.\3", unicodedata.normalize("NFC", text))
    out = []
    for match in _NUMBER.finditer(text):
        start, end = match.span()
        glued_before = start >= 2 and text[start - 1] == "-" and text[start - 2].isalpha()
        glued_after = end < len(text) and text[end].isalpha()
        if not (glued_before or glued_after):
            out.append(match.group(0).rstrip(".,:/").replace(",", "."))
    return out


def _word_numbers(text: str) -> list[str]:
    """Values of the number words of ``text`` (any profile); a word that is also a word of another class of
    any profile (``ten``: a Czech demonstrative, ``ein``: a German article) is no number."""
    lex = _lexicon()
    out = []
    for token in _tokens(text):
        for code in available():
            value = lex.numbers[code].get(token)
            if value is not None and not any(token in lex.other_classes[c] for c in available()):
                out.append(str(value))
                break
    return out


def _number_support(text: str) -> set[str]:
    numbers = set(_bare_numbers(text)) | set(_word_numbers(text))
    for token in list(numbers):
        date = _DATE.fullmatch(token)
        if date:
            numbers.add(date.group(1))
    return {_plain(n) for n in numbers}


def _plain(number: str) -> str:
    """``12.0`` -> ``12`` (a whole number written with decimals)."""
    return number.split(".")[0] if re.fullmatch(r"\d+\.0+", number) else number


# --------------------------------------------------------------------------- numbers in their places

_PLACE = re.compile(r"(?P<num>(?<![\w-])\d+(?:[.,:/]\d+)*(?!\w))|(?P<word>\w+(?:['’-]\w+)*)|(?P<unit>[%‰°€$£])"
                    r"|(?P<stop>[,;:()\[\]!?.\n–—])")
_NEAR_CLAIM = 1   # a claim's number is placed by the nearest word on each side
_NEAR_FRAME = 2   # ... and that word stands by a number of the frame within this many words


def _places(text: str) -> list[tuple[str, str]]:
    """``text`` as ``(kind, value)`` tokens for number placement: ``num`` (its plain value: digits, or a number
    word of a profile), ``word`` (folded; a unit sign is a word), ``skip`` (stop, function, copula, reporting
    and negation words: they place nothing) and ``stop`` (clause punctuation, single-word conjunctions, copulas,
    reporting words and verb forms: a number's words do not cross them, so the subject of "Dátová množina
    obsahuje 4500 viet" places no number; the dot of an ordinal date "1. februára" is none)."""
    lex = _lexicon()
    text = _DATE_SPACED.sub(r"\1.\2.\3", unicodedata.normalize("NFC", text))
    numbers = {t: v for c in available() for t, v in lex.numbers[c].items()}
    others = frozenset().union(*lex.other_classes.values())
    verbs = verb_words(text)
    out: list[tuple[str, str]] = []
    for match in _PLACE.finditer(text):
        kind, raw = match.lastgroup or "stop", match.group(0)
        if kind == "num":
            out.append(("num", _plain(raw.rstrip(".,:/").replace(",", "."))))
        elif kind == "unit":
            out.append(("word", raw))
        elif kind == "stop":
            ordinal = raw == "." and out and out[-1][0] == "num" and not text[match.end():].lstrip()[:1].isupper()
            if not ordinal:
                out.append(("stop", raw))
        else:
            token = fold(raw).replace("’", "'")
            if token in numbers and token not in others:
                out.append(("num", str(numbers[token])))
            elif _is_month(token):
                out.append(("month", token[:3]))
            elif token in lex.conjunctions or token in lex.verbal or token in verbs:
                out.append(("stop", token))  # a verb stands between a subject and its quantity
            elif token in lex.transparent or _negation(token, raw.lower()) is not None:
                out.append(("skip", token))
            else:
                out.append(("word", token))
    return _dates(out)


def _is_month(token: str) -> bool:
    return any(token.startswith(m[:-1]) if m.endswith("*") else token == m
               for c in available() for m in load_profile(c).months)


def _dates(tokens: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A day, its month name and a year ("14. júna 2020") as one ``num`` token (``14|jun|2020``); a month name
    elsewhere is a word."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        kind, value = tokens[i]
        if kind == "num" and i + 1 < len(tokens) and tokens[i + 1][0] == "month":
            parts = [value, tokens[i + 1][1]]
            i += 2
            if i < len(tokens) and tokens[i][0] == "num":
                parts.append(tokens[i][1])
                i += 1
            out.append(("num", "|".join(parts)))
            continue
        out.append(("word", value) if kind == "month" else (kind, value))
        i += 1
    return out


def _same_number(a: str, b: str) -> bool:
    """Two placed numbers are the same: equal, or a plain number that is a part of a date ("2020" of
    ``14|jun|2020``); two different dates are not."""
    if a == b:
        return True
    if "|" in a and "|" in b:
        return False
    return a in b.split("|") or b in a.split("|")


def _same_date(a: str, b: str) -> bool:
    """Dates ``day|month[|year]`` agree: the same day and month, and the same year where both have one."""
    x, y = a.split("|"), b.split("|")
    return x[:2] == y[:2] and (len(x) < 3 or len(y) < 3 or x[2] == y[2])


def _near(tokens: list[tuple[str, str]], i: int, step: int, limit: int) -> list[str]:
    """The first ``limit`` words from number ``tokens[i]`` in direction ``step`` (+1, -1), up to another number
    or a clause stop."""
    out: list[str] = []
    j = i + step
    while 0 <= j < len(tokens) and len(out) < limit:
        kind, value = tokens[j]
        if kind in ("num", "stop"):
            break
        if kind == "word":
            out.append(value)
        j += step
    return out


def _misplaced_number(text: str, frame_lines: Iterable[str]) -> bool:
    """True when a number of ``text`` stands by a word that, in the frame, stands by other numbers only.

    For each number of the claim text, the nearest word on each side ("presnosť 25 %", "300 viet") must,
    where the frame has that word next to a number (within two words, no other number or clause stop
    between), be next to this same number there: "presnosť 25 % pri rýchlosti 81 otázok" for "presnosť 81 %
    pri rýchlosti 25 otázok" fails on "presnosť".  A word the frame does not place by any number (a
    paraphrase's own word) binds nothing.  A date with a month name must be a date of the frame.
    """
    placed: list[tuple[str, str]] = []   # (word, number) pairs of the frame
    dates: set[str] = set()              # the frame's dates with a month name
    for line in frame_lines:
        tokens = _places(line)
        for i, (kind, value) in enumerate(tokens):
            if kind == "num":
                placed += [(w, value) for step in (-1, 1) for w in _near(tokens, i, step, _NEAR_FRAME)]
                dates |= {value} if "|" in value else set()
    tokens = _places(text)
    for i, (kind, value) in enumerate(tokens):
        if kind != "num":
            continue
        if "|" in value and dates and not any(_same_date(value, d) for d in dates):
            return True  # day and month of the frame, not together ("30. februára" of "1. februára … 30. apríla")
        for step in (-1, 1):
            for word in _near(tokens, i, step, _NEAR_CLAIM):
                by = {n for w, n in placed if words_match(word, w)}
                if by and not any(_same_number(value, n) for n in by):
                    return True
    return False


# --------------------------------------------------------------------------- polarity

def _negation(token: str, lower: str) -> str | None:
    """``None`` when the folded ``token`` (``lower``: as written, lower case) is no negation; else the word it
    negates inside itself (the folded rest of a prefix negation: ``nebola`` -> ``bola``), or ``""`` for a
    negation word of its own ("nie", "not")."""
    lex = _lexicon()
    for code in available():
        if token in lex.negation[code] or (token.endswith("n't") and "n't" in lex.negation[code]):
            return ""
        if token in lex.other_classes[code]:
            continue
        # the prefix compared as written ("ne" is not the "ně" of "někdo"), the rest looked up with its diacritics
        prefix = next((p for p in lex.neg_prefixes[code] if lower.startswith(p)), None)
        if prefix is not None:
            rest = lower[len(prefix):]  # simplemma knows words with their diacritics
            lang = lex.simplemma[code]
            if len(rest) >= _MIN_REST and lang and _known(rest, lang):
                return fold(rest)
    return None


def _negations(text: str) -> list[str]:
    """The negation tokens of ``text`` (profile ``negation`` of any profile; a prefix entry only before a
    known word of that profile's language)."""
    lowered = [m.group(0).lower() for m in _WORD.finditer(unicodedata.normalize("NFC", text))]
    return [t for t, lower in zip(_tokens(text), lowered, strict=True) if _negation(t, lower) is not None]


@dataclass(frozen=True)
class _Scope:
    """One negation of a text: its ``head`` (the word it negates: the rest of a prefix negation when that is a
    content word, "nedosiahol", else the next content word of its clause, "nie na nárečových") and ``words``
    (the content words from the negation to the end of its clause, the head among them)."""

    head: str | None
    words: frozenset[str]


@dataclass(frozen=True)
class _Polarity:
    """The negations of a text (``scopes``), the content words inside them (``negated``) and the others
    (``positive``)."""

    scopes: tuple[_Scope, ...]
    negated: frozenset[str]
    positive: frozenset[str]


def _polarity(text: str) -> _Polarity:
    transparent = _lexicon().transparent
    scopes: list[_Scope] = []
    positive: set[str] = set()
    for part in _CLAUSE_PUNCT.split(unicodedata.normalize("NFC", text)):
        head: str | None = None
        words: set[str] | None = None  # the words of the open negation of this clause
        for match in _WORD.finditer(part):
            token, lower = fold(match.group(0)).replace("’", "'"), match.group(0).lower()
            rest = _negation(token, lower)
            if rest is not None:
                if words is not None:
                    scopes.append(_Scope(head, frozenset(words)))
                head, words = (rest, {rest}) if rest and rest not in transparent else (None, set())
                continue
            if token in transparent or token.isdigit():
                continue
            if words is None:
                positive.add(token)
                continue
            words.add(token)
            head = head or token
        if words is not None:
            scopes.append(_Scope(head, frozenset(words)))
    negated = frozenset(w for scope in scopes for w in scope.words)
    return _Polarity(tuple(scopes), negated, frozenset(positive))


def _moved_negation(a: _Polarity, b: _Polarity) -> bool:
    """True when a word inside a negation of ``a`` stands in ``b`` only outside every negation ("nebola
    zverejnená, ale bola odovzdaná" against "bola zverejnená, ale nebola odovzdaná").  The negated verb
    itself may lose its negation when another word of its clause keeps one ("nebol trénovaný na spisovnej
    slovenčine" = "bol trénovaný iba na nárečových nahrávkach, nie na spisovnej slovenčine")."""
    def has(words: frozenset[str], word: str) -> bool:
        return any(words_match(word, w) for w in words)

    for scope in a.scopes:
        for word in scope.words:
            if has(b.positive, word) and not has(b.negated, word):
                kept = any(has(b.negated, other) for other in scope.words if other != word)
                if not (word == scope.head and kept):
                    return True
    return False


def _unshared(negations: list[str], other_text: str) -> int:
    from artifacts.text.words import word_set

    others = word_set(other_text)
    return sum(1 for token in negations if not others.has(token))


# --------------------------------------------------------------------------- content words

@lru_cache(maxsize=16384)
def _lemmas(word: str) -> frozenset[str]:
    from artifacts.lexicon import lemmatize

    out = {word}
    for code in available():
        lang = _lexicon().simplemma[code]
        if code in verb_languages():  # the dictionaries artifacts.text.words.verb_words already loads
            out.add(fold(lemmatize(word, lang)))
    return frozenset(out)


def _same_word(word: str, frame_words: Iterable[str]) -> bool:
    lemmas = _lemmas(word)
    for other in frame_words:
        if lemmas & _lemmas(other):
            return True
        shared = len(_common_prefix(word, other))
        if shared >= 5 and shared >= 0.6 * min(len(word), len(other)):
            return True
    return False


def _common_prefix(a: str, b: str) -> str:
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[:i]


def _reporting(word: str) -> bool:
    lex = _lexicon()
    return any(word in lex.reporting[c] or any(word.startswith(p) for p in lex.reporting_prefixes[c])
               for c in available())


def _unbound_words(text: str, frame_text: str, extra: frozenset[str]) -> list[str]:
    from artifacts.text.words import content_words, word_set
    from query.answer.checker import _name_support

    frame = word_set(frame_text)
    names = _name_support(frame_text)  # a name in another case form ("Petra Malého" of "Peter Malý")
    extra = extra | {fold(m.group(0)) for m in _WORD.finditer(text)
                     if m.group(0)[:1].isupper() and names.has(m.group(0))}
    numbers = {t for c in available() for t in _lexicon().numbers[c]}
    out = []
    for word in content_words(text):
        if any(ch.isdigit() for ch in word) or word in numbers or word in extra or _reporting(word):
            continue
        if frame.has(word) or _same_word(word, frame.words):
            continue
        out.append(word)
    return out


# --------------------------------------------------------------------------- persons

def _name_runs(text: str) -> list[tuple[str, ...]]:
    """Runs of two or more capitalised words separated by spaces only ("Peter Hudák" of "Mgr. Peter Hudák zo
    Skalice"): the full names of ``text``."""
    text = unicodedata.normalize("NFC", text)
    runs: list[tuple[str, ...]] = []
    current: list[str] = []
    end = -1
    for match in _WORD.finditer(text):
        word = match.group(0)
        capital = word[:1].isupper() and not any(ch.isdigit() for ch in word)
        joined = current and not text[end:match.start()].strip(" \t")
        if capital and (joined or not current):
            current.append(word)
        else:
            if len(current) >= 2:
                runs.append(tuple(current))
            current = [word] if capital else []
        end = match.end()
    if len(current) >= 2:
        runs.append(tuple(current))
    return runs


def _person_replaced(text: str, own: str) -> bool:
    """True when the quote's own words name someone and the claim text names only others (a name the title or
    a heading supplies, "Nahrávky pomáhal zbierať Tomáš Lukáč" for "… zbierať Mgr. Peter Hudák"): the title
    may add its person beside the quote's ("Vedúcim práce Jána Holpa je Daniel Hládek"), never instead of it."""
    from query.answer.checker import _name_support

    quoted, claimed = _name_runs(own), _name_runs(text)
    if not quoted or not claimed:
        return False
    names = _name_support(own)
    return not any(all(names.has(w) for w in run) for run in claimed)


# --------------------------------------------------------------------------- binding

@dataclass(frozen=True)
class Binding:
    """The binding verdict of one claim: ``failures`` (``(reason, detail)``, reasons from
    :data:`BIND_FAILURES`) and ``claim``: the claim to deliver (its own text, or with the quote as text
    when its text cannot be checked word by word; ``unchecked`` says which)."""

    failures: tuple[tuple[str, str], ...]
    claim: Claim
    unchecked: bool = False


def shown_quote(quote: str) -> str:
    """The quote as a reader sees it (:func:`query.search.snippets.display_text`, whitespace collapsed)."""
    from query.search.snippets import display_text

    return " ".join(display_text(quote).split())


@lru_cache(maxsize=1)
def _graph_phrase_words() -> frozenset[str]:
    """Words of the graph answers' count phrases (artifacts/graphwords.yaml): "Počet", "Count"."""
    from query.graph.words import phrasings

    return frozenset(t for p in phrasings() for t in _tokens(p.count.replace("{count}", "")))


def bind_claim(claim: Claim, items: Sequence[EvidenceItem], counts: Iterable[int] = ()) -> Binding:
    """Bind ``claim.text`` to ``claim.quote`` as it stands in ``items`` (the cited items that hold the
    quote verbatim; none: nothing to bind against, the claim is returned as is).

    ``counts``: the counts of the ``/graph`` answer when the claim cites a graph item (numbers it may state).
    Returns a :class:`Binding`; never raises on bad claims.
    """
    if not items:
        return Binding((), claim)
    from query.answer.checker import _detail_tokens, _name_support

    frames = [_frame(claim.quote, item) for item in items]
    own = "\n".join(f.own for f in frames)
    whole = "\n".join(f"{f.own}\n{f.context}" for f in frames)
    failures: list[tuple[str, str]] = []

    support = _number_support(whole) | {str(c) for c in counts}
    claimed = _bare_numbers(claim.text) + _word_numbers(claim.text)
    for number in claimed:
        if _plain(number) not in support:
            kind = "year" if re.fullmatch(r"(?:1[5-9]|20)\d{2}", number) else "date" if _DATE.fullmatch(number) \
                else "number"
            failures.append(("unbound_detail", f"a {kind} of the claim text is not in its own quote "
                                               "(its sentence, list introduction or headings)"))
            break
    if not failures and any(item.kind != "graph" for item in items) and _misplaced_number(
            claim.text, whole.split("\n")):
        failures.append(("unbound_detail", "a number of the claim text stands by a word that its quote places by "
                                           "another number"))
    names = _name_support(whole)
    if any(not names.has(word) for word in _detail_tokens(claim.text)):
        failures.append(("unbound_detail", "a name or title of the claim text is not in its own quote "
                                           "(its sentence, list introduction, headings or title)"))
    elif any(item.kind != "graph" for item in items) and _person_replaced(claim.text, own):
        failures.append(("unbound_detail", "the quote names a person and the claim text names another one instead"))
    mine, theirs = _negations(claim.text), _negations(own)
    # polarity compares a claim with the text it restates; a graph fact line is rendered by the application
    # from the graph (its counts are checked against the aggregation), so a claim citing only graph items
    # ("Počet: 1." over "X: dr, 2018, názov neuvedený.") restates no sentence
    restates = any(item.kind != "graph" for item in items)
    if restates and (_unshared(mine, own) > 0) != (_unshared(theirs, claim.text) > 0):
        failures.append(("polarity", "the claim text negates what its quote states, or states what it negates"))
    elif restates and (mine or theirs):
        said, quoted = _polarity(claim.text), _polarity(own)
        if _moved_negation(said, quoted) or _moved_negation(quoted, said):
            failures.append(("polarity", "the claim text negates another word than its quote does"))
    if failures:
        return Binding(tuple(failures), claim)
    extra = _graph_phrase_words() if counts else frozenset()
    if _unbound_words(claim.text, whole, extra):
        return Binding((), replace(claim, text=shown_quote(claim.quote)), unchecked=True)
    return Binding((), claim)


# --------------------------------------------------------------------------- merged claims

def quotes_of(claim: Claim) -> tuple[str, ...]:
    """All quotes of ``claim``: ``claim.quotes`` when it has several, else ``(claim.quote,)``."""
    return claim.quotes if len(claim.quotes) > 1 else (claim.quote,)


def _boundaries(text: str) -> list[tuple[int, int]]:
    """``(end of the part before, start of the part after)`` of each clause boundary of ``text``."""
    out = []
    conj = {w for c in available() for w in load_profile(c).words("conjunction_and") if " " not in w}
    for match in _CLAUSE_PUNCT.finditer(text):
        out.append((match.start(), match.end()))
    for match in _WORD.finditer(text):
        if fold(match.group(0)) in conj:
            out.append((match.start(), match.end()))
    spans = sorted(set(out))
    return [(a, b) for a, b in spans if text[:a].strip() and text[b:].strip()]


def _has_own_content(text: str) -> bool:
    from artifacts.text.words import content_words
    from query.answer.checker import _detail_tokens

    names = {fold(w) for w in _detail_tokens(text)}
    return any(w not in names and not w.isdigit() for w in content_words(text))


def bind_parts(claim: Claim, check: Callable[[Claim], ClaimVerdict]) -> ClaimVerdict:
    """Check a claim that carries several quotes (one per merged item): its text must split at clause
    boundaries into one part per quote, each part with content words of its own besides names, such that
    every part passes ``check`` (the whole single-quote checker) with its own quote.

    Returns the verdict of the first split that passes (the delivered claim keeps its text, or, when a
    part could only be delivered as its quote, the quotes as text), else a failing verdict
    (``unbound_detail``) carrying the reasons of the best split tried.
    """
    quotes = quotes_of(claim)
    text = claim.text
    if len(quotes) > _MAX_PARTS:
        return ClaimVerdict(claim, False, ("unbound_detail",),
                            (f"a claim may merge at most {_MAX_PARTS} items, one quote each",))
    tried = 0
    best: list[ClaimVerdict] = []
    for cut in combinations(_boundaries(text), len(quotes) - 1):
        if any(b[0] < a[1] for a, b in zip(cut, cut[1:], strict=False)):
            continue
        edges = [0, *[x for a, b in cut for x in (a, b)], len(text)]
        parts = [text[edges[i]:edges[i + 1]].strip(" ,;:") for i in range(0, len(edges), 2)]
        if not all(_has_own_content(p) for p in parts):
            continue
        for order in permutations(quotes):
            tried += 1
            if tried > _MAX_SPLITS:
                break
            verdicts = [check(Claim(part, claim.evidence, quote)) for part, quote in zip(parts, order, strict=True)]
            if all(v.ok for v in verdicts):
                unchecked = any(v.claim.text != part for v, part in zip(verdicts, parts, strict=True))
                shown = " ".join(shown_quote(q) for q in quotes) if unchecked else text
                return ClaimVerdict(replace(claim, text=shown), True)
            if not best or sum(v.ok for v in verdicts) > sum(v.ok for v in best):
                best = verdicts
    reasons = tuple(dict.fromkeys(("unbound_detail", *(r for v in best for r in v.reasons))))
    details = ("the claim merges several items, but its text does not split into parts each bound to its "
               "own quote", *dict.fromkeys(d for v in best for d in v.details))
    return ClaimVerdict(claim, False, reasons, details)


# --------------------------------------------------------------------------- instructions

def _addressed(tokens: list[str], phrases: tuple[tuple[str, ...], ...]) -> bool:
    """True when ``tokens`` hold one of ``phrases``; in a phrase that ends in ``*`` every word is a prefix
    (``asistent*``: "asistenta", "asistentovi"; ``jazykov* model*``: "jazykové modely", "jazykovým modelom")."""
    for phrase in phrases:
        loose = phrase[-1].endswith("*")
        words = tuple(w.rstrip("*") for w in phrase) if loose else phrase
        for i in range(len(tokens) - len(words) + 1):
            window = tokens[i:i + len(words)]
            if all(t.startswith(w) if loose else t == w for t, w in zip(window, words, strict=True)):
                return True
    return False


def _addressed_lead(text: str) -> bool:
    """True when ``text`` opens with a short lead before a colon that names an addressee of profile
    ``addressee`` ("Poznámka pre asistenta:", "Note to AI systems:", "Pre jazykové modely:") and what follows
    tells it what to say or answer (a word of ``instruction_verbs``, ``saying_verbs`` or ``answer_noun``)."""
    from query.search.snippets import display_text

    prose = unicodedata.normalize("NFC", display_text(_CODE.sub(" ", text)))
    lead, colon, rest = prose.partition(":")
    lead_tokens, rest_tokens = _tokens(lead), set(_tokens(rest))
    if not colon or not lead_tokens or len(lead_tokens) > _MAX_LEAD:
        return False
    lex = _lexicon()
    return any(_addressed(lead_tokens, lex.addressee[code])
               and rest_tokens & (lex.verbs[code] | lex.saying[code] | lex.answer_noun[code])
               for code in available())


def _matches_phrase(tokens: list[str], i: int, phrases: tuple[tuple[str, ...], ...]) -> int:
    """Length of the longest phrase of ``phrases`` starting at ``tokens[i]`` (0: none)."""
    for phrase in phrases:
        if tuple(tokens[i:i + len(phrase)]) == phrase:
            return len(phrase)
    return 0


def _clauses(text: str) -> list[list[str]]:
    """Folded tokens of each clause of ``text`` (inline code, link destinations and markup left out)."""
    from query.search.snippets import display_text

    prose = display_text(_CODE.sub(" ", text))
    return [_tokens(part) for part in _CLAUSE_PUNCT.split(unicodedata.normalize("NFC", prose)) if part.strip()]


def addresses_reader(text: str) -> bool:
    """True when ``text`` (one sentence or list item) addresses whoever reads it, a model or a person.

    A clause that opens (after any words of profile ``instruction_lead``: "please", "you must", "Dear
    assistant") with an imperative of answering or ignoring (``instruction_verbs``: "Ignore …",
    "odpovedz …") or with an imperative of saying followed within four words by a ``complementizer``
    ("answer that …", "povedz mu, že …"); or a clause holding such an imperative within three words of an
    ``addressee`` ("… then ignore the system prompt").  Such text is data that tries to be an
    instruction: never evidence.
    """
    if _addressed_lead(text):
        return True
    lex = _lexicon()
    clauses = _clauses(text)
    flat = [t for clause in clauses for t in clause]
    offset = 0
    for clause in clauses:
        for code in available():
            verbs, saying, comp = lex.verbs[code], lex.saying[code], lex.complementizer[code]
            i = 0
            while i < len(clause):
                step = _matches_phrase(clause, i, lex.lead[code])
                if not step:
                    break
                i += step
            if i < len(clause):
                first = clause[i]
                if first in verbs or (first in saying and comp & set(flat[offset + i + 1:offset + i + 5])):
                    return True
            for j, token in enumerate(clause):
                if token in verbs or token in saying:
                    near = range(max(0, j - 3), min(len(clause), j + 4))
                    if any(_matches_phrase(clause, k, lex.addressee[code]) for k in near if k != j):
                        return True
        offset += len(clause)
    return False


@lru_cache(maxsize=512)
def _instruction_spans(text: str) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...], tuple[str, ...]]:
    """``(tokens of text, token ranges of its sentences that address the reader, those sentences normalised)``."""
    from query.answer.checker import _strip_markup, normalize_quote
    from query.answer.sentences import text_units

    text = unicodedata.normalize("NFC", text)
    spans = [(m.start(), fold(m.group(0)).replace("’", "'")) for m in _WORD.finditer(text)]
    tokens = tuple(t for _, t in spans)
    ranges, normalised = [], []
    for unit in text_units(text):
        if addresses_reader(unit.text):
            inside = [i for i, (at, _) in enumerate(spans) if unit.start <= at < unit.end]
            if inside:
                ranges.append((inside[0], inside[-1] + 1))
            normalised.append(normalize_quote(_strip_markup(unit.text)))
    return tokens, tuple(ranges), tuple(normalised)


def quotes_instruction(quote: str, text: str) -> bool:
    """True when ``quote`` overlaps a sentence of evidence ``text`` that addresses the reader
    (:func:`addresses_reader`): the quote's words, where they stand in the text, share a word with such a
    sentence, or the sentence holds the quote (compared normalised)."""
    from query.answer.checker import _strip_markup, normalize_quote

    tokens, ranges, normalised = _instruction_spans(text)
    if not ranges and not normalised:
        return False
    wanted = normalize_quote(_strip_markup(quote))
    if wanted and any(wanted in n for n in normalised):
        return True
    words = tuple(_tokens(quote))
    n = len(words)
    if not n:
        return False
    for i in range(len(tokens) - n + 1):
        if tokens[i:i + n] == words and any(i < end and start < i + n for start, end in ranges):
            return True
    return False
