"""A claim's text bound to its own quote, and evidence text that addresses the reader (issue 24).

The attribution check (:mod:`query.answer.attribution`) proves that a claim's ``quote`` stands verbatim in the cited
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
  tokens, :func:`query.answer.quotes._detail_tokens`, in any Slovak case form) must occur in the frame.  A
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

**Instructions in pages** (:func:`query.answer.instructions.addresses_reader`): a sentence addresses whoever
reads it (a model or a person) when one of its clauses opens with an imperative of answering, saying or ignoring
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
from artifacts.text.profile import available, load_profile
from artifacts.text.words import verb_languages
from query.answer.claim_numbers import _DATE, _bare_numbers, _misplaced_number, _number_support, _plain, _word_numbers
from query.answer.evidence import Claim, ClaimVerdict, EvidenceItem
from query.answer.instructions import addresses_reader
from query.answer.polarity import _moved_negation, _negations, _polarity, _unshared
from query.answer.quotes import _detail_tokens, _flatten, _name_support, _strip_markup, normalize_quote
from query.answer.sentences import text_units
from query.answer.wordclasses import _CLAUSE_PUNCT, _WORD, _lexicon, _tokens

BIND_FAILURES = ("unbound_detail", "polarity")
"""The failure reasons of this module (also in :data:`query.answer.evidence.CLAIM_FAILURES`)."""
_MAX_PARTS = 4         # a merged claim with more quotes than this is not split (fails)
_MAX_SPLITS = 400      # bound on the part assignments tried for one merged claim


# --------------------------------------------------------------------------- the frame

@dataclass(frozen=True)
class _Frame:
    own: str        # the quote and the introduction of its list
    context: str    # headings above it, heading path, title, graph facts


def _frame(quote: str, item: EvidenceItem) -> _Frame:

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


# --------------------------------------------------------------------------- content words

@lru_cache(maxsize=16384)
def _lemmas(word: str) -> frozenset[str]:
    from artifacts.lexicon import lemmatize

    out = {word}
    for code in available():
        lang = _lexicon().simplemma[code]
        # the dictionaries artifacts.text.words.verb_words already loads (a verb language has a simplemma language)
        if lang and code in verb_languages():
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

@lru_cache(maxsize=512)
def _instruction_spans(text: str) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...], tuple[str, ...]]:
    """``(tokens of text, token ranges of its sentences that address the reader, those sentences normalised)``."""

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
