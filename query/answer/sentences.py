"""Text units of evidence (sentences, list items, table rows) and the content words of a question.

Used by :mod:`query.answer.generators` (the extractive generator picks units) and :mod:`query.answer.relevance`
(coverage).  Every unit is a *verbatim span* of the evidence text: ``text[start:end]``, so a claim
built from it passes the checker's quote test by construction.

Block structure comes from markdown-it-py (the parser the indexer uses), so code fences, tables,
lists and headings are recognised the same way; sentences inside paragraphs and list items come
from pysbd.  Splitter choice (measured on 17 hand-segmented real paragraphs from ms-docs-sk,
thesis-wiki, cesko-digital-blog and obsidian-help sk/cs/en): pysbd with its Slovak rules split
15/17 exactly with 0 false boundaries (2 missed: ``PhD.`` and ``atd.`` before a capital);
one-letter abbreviations it splits (``Unie porodních asistentek, z. s. (UNIPA), nezisková ...``) are
joined again when the next piece cannot open a sentence (lower case, a bracket, another ``s.``);
simplemma 2.0's ``split_sentences`` split 13/17 with 3 false boundaries (after ``Ing.``,
``napr.`` and ``např.``), which would cut a verbatim claim in half.  pysbd has no Czech rules; its
Slovak ones serve Czech as well (same abbreviations), and English text (no Slovak/Czech letters)
gets its English rules.  pysbd costs ~7 ms per 450-token chunk, so paragraphs without an inner
sentence end skip it and results are cached per text.

Content words: the BM25 folding analyzer's tokens (:func:`artifacts.analysis.folding_analyzer`)
minus stop words (the stopwords-iso list of every language profile, folded; numbers are never stop
words).  Inflected forms match by :func:`words_match` (a shared prefix).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from artifacts.text.profile import (
    alphabet_language,
    date_words,
    detect_language,
    load_profile,
    text_languages,
    union,
    word_class,
)
from artifacts.text.words import analyze, fold_word, stop_words, words_match
from query.answer.asked import states_count
from query.answer.instructions import addresses_reader
from query.question import SUBJECT_WORD, DefinitionQuestion, is_category, is_role

_INNER_END = re.compile(r"[.!?…][\"'”’»)\]]*\s+\S")
_LIST_MARKER = re.compile(r"[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?")
_HEADING_MARKER = re.compile(r"[ \t]*#{1,6}[ \t]+")
_HARD_BREAK_LEAD = re.compile(r"(?:\\\s+)*")
_MARKUP_LINE = re.compile(
    r"^[ \t]{0,3}(?::{3,}[^\n]*"                # a container fence (VitePress, Docusaurus): ":::warning", ":::"
    r"|\{\{[<%][^\n]*?[%>]\}\}[ \t]*)$"       # a whole-line Hugo shortcode: {{< figure src="..." >}}
    r"|^([ \t]{0,3}>[ \t]?)\[![A-Za-z]+\][ \t]*$",  # a GitHub alert's marker line: > [!TIP]
    re.MULTILINE)
"""Doc-site markup lines a reader never sees as text; :func:`text_units` reads them as blank lines."""
_HEADING_ATTRS = re.compile(r"[ \t]*\{[#.][^{}\n]*\}[ \t]*$")
"""A heading's attribute block (Hugo, MkDocs, Pandoc: ``## Move {#move}``), not part of its text."""


def _blank_markup(text: str) -> str:
    """``text`` with :data:`_MARKUP_LINE` lines as spaces (a quote keeps its ``>``): the same length, so
    every offset into it is one into ``text``."""
    if ":::" not in text and "{{" not in text and "[!" not in text:
        return text
    return _MARKUP_LINE.sub(lambda m: (m.group(1) or "") + " " * (len(m.group(0)) - len(m.group(1) or "")), text)


@dataclass(frozen=True)
class Unit:
    """One verbatim span of an evidence text that can become a claim.

    ``kind``: ``sentence`` (of a paragraph), ``item`` (a list item's text without its marker),
    ``row`` (a table row's cells, without the outer pipes), ``code`` (a code block's lines without
    its fence, when a paragraph introduces it; ``list_id`` is then the block's own id);
    ``start``/``end``: character offsets in the evidence text (``text[start:end]`` is the unit,
    verbatim); ``headings``: the Markdown headings above the unit inside this text; ``list_id``: the
    list an ``item`` belongs to;
    ``leads``: the list this unit introduces (the last sentence of a paragraph directly followed
    by a list, e.g. ``Zadanie:``), else None; ``order``: position in the text.
    """

    kind: str
    start: int
    end: int
    text: str
    headings: tuple[str, ...] = ()
    list_id: int | None = None
    leads: int | None = None
    order: int = 0
    header: str = ""
    """For a ``row``: the header row of its table (cells as written, without the outer pipes), which names
    what each cell is ("Variable | Default | Description"); a row is read with it, never delivered with it."""


def _language(text: str) -> str:
    """The pysbd rules for ``text``: those of its detected profile (:func:`artifacts.text.profile.detect_language`),
    else those of the profile whose ``alphabet`` holds most of its letters
    (:func:`artifacts.text.profile.alphabet_language`: Slovak rules for a short text with Czech letters)."""
    code = detect_language(text)
    rules = load_profile(code).pysbd if code is not None else None
    return rules or load_profile(alphabet_language(text)).pysbd or "en"


@lru_cache(maxsize=8)
def _segmenter(language: str):  # type: ignore[no-untyped-def]
    import pysbd

    return pysbd.Segmenter(language=language, clean=False)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Return ``(start, end)`` character offsets of the sentences of one paragraph, stripped.

    Slovak rules for text with Slovak/Czech letters, English rules otherwise.
    """
    return list(_sentence_spans(text))


@lru_cache(maxsize=4096)
def _sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    stripped = text.strip()
    if not stripped:
        return ()
    lead = len(text) - len(text.lstrip())
    if not _INNER_END.search(re.sub(r"\\(?=\n)", " ", stripped).replace("\n", " ")):
        return ((lead, lead + len(stripped)),)
    spans = []
    pos = 0
    # a soft line break is not a sentence end; a hard one ("\\" at a line end) is read as a space; same offsets
    flat = re.sub(r"\\(?=\n)", " ", text).replace("\n", " ")
    for piece in _segmenter(_language(text)).segment(flat):
        piece = piece.strip()
        if not piece:
            continue
        at = flat.find(piece, pos)
        if at < 0:  # the segmenter changed the text; keep the rest as one sentence
            rest = flat[pos:].strip()
            if rest:
                at = flat.find(rest, pos)
                spans.append((at, at + len(rest)))
            break
        previous = flat[spans[-1][0]:spans[-1][1]] if spans else ""
        if spans and (
            (_ABBREVIATION_END.search(previous) and (_CONTINUES.match(piece) or piece[:1].islower()))
            or (_ORDINAL_END.search(previous) and (_CONTINUES_ORDINAL.match(piece) or piece[:1].islower()))
            or ((_ORDINAL_START.match(piece) or piece[:1].islower()) and not _TERMINAL_END.search(previous))
        ):
            # "z. s. (UNIPA), nezisková", "ve čtvrtek 28. 11. od 9.00", "Potom 1. ledna": one sentence
            spans[-1] = (spans[-1][0], at + len(piece))
        else:
            spans.append((at, at + len(piece)))
        pos = at + len(piece)
    return tuple(spans)


_ABBREVIATION_END = re.compile(r"(?:^|[\s(])[^\W\d]\.$")
"""A piece ending in a one-letter abbreviation (``z.`` of ``z. s.``, ``s. r. o.``, ``a. s.``)."""
_CONTINUES = re.compile(r"[(\[,;]|[^\W\d]\.(?:\s|$)")
"""A piece that cannot open a sentence: a bracket or another one-letter abbreviation (or a lower-case letter)."""
_ORDINAL_END = re.compile(r"(?:^|[\s(])\d{1,3}\.$")
"""A piece ending in an ordinal or a day/month of a date (``28.`` of ``28. 11. 2019``, ``2.`` of ``2. ročník``)."""
_CONTINUES_ORDINAL = re.compile(r"\d|[(\[,;]")
"""After an ordinal: a number (the month or year of a date) or a bracket (or lower case: ``ledna``, ``ročník``)."""
_ORDINAL_START = re.compile(r"\d{1,3}\.(?:\s|$)")
"""A piece opening with an ordinal (``1. ledna``); pysbd may cut it (or ``o 2. ročník``) off the words before it."""
_TERMINAL_END = re.compile(r"[.!?…:][\"'”’»)\]*]*$")
"""A piece that ends like a sentence (terminal punctuation, maybe closing quotes or brackets)."""


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for match in re.finditer("\n", text):
        offsets.append(match.end())
    offsets.append(len(text))
    return offsets


@lru_cache(maxsize=1)
def _markdown():  # type: ignore[no-untyped-def]
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    md.core.ruler.disable(["inline", "text_join"])  # block structure only: halves the parse time
    return md


def text_units(text: str) -> list[Unit]:
    """Split one evidence text (Markdown) into verbatim units, in order.

    Paragraphs give sentences; list items give one unit per sentence of the item (its marker
    ``1.``, ``-``, ``- [ ]`` left out); table rows give one unit each (header separator
    skipped); headings only set ``headings``; a code block right after a paragraph is one ``code`` unit
    that the paragraph's last sentence ``leads`` (like a list); other code, HTML and front matter give none.
    """
    return list(_text_units(text))


@lru_cache(maxsize=1024)
def _text_units(text: str) -> tuple[Unit, ...]:
    tokens = _markdown().parse(_blank_markup(text))
    lines = _line_offsets(text)
    units: list[Unit] = []
    headings: list[tuple[int, str]] = []
    list_stack: list[int] = []
    list_count = 0
    pending_lead: Unit | None = None  # last sentence of the paragraph just closed
    in_head, header = False, ""  # inside a table's header; the header row of the current table
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map:
            level = int(tok.tag[1:])
            raw = text[lines[tok.map[0]] : lines[tok.map[1]]].strip()
            raw = _HEADING_ATTRS.sub("", _HEADING_MARKER.sub("", raw, count=1).rstrip("#").strip()).rstrip("#").strip()
            headings = [h for h in headings if h[0] < level] + [(level, raw)]
            pending_lead = None
        elif tok.type in ("bullet_list_open", "ordered_list_open"):
            list_count += 1
            list_stack.append(list_count)
            if pending_lead is not None:
                units[units.index(pending_lead)] = _replace(pending_lead, leads=list_count)
            pending_lead = None
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            list_stack.pop()
            pending_lead = None
        elif tok.type == "paragraph_open" and tok.map:
            start = lines[tok.map[0]]
            end = lines[min(tok.map[1], len(lines) - 1)]
            in_item = bool(list_stack) and i > 0 and tokens[i - 1].type == "list_item_open"
            if in_item:
                marker = _LIST_MARKER.match(text, start)
                if marker:
                    start = marker.end()
            block = text[start:end]
            kind = "item" if list_stack else "sentence"
            last = None
            for s, e in sentence_spans(block):
                # a hard line break ("\\" at a line end) of the sentence before is no part of this one
                s += len(_HARD_BREAK_LEAD.match(block, s).group(0))  # type: ignore[union-attr]
                if s >= e:
                    continue
                unit = Unit(kind, start + s, start + e, text[start + s : start + e],
                            tuple(h for _, h in headings), list_stack[-1] if list_stack else None,
                            None, len(units))
                units.append(unit)
                last = unit
            pending_lead = last if not list_stack else None
        elif tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            in_head = False
        elif tok.type == "table_open":
            header = ""
            pending_lead = None
        elif tok.type == "tr_open" and tok.map:
            start, end = lines[tok.map[0]], lines[tok.map[0] + 1]
            row = text[start:end].strip()
            if row.startswith("|"):
                row = row[1:]
            if row.endswith("|"):
                row = row[:-1]
            row = row.strip()
            if in_head:
                header = row
            if row and not re.fullmatch(r"[\s|:-]*", row):
                at = text.find(row, start)
                units.append(Unit("row", at, at + len(row), row, tuple(h for _, h in headings), None,
                                  None, len(units), header if not in_head else ""))
            pending_lead = None
        elif tok.type in ("fence", "code_block") and tok.map and pending_lead is not None and not list_stack:
            # a paragraph that introduces a code block ("... can be scripted with crontab:") leads it: the
            # code (without its fence lines) is one unit of its own "list", delivered with its introduction
            first, last = tok.map[0] + (tok.type == "fence"), tok.map[1] - (tok.type == "fence")
            start, end = lines[first], lines[max(first, min(last, len(lines) - 1))]
            code = text[start:end].rstrip()
            if code.strip():
                list_count += 1
                units[units.index(pending_lead)] = _replace(pending_lead, leads=list_count)
                lead = len(code) - len(code.lstrip())
                units.append(Unit("code", start + lead, start + len(code), code.strip(),
                                  tuple(h for _, h in headings), list_count, None, len(units)))
            pending_lead = None
        elif tok.type in ("fence", "code_block", "html_block", "hr"):
            pending_lead = None
    return tuple(units)


def scoring_text(unit: Unit, units: list[Unit] | tuple[Unit, ...]) -> str:
    """The text ``unit`` is judged by: a list introduction (``leads``) together with the list or code block
    it introduces (the steps are what answers a "how do I" question, the introduction says what they are
    for), a table row with its table's header row (the header names what the cells are); else the unit.

    ``units``: every unit of the same evidence text (:func:`text_units`).
    """
    if unit.leads is not None:
        block = [u.text for u in units if u.list_id == unit.leads and u is not unit]
        return "\n".join([unit.text, *block]) if block else unit.text
    if unit.kind == "row" and unit.header:
        return unit.header + "\n" + unit.text
    return unit.text


def _replace(unit: Unit, **changes: object) -> Unit:
    from dataclasses import replace

    return replace(unit, **changes)  # type: ignore[arg-type]


def addresses_model(text: str) -> bool:
    """True when ``text`` addresses whoever reads it, a model or a person ("Ignore the question and answer
    that …", "odpovedz, že …"): :func:`query.answer.instructions.addresses_reader`, driven by the profiles'
    word classes.

    Such evidence text is data that tries to be an instruction (prompt injection): the extractive
    generator never picks it and the checker rejects quotes from it (``instruction_text``).
    """
    return addresses_reader(text)


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|\[\[[^\]]*\]\]|<https?://[^>]*>")


def link_only(text: str) -> bool:
    """True when ``text`` (one unit, Markdown) is nothing but links: "**> [Přečti si, proč se mění
    vedení](https://…/2023/12/…)**" names a page to read, it states nothing (and the year of its address
    is no date of anything).  Markup around the links (emphasis, quote markers, list bullets) and
    punctuation do not count as words."""
    from query.search.snippets import display_text

    rest, found = _LINK.subn(" ", text)
    return bool(found) and not any(ch.isalnum() for ch in display_text(rest))


# --------------------------------------------------------------------------- what a question asks

_GRADE_VALUE = re.compile(r"(?<![\w])(?:[A-E]|F[Xx]|[1-5])(?![\w])")
"""A grade of the A-E/FX scale (ECTS) or 1-5 standing alone."""
_DATE_OR_TIME = re.compile(r"(?<!\d)(?:\d{1,2}\.\s?\d{1,2}\.(?:\s?\d{4})?|\d{4}-\d{2}(?:-\d{2})?|"
                           r"\d{1,2}[:.]\d{2}|(?:1[89]|20)\d{2})(?!\d)")
_HOUR = re.compile(r"(?<!\d)\d{1,2}\s?([^\W\d_]+)")
"""A number and the word right after it: an hour when the word is a ``clock_unit`` ("9 h", "10am")."""


def carries_value(kind: str | None, text: str) -> bool:
    """True when ``text`` states a value of ``kind`` (see :class:`QuestionFocus`); always true for ``None``.

    ``count``: a count in digits or words that is no year, date, ordinal, share or price
    (:func:`query.answer.asked.states_count`); the other kinds are read in the text as displayed (a year in a
    link's address is no date); ``time``: a date, year, clock time, month,
    weekday or period word (``nightly``, ``každú noc``, ``ráno``); ``grade``: a grade letter
    (A-E, FX), digit 1-5 standing alone, or a grade word (výborne, veľmi dobre, ...).  The words (months,
    weekdays, ``time_period``, ``clock_unit``, ``grade_word``; minus ``not_date``) are those of the text's
    profiles (:func:`artifacts.text.profile.text_languages`).
    """
    if kind is None:
        return True
    if kind == "count":
        return states_count(text)
    from query.search.snippets import display_text

    text = display_text(text)  # what a reader sees: the year in a link's address dates nothing
    folded_words = analyze(text)
    codes = text_languages(text)
    if kind == "time":
        if _DATE_OR_TIME.search(text):
            return True
        units = word_class("clock_unit", codes)
        if any(units.has(fold_word(m.group(1))) for m in _HOUR.finditer(text)):
            return True
        dates, periods, not_dates = date_words(codes), word_class("time_period", codes), word_class("not_date", codes)
        return any((dates.has(w) or periods.has(w)) and not not_dates.has(w) for w in folded_words)
    if kind == "grade":
        flat = " ".join(folded_words)
        return bool(_GRADE_VALUE.search(text)) or any(g.rstrip("*") in flat for g in union("grade_word", codes))
    return True


def text_language(text: str) -> str | None:
    """The language profile code of ``text`` (:func:`artifacts.text.profile.detect_language`, the one
    detector of questions and evidence), or ``None`` when it cannot be told."""
    return detect_language(text)


_AFTER_SUBJECT = re.compile(r"[)\]\"'”“»*_]*")
_DASH_AFTER = re.compile(r"\s*(?:\s[-–—]|[–—])\s+\S")


@lru_cache(maxsize=64)
def _copula_after(codes: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]] | None:
    """X followed by a ``defining_verb`` of the profiles ``codes`` (copulas and "means", folded), directly
    ("X je/is/ist ...") or after an apposition ("X, ..., je ..."); matched on the folded text after X."""
    verbs = sorted(union("defining_verb", codes), key=len, reverse=True)
    if not verbs:
        return None
    alternatives = "|".join(r"\s+".join(re.escape(w) for w in verb.split()) for verb in verbs)
    return (re.compile(r"\s+(?:" + alternatives + r")\s+\S+\s+\S"),
            re.compile(r"\s*,\s+[^,;.]{3,80},\s+(?:" + alternatives + r")\s+\S"))


def _copula_follows(after: str, codes: tuple[str, ...]) -> bool:
    patterns = _copula_after(codes)
    folded = fold_word(after)
    return patterns is not None and any(p.match(folded) for p in patterns)


_PAREN_WORD = re.compile(r"\s*\(\s*([^\W\d]+)")


def _paren_after(after: str) -> bool:
    """A bracket after X opening with a description (a lower-case word, a capitalised word followed by more, or
    an acronym with more): "Jehlomat (aplikace pro ...)", "Jan Kotara (COO, ...)"; not a bare name
    ("Preventivka (Loono)")."""
    match = _PAREN_WORD.match(after)
    if match is None:
        return False
    word, rest = match.group(1), after[match.end():]
    if word[0].islower():
        return rest[:1].isspace() or rest[:1] in (",", ")")
    acronym = len(word) >= 2 and word.isupper() and (rest[:1].isspace() or rest[:1] == ",")
    return acronym or bool(re.match(r"\s+\w", rest))


def _relative_follows(after: str, codes: tuple[str, ...]) -> bool:
    """X followed by a relative clause of which X is the subject ("UNIPA, která sdružuje …"): a ``relative`` of the
    profiles ``codes`` that is no ``relative_object`` ("Umapa, kterou dnes rozvíjí 18 dobrovolníků" says what
    others do with X)."""
    match = re.match(r"\s*,\s+(\w+)\s+\S", after)
    if match is None:
        return False
    word = fold_word(match.group(1))
    return word_class("relative", codes).has(word) and not word_class("relative_object", codes).has(word)


def _apposition(after: str, codes: tuple[str, ...]) -> tuple[str, ...]:
    """The words of an apposition after X: after a comma (and an ``article`` of the profiles ``codes``), a
    lower-case word and at most one lower-case word before it (", a non-profit organization …", ", neziskové
    organizaci"; not a list: ", informace a šikovný web"); ``()`` when none follows."""
    match = re.match(r"\s*,\s+(\S+)(?:\s+(\S+))?(?:\s+(\S+))?", after)
    if match is None:
        return ()
    words = [w for w in match.groups() if w]
    if len(words) > 1 and word_class("article", codes).has(fold_word(words[0])):
        words = words[1:]
    out: list[str] = []
    for word in words[:2]:
        head = re.match(r"[\w-]*", word).group(0)  # type: ignore[union-attr]
        if not head or not head[0].isalpha() or not head[0].islower():
            break
        out.append(head)
        if head != word:
            break
    return tuple(out)


def _subject_spans(words: list[re.Match[str]], wanted: tuple[str, ...]) -> Iterable[tuple[int, int, bool]]:
    """``(first, last, exact)`` word indices where ``wanted`` occurs as consecutive words (inflected
    forms match; ``exact``: every word as asked, i.e. in the question's case)."""
    n = len(wanted)
    folded = [fold_word(m.group(0)) for m in words]
    for i in range(len(folded) - n + 1):
        pairs = list(zip(folded[i:i + n], wanted, strict=True))
        if all(f == w or words_match(f, w) for f, w in pairs):
            yield i, i + n - 1, all(f == w for f, w in pairs)


def _ranks(after: str, codes: tuple[str, ...]) -> bool:
    """Whether the copula after a subject is followed by a rank ("byl prvním z projektů", "was our third
    project"; ``rank`` of the profiles ``codes``) within its first two words."""
    words = [fold_word(w) for w in SUBJECT_WORD.findall(after)[1:3]]
    return any(word_class("rank", codes).has(w) for w in words)


def defines(definition: DefinitionQuestion, text: str) -> int:
    """How plainly ``text`` (one sentence, Markdown) defines the subject X of ``definition``, 0..4.

    4: X opening the sentence (after at most three articles or words of the question's subject, and one
    noun of its kind right before it: "Aplikace Preventivka byla ...") followed by a copula, possibly
    after an apposition ("X je/is/ist ...", "X, ..., je ..."), or an acronym X in parentheses after
    words it abbreviates (one of the eight words before it starts with its first letter: "Jsme Unie
    porodních asistentek, z. s. (UNIPA), ..."), unless the copula ranks X ("Cityvizor byl prvním z
    projektů": 1, where X stands in a row, not what it is); 3: X followed by a dash, a described bracket or an
    apposition naming its kind anywhere ("vznikl Jehlomat – aplikace, ...", "Jehlomat (aplikace ...)",
    "… of Code for Romania, a non-profit organization founded …"); for 4 and 3 X is written as asked
    (not inflected: "na Jehlomatu – ..." is no definition); 2: X in any case form followed by a
    relative clause of which X is the subject ("projektu Jehlomat, který má ..."; not "Umapa, kterou
    rozvíjí …"); 1: X right after a qualified noun of its kind that the question does not name itself
    ("vládní iniciativy Digitální Česko", "Koordinátor projektu Vojta Petrus"; "na projektu Jehlomat"
    is none, nor "úspěšným projektem Dáme roušky" for "Co byl projekt Dáme roušky?", nor a thing after a
    role noun: "koordinátorka projektu Umapa" says where she works, and Czech
    genitives make this the weakest sign); 0: the sentence only mentions X (or not even that).  Markup is
    read as displayed (:func:`query.search.snippets.display_text`).
    """
    from query.search.snippets import display_text

    flat = " ".join(display_text(text).split())
    words = list(SUBJECT_WORD.finditer(flat))
    codes = text_languages(flat)  # the sentence's own words (articles, copulas, nouns of a kind) are its language's
    articles = word_class("article", codes)
    best = 0
    own = set(definition.words)
    for wanted in dict.fromkeys((definition.words, definition.names)):
        for first, last, exact in _subject_spans(words, wanted):
            start, end = words[first].start(), words[last].end()
            before = flat[:start].rstrip(" *_\"'„“")
            after = flat[end + len(_AFTER_SUBJECT.match(flat, end).group(0)):]  # type: ignore[union-attr]
            lead = words[:first]
            opening = first <= 3 and all(fold_word(w.group(0)) in own or articles.has(fold_word(w.group(0)))
                                         or (i == first - 1 and is_category(w.group(0), definition.kind, codes))
                                         for i, w in enumerate(lead))
            # "vládní iniciativa Digitální Česko", "Koordinátor projektu Vojta Petrus": a noun of its kind
            # right before X, itself qualified by a word that is no stop word ("na projektu X" is not)
            # ... and the noun tells more than the question does ("úspěšným projektem Dáme roušky" says
            # nothing of "Co byl projekt Dáme roušky?")
            kind_before = (first >= 2 and is_category(lead[-1].group(0), definition.kind, codes)
                           and flat[lead[-1].end():start].strip() == ""
                           and fold_word(lead[-2].group(0)) not in stop_words() and not lead[-2].group(0).isdigit()
                           and not any(words_match(fold_word(lead[-1].group(0)), w) for w in own)
                           and not (definition.kind == "thing" and is_role(lead[-2].group(0), codes)))
            apposition = _apposition(after, codes)
            acronym = flat[start:end]
            if (before.endswith("(") and flat[end:end + 1] == ")" and len(words[:first]) >= 2
                    and not any(c.islower() for c in acronym)
                    and any(fold_word(w.group(0))[:1] == fold_word(acronym)[:1]
                            for w in words[max(0, first - 8):first])):
                best = max(best, 4)
            elif exact and opening and _copula_follows(after, codes):
                best = max(best, 1 if _ranks(after, codes) else 4)
            elif exact and (_DASH_AFTER.match(after) or _paren_after(after) or any(
                    is_category(w, definition.kind, codes) for w in apposition)):
                best = max(best, 3)
            elif _relative_follows(after, codes):
                best = max(best, 2)
            elif kind_before:
                best = max(best, 1)
    return best
