"""The numbers of a claim text and the places they stand in, for :func:`query.answer.binding.bind_claim`.

:func:`_bare_numbers` (numbers not glued to letters: ``GPT-2`` is a name) and :func:`_word_numbers` (number words
of the profiles) of a text, :func:`_number_support` (the numbers a frame supports), and
:func:`_misplaced_number`: a number of the claim text must stand by the same words as in its quote ("presnosť
25 %" for "presnosť 81 %" fails); a day, month name and year are one number.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from artifacts.analysis import fold
from artifacts.text.profile import available, load_profile
from artifacts.text.words import verb_words, words_match
from query.answer.polarity import _negation
from query.answer.wordclasses import _lexicon, _tokens

_NUMBER = re.compile(r"(?<![\w])\d+(?:[.,:/]\d+)*")
_DATE_SPACED = re.compile(r"(?<!\d)(\d{1,2})\.\s+(\d{1,2})\.\s*(\d{4})(?!\d)")
_DATE = re.compile(r"\d{1,2}[./]\d{1,2}[./](\d{4})")


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
