"""The deterministic attribution check: one verdict per claim of a generator reply (:func:`check_reply`).

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
   :func:`query.answer.instructions.addresses_reader`, profile word classes): such text is data, never support.
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
from collections.abc import Sequence
from typing import Any

from query.answer.binding import bind_claim, bind_parts, quotes_instruction
from query.answer.evidence import Claim, ClaimVerdict, EvidenceItem, GeneratorReply
from query.answer.quotes import (
    _DATE,
    _detail_tokens,
    _Hay,
    _list_parts,
    _name_support,
    _number_support,
    _numbers,
    _occurs,
    _strings,
    normalize_quote,
    support_text,
)
from query.graph.names import capital_runs, tokenize

_YEAR = re.compile(r"(?:1[5-9]|20)\d{2}")
_MIN_PIECE_WORDS = 3
_MAX_PIECE_SEARCH_WORDS = 150  # longer non-verbatim quotes are simply "fabricated" (bounds the search)
MAX_CLAIMS = 50
"""Claims of one reply that are checked; the rest of an overlong reply is dropped unchecked."""


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
