"""Generate -> check -> repair -> deliver: :func:`run_generation`, the one loop every text-route answer runs.

No model judges a claim: every claim a generator returns is checked against the evidence of this request only
(:class:`query.answer.evidence.EvidenceItem`), and only claims that pass are delivered.  The checks:

* attribution (:mod:`query.answer.attribution`: cited ids, the quote verbatim in its evidence, the details of
  the claim text in the cited items, instruction text, graph counts) and the binding of a claim's text to its
  own quote (:mod:`query.answer.binding`);
* relevance (:func:`query.answer.relevance.claim_relevance`: a supported claim that does not answer the
  question fails with ``off_question``) and, when a scorer is given, the calibrated answerability score
  (:func:`query.answer.answerability.gate_claims`);
* the coverage gate over the delivered claims (:func:`query.answer.relevance.coverage`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from query.answer.answerability import best_units, find_unit, gate_claims
from query.answer.attribution import check_reply
from query.answer.binding import quotes_of
from query.answer.evidence import (
    Claim,
    ClaimVerdict,
    EvidenceItem,
    GenerationOutcome,
    Generator,
    GeneratorReply,
    GeneratorUnavailableError,
)
from query.answer.generators import shown_text
from query.answer.quotes import normalize_quote
from query.answer.relevance import RelevanceGate, claim_relevance, coverage, relevance_gate
from query.answer.sentences import text_units


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
        if item is None or unit is None or unit.leads is None:
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
