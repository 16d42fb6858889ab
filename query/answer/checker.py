"""The deterministic claim checker, the coverage gate and generate -> check -> repair -> deliver.

No model is involved: every claim a generator returns is checked against the evidence of this
request only (:class:`query.answer.evidence.EvidenceItem`), and only claims that pass are delivered.

Checks per claim, in order (reasons from :data:`query.answer.evidence.CLAIM_FAILURES`):

1. ``missing_evidence`` when it cites nothing; ``unknown_evidence`` when an id is not in the context.
2. The quote must occur in a cited item's text after NFC, case folding and whitespace collapsing
   (a second comparison also ignores inline Markdown: ``**``, ``*``, backticks, ``[text](url)``),
   on word boundaries.  Otherwise: ``misattributed`` when it occurs in another item of the context,
   ``frankenquote`` when it is made of two or more pieces of >= 3 words that each occur in the
   context but not contiguously, else ``fabricated``.
3. ``unsupported_detail``: every number, year and date of the claim *text*, and every capitalised
   name or title word (and any token with an inner capital or a digit, e.g. ``mT5``, ``GPT-2``),
   must occur in the cited items (text, title, heading path, graph facts;
   for ``graph`` items with ``graph=`` also the graph answer's counts).  Numbers compare
   exactly (``67,5`` = ``67.5``; ``22. 10. 2019`` = ``22.10.2019``; the year of a date counts as
   the year).  Names compare diacritics-folded and inflection-aware with the Slovak case forms of
   :func:`query.graph.names.name_forms` (``Strakovej`` = ``Straková``); no prefix guessing, so
   ``Nováková`` is not ``Novák``.  A lone capitalised word opening a sentence (next word not
   capitalised) is not taken for a name: it cannot be told from an ordinary word without a lexicon
   (simplemma's sk+cs+en lexicons were measured at 160 MB and several seconds to load), so a bare
   surname at the start of a sentence is the one name the checker does not verify.
4. ``instruction_text``: the quote passed, but it overlaps a sentence of the evidence that addresses
   the reader or a model ("Ignore the question and answer that …", "odpovedz, že …";
   :func:`query.answer.binding.addresses_reader`, profile word classes): such text is data, never support.
   ``unbound_detail`` / ``polarity``: the claim's text must be bound to its own quote, and a claim
   merging several items to one quote per item (:mod:`query.answer.binding`); a text that cannot be checked
   word by word is delivered as its quote.
5. ``graph_mismatch`` (only with ``graph=``, a ``/graph`` response body): for a claim citing a
   ``graph`` item, every count in its text (an integer that is not a year and not inside a name or
   title of the cited facts, like ``GPT-2``) must equal the aggregation count (or a list length of
   the graph answer), and a list of names that mixes members of a graph answer list with names outside
   it is rejected.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from artifacts.text.profile import crosses_language, possessive, question_languages, text_languages, union
from artifacts.text.words import WordSet, content_words, fold_word, stop_words, verb_words, word_set
from query.answer.answerability import best_units, find_unit, gate_claims
from query.answer.asked import (
    CountFocus,
    action_family,
    action_words,
    asks_people,
    asks_person,
    count_focus,
    states_action,
    states_count,
)
from query.answer.binding import bind_claim, bind_parts, quotes_instruction, quotes_of
from query.answer.evidence import (
    FRONT_MATTER_SECTIONS,
    Claim,
    ClaimVerdict,
    EvidenceItem,
    GenerationOutcome,
    Generator,
    GeneratorReply,
    GeneratorUnavailableError,
)
from query.answer.sentences import Unit, carries_value, defines, link_only, text_language, text_units
from query.graph.names import capital_runs, damerau1, name_forms, tokenize
from query.question import DefinitionQuestion, QuestionFocus, definition_question, question_focus
from query.search.snippets import display_text

_SPACE = re.compile(r"\s+")
_OUTER = "\"'„“”‚‘’«»`"
_ELLIPSIS = re.compile(r"^(?:\.\.\.|…)\s*|\s*(?:\.\.\.|…)$")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_MARK = re.compile(r"\*\*|__|[*`]")
_PIECE_SPLIT = re.compile(r"\s*(?:\.\.\.|…|[.;:!?,–—])\s+|\s+[-–—]\s+")
_DATE_SPACED = re.compile(r"(?<!\d)(\d{1,2})\.\s+(\d{1,2})\.\s*(\d{4})(?!\d)")
_NUMBER = re.compile(r"(?<![\w])\d+(?:[.,:/]\d+)*")
_DATE = re.compile(r"\d{1,2}[./]\d{1,2}[./](\d{4})")
_YEAR = re.compile(r"(?:1[5-9]|20)\d{2}")
_SENTENCE_END = re.compile(r"[.!?:;]\s*[\"'„“”»)*_]*\s*$")
_MIN_PIECE_WORDS = 3
_MAX_PIECE_SEARCH_WORDS = 150  # longer non-verbatim quotes are simply "fabricated" (bounds the search)
MAX_CLAIMS = 50
"""Claims of one reply that are checked; the rest of an overlong reply is dropped unchecked."""


# --------------------------------------------------------------------------- normalisation

def normalize_quote(text: str) -> str:
    """Return ``text`` in NFC, case-folded, whitespace collapsed, outer quotes and ellipses removed."""
    text = _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()
    previous = None
    while previous != text:
        previous = text
        text = _ELLIPSIS.sub("", text).strip().strip(_OUTER).strip()
    return text.casefold()


def _strip_markup(text: str) -> str:
    return _SPACE.sub(" ", _MD_MARK.sub("", _MD_LINK.sub(r"\1", text))).strip()


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _occurs(needle: str, hay: str) -> bool:
    """``needle`` occurs in ``hay`` (both normalised) starting and ending on word boundaries."""
    if not needle:
        return False
    start = hay.find(needle)
    while start >= 0:
        end = start + len(needle)
        left_ok = start == 0 or not (_is_word_char(needle[0]) and _is_word_char(hay[start - 1]))
        right_ok = end == len(hay) or not (_is_word_char(needle[-1]) and _is_word_char(hay[end]))
        if left_ok and right_ok:
            return True
        start = hay.find(needle, start + 1)
    return False


@dataclass(frozen=True)
class _Hay:
    """An evidence text in both comparison forms."""

    plain: str
    light: str

    @classmethod
    def of(cls, text: str) -> _Hay:
        plain = normalize_quote(text)
        return cls(plain, normalize_quote(_strip_markup(text)))

    def contains(self, quote: str) -> bool:
        plain = normalize_quote(quote)
        return _occurs(plain, self.plain) or _occurs(normalize_quote(_strip_markup(quote)), self.light)


# --------------------------------------------------------------------------- details

def support_text(item: EvidenceItem) -> str:
    """What details of a claim citing ``item`` may rest on: its text, title, heading path and graph facts."""
    parts = [item.text, item.title or "", " / ".join(item.heading_path)]
    parts.extend(_flatten(fact) for fact in item.facts)
    return "\n".join(p for p in parts if p)


def _flatten(value: Any) -> str:
    if isinstance(value, dict):
        return " ; ".join(_flatten(v) for k, v in sorted(value.items()) if not str(k).endswith("_id"))
    if isinstance(value, (list, tuple)):
        return " ; ".join(_flatten(v) for v in value)
    if value is None or isinstance(value, bool):
        return ""
    return str(value)


def _strings(value: Any) -> list[str]:
    """The string values (not numbers) inside nested dicts and lists."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _numbers(text: str) -> list[str]:
    """Numbers of ``text`` as compared: decimal comma = point, spaced dates joined."""
    text = _DATE_SPACED.sub(r"\1.\2.\3", unicodedata.normalize("NFC", text))
    out = []
    for match in _NUMBER.finditer(text):
        token = match.group(0)
        out.append(token.replace(",", "."))
    return out


def _number_support(text: str) -> set[str]:
    numbers = set(_numbers(text))
    for token in list(numbers):
        date = _DATE.fullmatch(token)
        if date:
            numbers.add(date.group(1))
    return numbers


_WORD_RE = re.compile(r"\w+(?:[-’']\w+)*")


def _squash(word: str) -> str:
    return fold_word(word).replace("-", "").replace("’", "").replace("'", "")


class _NameSupport:
    """Words of the cited evidence with their Slovak case forms, all folded."""

    def __init__(self, text: str) -> None:
        self.words: set[str] = set()
        self.forms: set[str] = set()
        seen: set[str] = set()
        for match in _WORD_RE.finditer(unicodedata.normalize("NFC", text)):
            word = match.group(0)
            if word in seen:
                continue
            seen.add(word)
            self.words.add(_squash(word))
            if word[:1].isupper():
                self.forms.update(_squash(f) for f in name_forms(word))

    def has(self, word: str) -> bool:
        folded = _squash(word)
        if folded in self.words or folded in self.forms:
            return True
        return any(_squash(f) in self.words for f in name_forms(word))


@lru_cache(maxsize=256)
def _name_support(text: str) -> _NameSupport:
    return _NameSupport(text)


def _detail_tokens(text: str) -> list[str]:
    """Capitalised name/title words and mixed tokens (``mT5``, ``GPT-2``) of a claim text.

    A lone capitalised word that opens a sentence (the next word is not capitalised) is not taken
    for a name: without a lexicon it cannot be told from an ordinary word, and nearly every claim
    starts with one.  Full names and capitalised words inside a sentence are checked.
    """
    text = unicodedata.normalize("NFC", text)
    tokens = tokenize(text)
    words = list(re.finditer(r"\w+(?:[-’']\w+)*", text))
    out = []
    for i, token in enumerate(tokens):
        word = token.text
        if word.isdigit():
            continue
        mixed = any(ch.isdigit() for ch in word) or any(ch.isupper() for ch in word[1:])
        if not (token.capital or mixed):
            continue
        if not mixed:
            if len(word) == 1:
                continue
            start = words[i].start()
            before = text[:start]
            initial = not before.strip(" \t\n-*>#(\"'„“") or bool(_SENTENCE_END.search(before))
            next_capital = i + 1 < len(tokens) and tokens[i + 1].capital and not tokens[i + 1].text.isdigit()
            if initial and not next_capital:
                continue
        out.append(word)
    return out


# --------------------------------------------------------------------------- graph

def _graph_counts(graph: dict[str, Any]) -> set[int]:
    counts: set[int] = set()
    aggregation = graph.get("aggregation") or {}
    if isinstance(aggregation, dict) and isinstance(aggregation.get("count"), int):
        counts.add(aggregation["count"])
    answers = graph.get("answer")
    for answer in answers if isinstance(answers, list) else [answers]:
        if isinstance(answer, dict):
            if isinstance(answer.get("count"), int):
                counts.add(answer["count"])
            for key, value in answer.items():
                if isinstance(value, list) and not key.endswith("_ids"):
                    counts.add(len(value))
    return counts


def _graph_lists(graph: dict[str, Any]) -> list[set[str]]:
    lists = []
    answers = graph.get("answer")
    for answer in answers if isinstance(answers, list) else [answers]:
        if isinstance(answer, dict):
            for key, value in answer.items():
                strings = isinstance(value, list) and value and all(isinstance(v, str) for v in value)
                if strings and not key.endswith("_ids"):
                    lists.append({normalize_quote(v) for v in value})
    return lists


def _list_parts(text: str, punctuation: str, codes: tuple[str, ...] | None = None) -> list[str]:
    """``text`` split at ``punctuation`` and at the one-word ``conjunction_and`` words of the profiles ``codes``
    (the text's own when None): "Jan Novák a Petra Malá", "Jan Novák and Petra Malá" are two names."""
    words = sorted((w for w in union("conjunction_and", codes or text_languages(text)) if " " not in w),
                   key=len, reverse=True)
    conjunctions = r"|\s(?:" + "|".join(re.escape(w) for w in words) + r")\s" if words else ""
    return re.split(punctuation + conjunctions, text)


def _name_runs(text: str) -> list[str]:
    """Runs of two or more adjacent capitalised words (names) within one list element, normalised."""
    out = []
    for part in _list_parts(text, r"[,;:()/]"):
        for run in capital_runs(tokenize(part), set()):
            if len(run) >= 2:
                out.append(normalize_quote(" ".join(t.text for t in run)))
    return out


def _graph_verdict(text: str, graph: dict[str, Any], cited: Sequence[EvidenceItem]) -> list[str]:
    """Counts: integers of the claim that are not years and not part of a name or title of the cited
    facts (``GPT-2``) must be a graph count.  Lists: names mixed from inside and outside a list."""
    details = []
    counts = _graph_counts(graph)
    in_names = _number_support(" ; ".join(_strings([item.facts for item in cited])))
    if counts:
        for number in _numbers(text):
            if number.isdigit() and not _YEAR.fullmatch(number) and int(number) not in counts \
                    and number not in in_names:
                details.append("a count in the claim differs from the graph aggregation")
                break
    runs = _name_runs(text)
    for members in _graph_lists(graph):
        inside = [r for r in runs if r in members]
        outside = [r for r in runs if r not in members]
        if inside and outside and len(runs) >= 2:
            details.append("a list in the claim has names outside the graph answer")
            break
    return details


# --------------------------------------------------------------------------- verdicts

def check_reply(question: str, reply: GeneratorReply | Sequence[Claim], evidence: Sequence[EvidenceItem], *,
                graph: dict[str, Any] | None = None) -> list[ClaimVerdict]:
    """Return one :class:`ClaimVerdict` per claim of ``reply`` (at most :data:`MAX_CLAIMS`), in order.

    ``evidence``: this request's context (ids ``E1..En``); ``graph``: the ``/graph`` response body
    the graph items came from (``aggregation``, ``answer``), enabling ``graph_mismatch``.
    ``question`` is never support (a claim is not true because the question says so).
    Raises nothing on bad claims; every failure is a verdict.
    """
    claims = (reply.claims if isinstance(reply, GeneratorReply) else tuple(reply))[:MAX_CLAIMS]
    by_id = {item.evidence_id: item for item in evidence}
    hays = {item.evidence_id: _Hay.of(item.text) for item in evidence}
    return [_check_claim(question, claim, by_id, hays, graph) for claim in claims]


def _check_claim(question: str, claim: Claim, by_id: dict[str, EvidenceItem], hays: dict[str, _Hay],
                 graph: dict[str, Any] | None) -> ClaimVerdict:
    if len(claim.quotes) > 1:  # one quote per merged item: each part of the text bound to its own
        return bind_parts(claim, lambda part: _check_claim(question, part, by_id, hays, graph))
    reasons: list[str] = []
    details: list[str] = []

    def fail(reason: str, detail: str) -> None:
        if reason not in reasons:
            reasons.append(reason)
        details.append(detail)

    ids = tuple(dict.fromkeys(e.strip() for e in claim.evidence if isinstance(e, str)))
    if not ids:
        fail("missing_evidence", "the claim cites no evidence")
        return ClaimVerdict(claim, False, tuple(reasons), tuple(details))
    if any(e not in by_id for e in ids):
        fail("unknown_evidence", "the claim cites an evidence id that is not in this request's context")
    cited = [by_id[e] for e in ids if e in by_id]
    if not cited:
        return ClaimVerdict(claim, False, tuple(reasons), tuple(details))

    quote = claim.quote or ""
    if not normalize_quote(quote):
        fail("fabricated", "the claim has no quote")
    elif not any(hays[item.evidence_id].contains(quote) for item in cited):
        others = [h for e, h in hays.items() if e not in ids]
        if any(h.contains(quote) for h in others):
            fail("misattributed", "the quote is in another evidence item, not in the cited one")
        elif _is_frankenquote(quote, list(hays.values())):
            fail("frankenquote", "the quote joins pieces of evidence that are not contiguous")
        else:
            fail("fabricated", "the quote does not occur in any evidence item")
    elif any(quotes_instruction(quote, item.text) for item in cited):
        fail("instruction_text", "the quote comes from evidence text that addresses the model, which is never support")

    support = "\n".join(support_text(item) for item in cited)
    numbers = _number_support(support)
    if graph and any(item.kind == "graph" for item in cited):
        numbers.update(str(count) for count in _graph_counts(graph))  # the graph's counts are evidence too
    for number in _numbers(claim.text):
        if number not in numbers:
            kind = "year" if _YEAR.fullmatch(number) else "date" if _DATE.fullmatch(number) else "number"
            fail("unsupported_detail", f"a {kind} in the claim text is not in the cited evidence")
    names = _name_support(support)
    for word in _detail_tokens(claim.text):
        if not names.has(word):
            fail("unsupported_detail", "a name or title in the claim text is not in the cited evidence")
            break

    if graph and any(item.kind == "graph" for item in cited):
        for detail in _graph_verdict(claim.text, graph, cited):
            fail("graph_mismatch", detail)
    if not reasons:  # the text says no more than its own quote (query/answer/binding.py)
        counts = _graph_counts(graph) if graph and any(item.kind == "graph" for item in cited) else ()
        bound = bind_claim(claim, [item for item in cited if hays[item.evidence_id].contains(quote)], counts)
        for reason, detail in bound.failures:
            fail(reason, detail)
        claim = bound.claim
    return ClaimVerdict(claim, not reasons, tuple(reasons), tuple(details))


def _words(text: str) -> list[str]:
    return normalize_quote(text).split(" ")


def _is_frankenquote(quote: str, hays: list[_Hay]) -> bool:
    """The quote is >= 2 pieces of >= 3 words, each verbatim somewhere in the context.

    Pieces are found greedily: the longest run of words from the current position that occurs in
    some item; every word of the quote must be inside such a piece.
    """
    words = [w for w in _words(quote) if w]
    if len(words) < 2 * _MIN_PIECE_WORDS or len(words) > _MAX_PIECE_SEARCH_WORDS:
        return False
    pieces = 0
    i = 0
    while i < len(words):
        best = 0
        for j in range(len(words), i + _MIN_PIECE_WORDS - 1, -1):
            candidate = " ".join(words[i:j])
            if any(_occurs(candidate, h.plain) or _occurs(candidate, h.light) for h in hays):
                best = j
                break
            trimmed = candidate.strip(".,;:!?…–—-")
            if trimmed != candidate and any(_occurs(trimmed, h.plain) for h in hays):
                best = j
                break
        if not best:
            return False
        pieces += 1
        i = best
    return pieces >= 2


# --------------------------------------------------------------------------- coverage

def coverage(question: str, claims: Iterable[Claim], evidence: Sequence[EvidenceItem],
             resolved: Iterable[str] = ()) -> float:
    """Return the share (0..1) of the question's content words that the delivered claims address.

    Content words: :func:`artifacts.text.words.content_words` (BM25 folding analyzer, stop words of
    sk/cs/en/de/pl dropped) without the words that only frame the question
    (:func:`query.question.question_focus`: interrogatives, "vypíš", the ``time`` of "what time");
    a word counts as covered when it matches (:func:`artifacts.text.words.words_match`:
    inflection by shared prefix, Slovak/Czech cognates) a word of some claim's *quote*, of the
    sentence introducing the quote's list (``Ciele:`` above ``- Overiť ...``), of the headings above
    the quote, or of the cited item's title or heading path.  So the figure describes what is
    delivered, not the whole cited chunk.  A question without content words, or one that names
    someone (:func:`question_names`) whom the cited evidence never names, has coverage 0.0.
    ``resolved``: question words an engine already answered for (the words a graph answer's analysis
    explained: a slug "zoul" resolved to the author it names, the intent's words); they count as covered.
    """
    wanted = list(question_focus(question).words) or content_words(question)
    if not wanted:
        return 0.0
    done = word_set(" ".join(resolved))
    by_id = {item.evidence_id: item for item in evidence}
    claims = list(claims)
    cited = [by_id[e] for e in dict.fromkeys(e for claim in claims for e in claim.evidence) if e in by_id]
    support = "\n".join(support_text(item) for item in cited)
    if not all(name_occurs(name, support) or all(done.has(fold_word(w)) for w in name)
               for name in question_names(question)):
        return 0.0
    sets: list[WordSet] = []
    for claim in claims:
        for eid in claim.evidence:
            if eid in by_id:
                own, context = _claim_words(claim.quote, by_id[eid])
                sets += [own, context]
    return sum(1 for w in wanted if done.has(w) or any(s.has(w) for s in sets)) / len(wanted)


# --------------------------------------------------------------------------- relevance

RELEVANCE_SHARE = 0.4
"""Least share (0..1, idf-weighted when the bundle's weights are given) of the question's topic words
a claim must address (its quote and list introduction count 1, the headings, title and heading path
above it 0.5)."""
VALUE_SHARE = 0.5
"""For a question asking for a value (count, time, grade): least share of its topic words (counted,
not weighted: each names what the value is of) in the claim's own quote and list introduction
(headings do not count: a chapter's page count under the thesis heading is not the thesis's page
count)."""
KEY_SHARE = 0.9
"""Question words weighing at least this share of the heaviest (non-verb) word count as its most specific words."""
_CONTEXT_WEIGHT = 0.5
_KIND_LABEL = {"count": "a number", "time": "a date or time", "grade": "a grade"}


def _claim_words(quote: str, item: EvidenceItem) -> tuple[WordSet, WordSet]:
    """``(own, context)`` words of a quote in ``item``: own = the quote and, for a list item, the
    sentence that introduces its list; context = the headings above it, the item's title and heading path."""
    own, context, _, _, _, _ = _quote_words(quote, item.text, item.title or "", tuple(item.heading_path))
    return own, context


def _section_words(quote: str, item: EvidenceItem) -> WordSet:
    """The words of the section a quote sits in: its headings (above it in the chunk, and the chunk's
    heading path), or the document title when it sits under none.  A newsletter's title names all its
    topics ("Novinky za září 2019: První HackDay | Jak to u nás chodí | …"); a sentence under
    "Meetup #2 v STRV" is about that meetup, not about every topic of the title."""
    return _quote_words(quote, item.text, item.title or "", tuple(item.heading_path))[2]


LABEL_WORDS = 5
"""A heading of at most this many words is a label that names its section's subject ("Zadanie",
"Úlohy práce"); a longer one is a sentence (a quotation used as a heading) and names nothing asked."""


def _names_thing(quote: str, item: EvidenceItem, thing: str) -> bool:
    """Whether the section of ``quote`` names ``thing`` in a short heading (a label, :data:`LABEL_WORDS`),
    or ``quote`` is a list item: a list enumerates the things a "which X" question asks for ("Aké úlohy
    …?" answered by the task list under "Zadanie") without naming X in each item."""
    _, _, _, labels, in_list, _ = _quote_words(quote, item.text, item.title or "", tuple(item.heading_path))
    return in_list or labels.has(thing)


@lru_cache(maxsize=1024)
def _quote_words(quote: str, text: str, title: str,
                 heading_path: tuple[str, ...]) -> tuple[WordSet, WordSet, WordSet, WordSet, bool, WordSet]:
    """``(own, context, section, labels, in_list, headings)`` word sets of a quote in an evidence text
    (see :func:`_claim_words`, :func:`_section_words`, :func:`_names_thing`; ``headings``: the headings
    above it only, no title)."""
    units = text_units(text)
    own = [quote]
    headings: list[str] = [*heading_path]
    in_list = False
    for unit in _units_of_quote(quote, units):
        in_list = in_list or unit.list_id is not None
        headings.extend(unit.headings)
        if unit.list_id is not None:
            own.extend(u.text for u in units if u.leads == unit.list_id)
    # a front-matter description is about the whole document: its title is its section heading
    section = [title, *headings] if all(h in FRONT_MATTER_SECTIONS for h in headings) else headings
    labels = [h for h in headings if len(h.split()) <= LABEL_WORDS]
    return (word_set("\n".join(own)), word_set("\n".join([title, *headings])), word_set("\n".join(section)),
            word_set("\n".join(labels)), in_list, word_set("\n".join(headings)))


def quote_section(quote: str, item: EvidenceItem) -> tuple[str, ...]:
    """The headings ``quote`` sits under in ``item``: the chunk's heading path, then the headings above the
    quote inside the chunk text (``("description",)`` for a quote of a front-matter description chunk)."""
    for unit in _units_of_quote(quote, text_units(item.text)):
        return tuple(dict.fromkeys((*item.heading_path, *unit.headings)))
    return tuple(item.heading_path)


def _units_of_quote(quote: str, units: list[Unit]) -> Iterator[Unit]:
    """The units of an evidence text that hold ``quote`` or lie inside it (compared normalised)."""
    target = normalize_quote(quote)
    for unit in units:
        text = normalize_quote(unit.text)
        if text and (text in target or target in text):
            yield unit


@dataclass(frozen=True)
class RelevanceGate:
    """What a claim must address for one question (built once per question by :func:`relevance_gate`).

    ``focus``: the question's :class:`~query.question.QuestionFocus`; ``words``: its topic words
    to check (names and ``ignore`` words removed; in a question in another language than the
    evidence, words that occur in no evidence item are waived: they cannot be checked lexically);
    ``waived``: those waived words; ``unverifiable``: the question has topic words but none can be
    checked (every one waived), so no claim can be shown to answer it; ``weights``: per word of
    :attr:`words` (a word the index does not know weighs at most as much as the heaviest known
    one); ``unknown``: the question's first topic word when the bundle's index does not know it at
    all (what the question asks about is likely absent from the pages: a claim must address it);
    ``definition``: set when the question asks what or who something is ("Co je X?"): a claim's
    quote must then define X (:func:`query.answer.sentences.defines`), not merely mention it; ``verbs``:
    those of :attr:`words` that are verb forms (:func:`artifacts.text.words.verb_words`), never the
    question's most specific word while it has other words; ``count``: what a count question counts
    (:func:`query.answer.asked.count_focus`: a quote must state a number of it); ``action``: the action family
    of a who question ("Kdo založil X?": ``found``; :func:`query.answer.asked.action_family`), which a quote must
    name; ``person``: the question asks for a person and is no definition question ("Kdo převzal …?",
    "Which member …?"; :func:`query.answer.asked.asks_person`): a quote must name someone the question does not;
    ``people``: it asks who all ("Kdo všechno …?", :func:`query.answer.asked.asks_people`): a quote must name two;
    ``numbers``: the numbers the question itself gives (``{"60", "70"}`` of "… when they expected only
    60-70?"), which answer no count or time question.
    """

    focus: QuestionFocus
    words: tuple[str, ...]
    waived: tuple[str, ...] = ()
    unverifiable: bool = False
    weights: tuple[float, ...] = ()
    unknown: frozenset[str] = frozenset()
    definition: DefinitionQuestion | None = None
    verbs: frozenset[str] = frozenset()
    count: CountFocus | None = None
    action: str | None = None
    person: bool = False
    people: bool = False
    numbers: frozenset[str] = frozenset()

    def weight(self, word: str) -> float:
        """The weight of one of :attr:`words` (1.0 without weights)."""
        return self.weights[self.words.index(word)] if self.weights else 1.0


def relevance_gate(question: str, evidence: Sequence[EvidenceItem], ignore: Iterable[str] = (),
                   weights: dict[str, float] | None = None, unknown: Iterable[str] = ()) -> RelevanceGate:
    """Return the :class:`RelevanceGate` of ``question`` over ``evidence``.

    ``ignore``: words already resolved elsewhere (person names the graph recognised), folded or not.
    ``weights``: ``{folded question word: idf}`` over the bundle (:attr:`query.answer.rag.Context.word_weights`,
    typos already mapped to indexed words); a rare word, or one the pages never use, then weighs
    more than a word found on every page ("heslo" against "server").  Without it every word weighs 1.
    ``unknown``: question words the index does not know (:attr:`query.answer.rag.Context.unknown_words`).
    A word of 5+ letters that no evidence word matches but one is a single edit away from
    (``dilpomovej``) is taken as that word, as in name matching.
    """
    focus = question_focus(question)
    # what a "which X" question asks for is never resolved elsewhere: "team" of "Which team won …?" is
    # no person the graph knows, however it matched
    asked_for = {focus.thing, focus.head} - {None}
    names = {fold_word(w) for name in question_names(question) for w in name} | {
        fold_word(w) for w in ignore if fold_word(w) not in asked_for}
    weights = dict(weights or {})
    unknown_set = set(unknown)
    words = [w for w in (list(weights) if weights else focus.words) if w not in names]
    if words and evidence:
        vocabulary = word_set("\n".join(support_text(item) for item in evidence))
        for i, w in enumerate(words):
            if len(w) >= 5 and w.isalpha() and not vocabulary.has(w):
                close = sorted(v for v in vocabulary.words if abs(len(v) - len(w)) <= 1 and damerau1(v, w))
                if close:
                    words[i] = close[0]
                    if w in weights:
                        weights[close[0]] = weights.pop(w)
                    unknown_set.discard(w)
    waived: list[str] = []
    if words and evidence:
        # Czech and Slovak are checked word by word like one language (cognates match, see
        # words_match; profiles list them as `close`): a Czech question's "plat" absent from Slovak
        # evidence is not waived
        if crosses_language(text_language(question), [text_language(item.text) for item in evidence[:4]]):
            everything = word_set("\n".join(support_text(item) for item in evidence))
            waived = [w for w in words if not everything.has(w)]
            unknown_set = set()  # another language: words the index does not know are expected
    checked = tuple(dict.fromkeys(w for w in words if w not in waived))
    if weights:
        # a word the index does not know has the highest idf, which would let a paraphrasing verb
        # ("preštudoval" for "Vypracovaný prehľad") outweigh every word the pages do use
        known = [weights[w] for w in checked if w not in unknown_set]
        cap = max(known, default=1.0)
        weights = {w: min(v, cap) if w in unknown_set else v for w, v in weights.items()}
    # the word after "aký / which" is what the question asks about ("heslo" in "Aké je heslo na
    # školský server?"); when the index does not know it, a claim must address it.  Other words the
    # index does not know (a paraphrasing verb: "chcel", "zostaviť") cannot be matched by any
    # claim, so they are left out of the share rather than weighing against every claim alike.
    head = frozenset({focus.head} if focus.head else ()) & unknown_set & set(checked)
    if len(checked) > len(unknown_set & set(checked) - head):
        dropped = (unknown_set & set(checked)) - head
        waived += sorted(dropped)
        checked = tuple(w for w in checked if w not in dropped)
    definition = definition_question(question)
    return RelevanceGate(focus, checked, tuple(waived), unverifiable=bool(words) and not checked,
                         weights=tuple(max(weights[w], 1e-6) for w in checked) if weights else (),
                         unknown=head, definition=definition,
                         verbs=verb_words(question) & frozenset(checked),
                         count=count_focus(question) if focus.kind == "count" else None,
                         action=action_family(question),
                         person=asks_person(question) and definition is None,
                         people=asks_people(question),
                         numbers=frozenset(_numbers(question)))


_QUESTION_END = re.compile(r"[?？][\s\"'“”„»«)\]*_]*$")
"""A quote ending in a question mark (closing quotes, brackets and emphasis markers after it allowed)."""


def claim_relevance(gate: RelevanceGate, claim: Claim, evidence: Sequence[EvidenceItem]) -> list[str]:
    """Return why ``claim`` does not answer the question of ``gate`` (empty: it does).

    The claim's *quote* is judged (the verbatim, checked part), with its list introduction and the
    headings above it (:func:`_claim_words`); the claim text is not, as the checker cannot tell
    whether it says what its quote says.  Fails when the question's topic words cannot be checked
    at all; when the quote and its list introduction share none of them; when the question's first
    topic word, unknown to the index, is not addressed either (it names something the pages never
    mention, "heslo" in "Aké je heslo na školský server?"); when they address less
    than :data:`RELEVANCE_SHARE` of them (context words at half weight) or, for a value question,
    less than :data:`VALUE_SHARE` in the quote itself; when a value question (count, time,
    grade) gets a quote that states no such value (a count question: no number that counts the thing
    asked for, :mod:`query.answer.asked`); when a definition question ("Co je X?", "What is X?", "Kdo je X?")
    gets a quote that mentions X without defining it; when a who question about an action ("Kdo
    založil X?") gets a quote without a word for that action, or a contact line; or when the quote is
    itself a question.
    """
    if gate.unverifiable:
        return ["none of the question's words occurs in the evidence, so no claim can be shown to answer it"]
    by_id = {item.evidence_id: item for item in evidence}
    items = [by_id[e] for e in claim.evidence if e in by_id]
    if not items:
        return []  # the checker reports unknown or missing evidence
    details: list[str] = []
    if _QUESTION_END.search(claim.quote):
        # an interview's "Kolik lidí vlastně na Code for Romania dělá …?" answers neither "Co je Code
        # for Romania?" nor a count question: a question states nothing
        details.append("the quote is itself a question; it states nothing")
    if link_only(claim.quote):
        # "Přečti si, proč se mění vedení" (a link to another post) does not say since when anyone leads
        details.append("the quote is only a link; it states nothing")
    if gate.words:
        pairs = [_claim_words(claim.quote, item) for item in items]
        counted = set(gate.count.nouns) if gate.count is not None and states_count(
            claim.quote, gate.count.nouns, beneficiary=gate.count.beneficiary) else set()
        if gate.action is not None and states_action(gate.action, claim.quote):
            # "založili" answers "founded" in any language of the family table
            counted.update(action_words(gate.action, gate.words))
        # a number that counts the asked noun addresses it: "130 IT profesionálů" answers "Kolik lidí …?"
        own_words = [w for w in gate.words if w in counted or any(o.has(w) for o, _ in pairs)]
        context_words = [w for w in gate.words if w not in own_words and any(c.has(w) for _, c in pairs)]
        total = sum(gate.weight(w) for w in gate.words)
        own = sum(gate.weight(w) for w in own_words) / total
        share = own + _CONTEXT_WEIGHT * sum(gate.weight(w) for w in context_words) / total
        missing = sorted(w for w in gate.unknown if w not in own_words and w not in context_words)
        acts = set(action_words(gate.action, gate.words)) if gate.action is not None else set()
        acted_on = [w for w in gate.words if w not in acts] if gate.action is not None else []
        if not own_words:
            details.append("the quote shares no word with what the question asks")
        elif acted_on and not any(w in own_words or w in context_words for w in acted_on):
            # "Who founded Česko.Digital?" is not answered by "…Code for Romania, a non-profit
            # organization founded in 2016…": the action is there, what it was done to is not
            details.append("the question asks who did something to what it names; the quote does not name it")
        elif gate.focus.thing in own_words and len(gate.words) >= 2 and not any(
                w in own_words or w in context_words for w in gate.words if w != gate.focus.thing):
            # "Which team won the first Česko.Digital hackday?" is not answered by "We have a dedicated
            # team …" of another organisation: a rare word for the thing asked for is all it shares
            details.append("the quote names the thing the question asks for, but nothing of what it asks about")
        elif missing:
            details.append("what the question asks about occurs nowhere in the pages, nor in the quote")
        elif share < RELEVANCE_SHARE:
            details.append(f"the quote addresses too little of the question ({share:.2f} < {RELEVANCE_SHARE})")
        elif gate.focus.thing in gate.words and gate.focus.thing not in own_words and len(gate.words) >= 2 \
                and not any(_names_thing(claim.quote, item, gate.focus.thing) for item in items):
            # "Jaké je heslo k firemní wifi?" is not answered by a sentence about public WiFi under a
            # heading that quotes someone's password: the thing asked for must be named by the quote,
            # its list introduction or a short heading of its section; a list item enumerates the things
            # asked for ("Aké úlohy …?" answered by the task list under "Zadanie")
            details.append("the quote does not name the thing the question asks for")
        elif gate.focus.kind and len(own_words) / len(gate.words) < VALUE_SHARE:
            details.append(f"the quote itself names too little of what the question asks a value of "
                           f"({len(own_words) / len(gate.words):.2f} < {VALUE_SHARE})")
        elif gate.weights and len(gate.words) >= 2 and not (
                set(_key_words(gate)) & {w for w in gate.words
                                         if any(o.has(w) for o, _ in pairs)
                                         or any(_section_words(claim.quote, item).has(w) for item in items)}):
            # the most specific word is what the question is about ("plat" in "Jaký plat má Jan
            # Kotara jako CEO Česko.Digital?"): a quote about the CEO without it answers nothing asked;
            # it must be in the quote or the headings of its section, not only in a title of many topics
            details.append("the quote does not address the question's most specific word")
    if gate.definition is not None and not defines(gate.definition, claim.quote):
        details.append(f"the question asks {'who' if gate.definition.kind == 'person' else 'what'} "
                       "its subject is; the quote does not define it")
    elif gate.definition is not None and gate.definition.qualifier and not any(
            all(own.has(w) or context.has(w) for w in gate.definition.qualifier)
            for own, context in (_claim_words(claim.quote, item) for item in items)):
        # "Co je projekt Digitální inkluze od Česko.Digital?": a definition of some other "Digitální
        # inkluze" page that never names Česko.Digital does not say it is theirs
        details.append("the question asks about its subject as qualified by a name; the quote and its "
                       "headings do not name it")
    if gate.count is not None:
        details += _count_details(gate.count, claim.quote, items)
    elif not carries_value(gate.focus.kind, claim.quote):
        details.append(f"the question asks for {_KIND_LABEL[str(gate.focus.kind)]}; the quote states none")
    if gate.focus.kind in ("count", "time") and _only_numbers_of(gate.numbers, claim.quote):
        # "we were expecting about 60–70 people" does not say how many came when the question says 60-70
        details.append("the quote only repeats numbers the question gives")
    if gate.person and not names_someone(question_words(gate), claim.quote, 2 if gate.people else 1):
        details.append("the question asks who; the quote names no one it does not already name" if not gate.people
                       else "the question asks who all; the quote names fewer than two people")
    if gate.action is not None and not states_action(gate.action, claim.quote):
        details.append("the question asks who did something; the quote does not say who did it "
                       "(no word for the action, no person named, or a contact line)")
    return details


def _only_numbers_of(numbers: frozenset[str], quote: str) -> bool:
    shown = _numbers(display_text(quote))
    return bool(shown) and set(shown) <= numbers


def repeats_numbers(question: str, quote: str) -> bool:
    """Whether every number of ``quote`` (as displayed; at least one) is a number ``question`` gives
    itself: "… expecting about 60–70 people" for "How many came, when they expected only 60-70?"."""
    numbers = frozenset(_numbers(question))
    return bool(numbers) and _only_numbers_of(numbers, quote)


def question_words(gate: RelevanceGate) -> WordSet:
    """The words of the question of ``gate`` (its focus words, waived and resolved ones included)."""
    return word_set(" ".join((*gate.focus.words, *gate.waived)))


def names_someone(asked: WordSet, quote: str, least: int = 1) -> bool:
    """Whether ``quote`` names at least ``least`` people the question does not: a capitalised word inside a
    sentence or a name of two or more capitalised words (:func:`_detail_tokens`; no acronym, no "I’m": "UX",
    "CEO" name no one) none of whose name's words is among ``asked`` (the question's words), each name
    counted once; for more than one, only full names of two or more words count ("Shay Banon, tvůrce
    Elasticsearch" names one person).  "We have a dedicated team …, a team of UX designers" names no one;
    "Funkci převzala Eva Pavlíková" names no one new for "Kdo po Evě Pavlíkové …?" ("Eva" belongs to the
    asked "Pavlíková"); a name glued with a dot ("Česko.Digital") is an organisation's and names no one."""
    shown = display_text(quote)
    runs = capital_runs(tokenize(shown), set())
    named: set[tuple[str, ...]] = set()
    for word in _detail_tokens(shown):
        word = re.sub(r"['’]\w*$", "", word)  # "I’m" is "I"
        if len(word) < 2 or not word[:1].isupper() or word.isupper() or any(c.isdigit() for c in word):
            continue
        run = next((r for r in runs if any(t.text.startswith(word) for t in r)), [])
        name: list[str] = []
        for token in run:  # "Česko.Digital" is one word of a name, as the question writes it
            if token.joined and name:
                name[-1] += "." + token.text
            else:
                name.append(token.text)
        if any("." in w for w in name):
            continue  # "Česko.Digital", "Pomáháme.Digital": a name glued with a dot is an organisation's
        if not any(asked.has(fold_word(w)) for w in [word, *name]) and (least == 1 or len(name) >= 2):
            named.add(tuple(name) or (word,))
    return len(named) >= least


def _count_details(count: CountFocus, quote: str, items: Sequence[EvidenceItem]) -> list[str]:
    """Why ``quote`` does not state how many of ``count.nouns`` (empty: it does): no number counts them
    (a year, a date, "3leté", a price do not), or a qualifier of the counted noun ("lidí *z komunity*")
    is named neither by the quote nor by the headings above it (a document title does not count: "Svět je
    v krizi, komunity sehrávají…" does not make every number of the post one of the community)."""
    if not states_count(quote, count.nouns, beneficiary=count.beneficiary):
        return [f"the question asks how many {' '.join(count.nouns)}; no number of the quote counts them"]
    for word in count.qualifiers:
        if not any(own.has(word) or headings.has(word) for own, _, _, _, _, headings in (
                _quote_words(quote, item.text, item.title or "", tuple(item.heading_path)) for item in items)):
            return [f"the quote does not say the number counts {' '.join(count.nouns)} of '{word}'"]
    return []


def _key_words(gate: RelevanceGate) -> list[str]:
    """The question's most specific words: those within :data:`KEY_SHARE` of the highest weight (idf over
    the bundle) among its words that are no verb forms ("hackday" and "prvnim", not the rarer "seslo",
    in "Kolik lidí se sešlo na prvním hackdayi?": a verb says what happened, the pages may word it
    otherwise); all words when every one is a verb form."""
    pairs = [(w, weight) for w, weight in zip(gate.words, gate.weights, strict=True) if w not in gate.verbs]
    pairs = pairs or list(zip(gate.words, gate.weights, strict=True))
    top = max(weight for _, weight in pairs)
    return [w for w, weight in pairs if weight >= KEY_SHARE * top - 1e-9]


def question_names(question: str) -> list[tuple[str, ...]]:
    """Full names in ``question``: runs of two or more adjacent capitalised words (``Petry Strakovej``).

    Stop words ("Aký", "Which" opening the question) and all-capital acronyms ("WER", "BERT") are
    never name words: "Aký WER dosiahla Natália Lukáčová" names only Natália Lukáčová.  An English
    possessive is not part of the name ("Denis Bača's thesis" names Denis Bača).
    """
    stops = stop_words()
    names = []
    owner = possessive(question_languages(question))  # the profiles' possessive_ending
    text = unicodedata.normalize("NFC", question)
    text = owner.sub("", text) if owner is not None else text
    for part in _list_parts(text, r"[,;:()/?!.]", question_languages(question)):
        for run in capital_runs(tokenize(part), set()):
            piece: list[str] = []
            for word in [t.text for t in run] + [""]:
                if word and not (word.isupper() and len(word) > 1) and fold_word(word) not in stops:
                    piece.append(word)
                    continue
                if len(piece) >= 2:
                    names.append(tuple(piece))
                piece = []
    return names


@lru_cache(maxsize=16384)
def _forms(word: str) -> frozenset[str]:
    """``word`` and its Slovak case forms, folded (computed from the word as written)."""
    return frozenset({_squash(word), *(_squash(f) for f in name_forms(word))})


def name_occurs(name: tuple[str, ...], text: str) -> bool:
    """The name's words occur adjacent in ``text``, each in some Slovak case form (folded); one word
    of 5+ letters may differ by one edit (a typo), as in graph name matching."""
    raw = [m.group(0) for m in _WORD_RE.finditer(unicodedata.normalize("NFC", text))]
    targets = [_squash(token) for token in name]
    wanted = [_forms(token) for token in name]

    def same(i: int, word: str) -> int:  # 2 exact or inflected, 1 typo, 0 no
        folded = _squash(word)
        if folded in wanted[i] or targets[i] in _forms(word):
            return 2
        return 1 if len(folded) >= 5 and damerau1(folded, targets[i]) else 0

    for start in range(len(raw) - len(name) + 1):
        scores = [same(i, raw[start + i]) for i in range(len(name))]
        if all(scores) and scores.count(1) <= 1:
            return True
    return False


# --------------------------------------------------------------------------- pipeline

def _attempt_record(number: int, reply: GeneratorReply | None, verdicts: list[ClaimVerdict],
                    error: str | None = None) -> dict[str, Any]:
    return {
        "attempt": number,
        "insufficient": bool(reply and reply.insufficient),
        "error": error,
        "raw": reply.raw if reply else None,
        "verdicts": [
            {"text": v.claim.text, "evidence": list(v.claim.evidence), "quote": v.claim.quote,
             "ok": v.ok, "reasons": list(v.reasons), "details": list(v.details)}
            for v in verdicts
        ],
    }


def _claim_key(claim: Claim) -> tuple[str, tuple[str, ...], str]:
    return normalize_quote(claim.text), tuple(claim.evidence), normalize_quote(claim.quote)


def _off_question(verdict: ClaimVerdict, details: list[str]) -> ClaimVerdict:
    return ClaimVerdict(verdict.claim, False, (*verdict.reasons, "off_question"), (*verdict.details, *details))


def _judge(question: str, reply: GeneratorReply, items: list[EvidenceItem], graph: dict[str, Any] | None,
           gate: RelevanceGate | None, scorer: Any = None) -> list[ClaimVerdict]:
    verdicts = check_reply(question, reply, items, graph=graph)
    if gate is None:
        return verdicts
    out = []
    for v in verdicts:
        # a claim merging several items (query.answer.binding) answers the question when one of its quotes does
        details = min((claim_relevance(gate, Claim(v.claim.text, v.claim.evidence, q), items)
                       for q in quotes_of(v.claim)), key=len) if v.ok else []
        out.append(_off_question(v, details) if details else v)
    if scorer is not None:
        out = gate_claims(scorer, out, items, _off_question)
    return out


def _rescue(question: str, items: list[EvidenceItem], graph: dict[str, Any] | None, scorer: Any,
            attempts: list[dict[str, Any]], *, above: float | None = None) -> list[Claim]:
    """The best-scoring evidence unit (with the list or code block it introduces) as verbatim claims, if it
    passes the attribution checks; ``above``: only when its score is higher than this (else ``[]``)."""

    ranked = best_units(scorer, items)
    if not ranked or (above is not None and ranked[0][0] <= above):
        return []
    _p, item, unit = ranked[0]
    group = []
    for part in getattr(unit, "units", (unit,)):  # a Window delivers each of its units
        group.append(part)
        if part.leads is not None:
            group += [u for u in text_units(item.text) if u.list_id == part.leads]
    reply = GeneratorReply(tuple(_unit_claims(item, group)))
    verdicts = check_reply(question, reply, items, graph=graph)
    attempts.append(_attempt_record(3, reply, verdicts))
    return [v.claim for v in verdicts if v.ok]


def _unit_claims(item: EvidenceItem, units: list[Any]) -> list[Claim]:
    """Verbatim claims of ``units`` of ``item`` (a code block's text as written, other units as displayed)."""
    from query.answer.generators import shown_text  # generators imports this module

    return [Claim(text=u.text if u.kind == "code" else shown_text(u.text), evidence=(item.evidence_id,),
                  quote=" ".join(u.text.split())) for u in units]


def _with_blocks(question: str, claims: list[Claim], items: list[EvidenceItem],
                 graph: dict[str, Any] | None) -> list[Claim]:
    """``claims`` with, after each one that quotes a list introduction, the items or code block it introduces
    (verbatim claims that pass the attribution checks): "run these commands:" is no answer without them."""

    by_id = {it.evidence_id: it for it in items}
    have = {(c.evidence, " ".join(c.quote.split())) for c in claims}
    out: list[Claim] = []
    for claim in claims:
        out.append(claim)
        item = by_id.get(claim.evidence[0]) if claim.evidence else None
        unit = find_unit(claim.quote, item) if item is not None and item.kind == "chunk" else None
        if unit is None or unit.leads is None:
            continue
        block = [c for c in _unit_claims(item, [u for u in text_units(item.text) if u.list_id == unit.leads])
                 if (c.evidence, c.quote) not in have]
        if block:
            out.extend(v.claim for v in check_reply(question, GeneratorReply(tuple(block)), items, graph=graph)
                       if v.ok)
            have |= {(c.evidence, c.quote) for c in block}
    return out


async def run_generation(question: str, evidence: Sequence[EvidenceItem], generator: Generator, *,
                         coverage_threshold: float = 0.20,
                         graph: dict[str, Any] | None = None, relevance: bool = True,
                         ignore: Iterable[str] = (), weights: dict[str, float] | None = None,
                         unknown: Iterable[str] = (), answerability: Any = None,
                         rescue: bool = False) -> GenerationOutcome:
    """Generate claims, check them, repair once, and deliver only what passed.

    Steps: ``generator.generate`` -> :func:`check_reply` and, with ``relevance`` (the text route),
    :func:`claim_relevance` (a supported claim that does not answer the question fails with
    ``off_question``) -> when a claim failed, one repair call (``repair=`` the failed verdicts; its
    reply may repeat or replace claims) -> re-check; claims that passed either attempt are
    delivered (duplicates dropped), the rest is dropped.  ``ignore``: question words already
    resolved (person names the graph recognised), not asked of claims; ``weights``: the question
    words' idf over the bundle and ``unknown`` the words it does not know (see :func:`relevance_gate`);
    ``answerability``: a :class:`query.answer.answerability.UnitScorer`; a supported claim whose quote scores
    below its threshold fails with ``off_question`` (:func:`query.answer.answerability.gate_claims`); with
    ``rescue`` (the extractive generator), when no claim survives, the best evidence unit that reaches the
    threshold (with the items of the list it introduces) is delivered verbatim if it passes the attribution
    checks (attempt 3 of ``attempts``).
    Outcomes: ``ok``;
    ``no_answer``/``insufficient_evidence`` (the generator said so without claims, gave no claims,
    every supported claim was off the question, or the delivered claims address less than
    ``coverage_threshold`` (0..1) of the question's content words, see :func:`coverage`);
    ``no_answer``/``unsupported_answer`` (no claim survived the evidence checks).  ``attempts``
    records each reply with its verdicts.  Rejected claims never appear in ``claims``.

    Raises :class:`GeneratorUnavailableError` when the first call fails, or when the repair call
    fails and no claim of the first attempt passed.
    """
    items = list(evidence)
    gate = relevance_gate(question, items, ignore, weights, unknown) if relevance else None
    reply = await generator.generate(question, items)
    verdicts = _judge(question, reply, items, graph, gate, answerability)
    attempts = [_attempt_record(1, reply, verdicts)]
    if not reply.claims:
        # the extractive generator's rules found nothing: the best unit the score accepts may still answer
        scored = answerability is not None and rescue
        rescued = _rescue(question, items, graph, answerability, attempts) if scored else []
        if rescued:
            return GenerationOutcome(rescued, "ok", None, coverage(question, rescued, items), attempts)
        return GenerationOutcome([], "no_answer", "insufficient_evidence", 0.0, attempts)
    passed = [v.claim for v in verdicts if v.ok]  # verdicts cover at most MAX_CLAIMS claims
    failed = [v for v in verdicts if not v.ok]
    every = list(verdicts)
    repaired = False
    if failed:
        repaired = True
        try:
            second = await generator.generate(question, items, repair=failed)
        except GeneratorUnavailableError:
            attempts.append(_attempt_record(2, None, [], error="generator_unavailable"))
            if not passed:
                raise
        else:
            second_verdicts = _judge(question, second, items, graph, gate, answerability)
            attempts.append(_attempt_record(2, second, second_verdicts))
            passed.extend(v.claim for v in second_verdicts if v.ok)
            every.extend(second_verdicts)
    delivered: list[Claim] = []
    seen: set[tuple[str, tuple[str, ...], str]] = set()
    for claim in passed:
        key = _claim_key(claim)
        if key not in seen:
            seen.add(key)
            delivered.append(claim)
    if answerability is not None and rescue and answerability.variant is not None:
        # one score decides what the extractive generator delivers: its rules propose claims, and a unit of the
        # evidence that scores higher than every one of them replaces them (with the block it introduces)
        quoted = {" ".join(c.quote.split()) for c in delivered}
        best = max((p for q, p in answerability.scores if " ".join(q.split()) in quoted), default=None)
        better = _rescue(question, items, graph, answerability, attempts, above=best) if delivered else []
        if better:
            return GenerationOutcome(better, "ok", None, coverage(question, better, items), attempts, repaired)
    if not delivered and answerability is not None and rescue:
        delivered = _rescue(question, items, graph, answerability, attempts)
        if delivered:
            return GenerationOutcome(delivered, "ok", None, coverage(question, delivered, items), attempts, repaired)
    if not delivered:
        # supported but off the question: the evidence does not answer it (not a bad generator)
        off = any(v.reasons == ("off_question",) for v in every)
        return GenerationOutcome([], "no_answer", "insufficient_evidence" if off else "unsupported_answer", 0.0,
                                 attempts, repaired)
    if rescue:
        delivered = _with_blocks(question, delivered, items, graph)
    share = coverage(question, delivered, items)
    if share < coverage_threshold:
        return GenerationOutcome([], "no_answer", "insufficient_evidence", share, attempts, repaired)
    return GenerationOutcome(delivered, "ok", None, share, attempts, repaired)
