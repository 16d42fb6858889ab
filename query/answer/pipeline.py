"""Checked answers: route a question (graph / text / graph+text), build evidence, generate, check, deliver.

Router: :mod:`query.answer.routing` (a table of what each graph answer leads to).

Then (``mode=answer``): no evidence above the relevance gate (:data:`query.answer.rag.MIN_SUPPORT`) ->
``no_answer`` / ``insufficient_evidence`` without calling a generator; otherwise
:func:`query.answer.checker.run_generation` (generate -> check, incl. the claim-level relevance gate
:func:`query.answer.relevance.claim_relevance` -> one repair -> drop what still fails -> coverage gate over
the delivered claims).  ``mode=retrieve`` stops after the evidence and never calls a generator.

Answers are cached (:class:`AnswerCache`) by bundle ``content_digest``, generator fingerprint,
normalised question, filter, mode and budget, so a swap to another bundle never serves a stale
answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from query.answer.answerability import UnitScorer, default_model
from query.answer.cache import AnswerCache
from query.answer.checker import run_generation
from query.answer.delivery import _deliver
from query.answer.evidence import Claim, EvidenceItem, GenerationOutcome, Generator, GeneratorReply
from query.answer.graph_phrasing import GraphPhrasing, _premise_of, check_graph
from query.answer.rag import Context
from query.answer.request import AnswerRequest, normalise_question, parse_answer_request
from query.answer.routing import Routed, _ms, route_question
from query.answer.sentences import defines
from query.bundle import OpenedBundle
from query.contract import Envelope, Source
from query.graph.assembly import answer_list, shown_entries
from query.question import analyse_question, definition_question
from query.search.request import SearchOptions
from query.search.response import engine_warnings, engines_used

Emit = Callable[[str, dict[str, Any]], Awaitable[None]]
"""SSE hook: ``await emit(event, data)`` with events ``retrieval``, ``status``, ``answer``."""


def _scorer(bundle: OpenedBundle, question: str, context: Context) -> UnitScorer | None:
    """The answerability scorer of one text-route request (None when no model is installed)."""
    if default_model() is None:
        return None
    try:
        embedder = bundle.scoring_embedder()
    except Exception:  # noqa: BLE001 - a bundle whose model cannot load is scored lexically
        embedder = None
    return UnitScorer(analyse_question(question), context.items, embedder, weights=context.word_weights)


class _Observed:
    """Wraps a generator to report ``status`` events (generating / checking / repairing)."""

    def __init__(self, inner: Generator, emit: Emit) -> None:
        self.inner = inner
        self.emit = emit
        self.name = inner.name

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    async def generate(self, question: str, evidence: list[EvidenceItem], *, repair: Any = None) -> GeneratorReply:
        await self.emit("status", {"stage": "repairing" if repair else "generating"})
        reply = await self.inner.generate(question, evidence, repair=repair)
        await self.emit("status", {"stage": "checking"})
        return reply


async def _no_emit(event: str, data: dict[str, Any]) -> None:
    return None


def _envelope(bundle: OpenedBundle, status: str, reason: str | None, sources: list[Source], *,
              complete: bool | None, truncation: list[str]) -> dict[str, Any]:
    return Envelope(status=status, reason=reason, sources=sources, index_version=bundle.index_version,
                    complete=complete, truncated=bool(truncation),
                    truncation_reasons=sorted(set(truncation))).model_dump(mode="json")


def _missing_entries(routed: Routed, claims: list[Claim], truncation: list[str]) -> int:
    """Entries of a graph list answer that no delivered claim names; when there are any, the answer is
    not ``complete`` and ``truncation`` names why (the graph's limit, the evidence budget, or
    ``claims_left_out`` when the checker dropped lines)."""
    body = routed.graph_body or {}
    listed = answer_list(body)
    if listed is None:
        return 0
    by_id = {item.evidence_id: item for item in routed.context.items}
    shown = shown_entries(body, (f for c in claims for eid in c.evidence if eid in by_id for f in by_id[eid].facts))
    missing = max(0, listed[1] - (shown or 0))
    if missing:
        routed.complete = False
        if not truncation:
            truncation.append("claims_left_out")
    return missing


def _weak_definition(question: str, claims: list[Claim]) -> str | None:
    """A warning when ``question`` asks what (who) X is and no delivered quote defines X plainly
    (:func:`query.answer.sentences.defines` below 3: only a relative clause or a noun of its kind says what it is)."""
    definition = definition_question(question)
    if definition is None or not claims or max(defines(definition, c.quote) for c in claims) >= 3:
        return None
    return (f"No sentence of the pages defines {definition.subject}; the answer only says what kind of "
            f"{'person' if definition.kind == 'person' else 'thing'} it is or what it does.")


def _coverage_block(routed: Routed, outcome: GenerationOutcome | None, delivered: int,
                    weak: str | None = None, scorer: UnitScorer | None = None,
                    claims: list[Claim] | None = None) -> dict[str, Any]:
    warnings: list[str] = [weak] if weak else []
    limitations = [f"Only the pages of commit {routed.context.items[0].commit[:12]} were used."
                   if routed.context.items else "No evidence was used."]
    if routed.engine == "graph":
        scope = "graph facts of the served bundle"
        limitations.append("Facts come from front matter and page structure as mapped into the graph.")
    elif routed.engine == "graph+text":
        scope = "text of the pages of the persons named in the question"
    else:
        scope = "text retrieval over the served bundle"
    if routed.context.truncation_reasons:
        warnings.append("Some evidence did not fit: " + ", ".join(routed.context.truncation_reasons) + ".")
    dropped = _dropped(outcome)
    if dropped:
        warnings.append(f"{dropped} claim(s) failed the evidence check and were left out.")
    if routed.complete is False:
        warnings.append("The graph list is cut; the count is exact.")
    partial = bool(warnings) and (dropped > 0 or routed.complete is False or bool(routed.context.truncation_reasons)
                                  or weak is not None)
    answerability = None
    if scorer is not None and scorer.variant is not None:
        quotes = {c.quote for c in claims or []}
        scores = [p for q, p in scorer.scores if q in quotes]
        answerability = {"score": max(scores) if scores else None, "threshold": scorer.variant.threshold,
                         "variant": scorer.variant_name}
    return {"scope": scope, "status": "partial" if partial else "supported", "warnings": warnings,
            "limitations": limitations, "coverage": round(outcome.coverage, 4) if outcome is not None else None,
            "claims": delivered, "answerability": answerability}


def _debug_report(outcome: GenerationOutcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {"attempts": outcome.attempts, "repaired": outcome.repaired, "coverage": round(outcome.coverage, 4),
            "status": outcome.status, "reason": outcome.reason}


def _refusal_report(routed: Routed) -> dict[str, Any]:
    """The ``debug`` report of a refusal decided before generation: the route taken, the graph's
    verdict, and what text retrieval checked (:attr:`query.answer.rag.Context.retrieval`)."""
    graph = routed.graph_body or {}
    entities = graph.get("entities") or {}
    return {"route": routed.engine,
            "graph": {"status": graph.get("status"), "reason": graph.get("reason"),
                      "persons": [p.get("matched") or p.get("name") for p in entities.get("persons") or []],
                      "unknown_names": list(entities.get("unknown_names") or [])},
            "retrieval": dict(routed.context.retrieval) or None,
            "evidence_items": len(routed.context.items), "attempts": []}


def _dropped(outcome: GenerationOutcome | None) -> int:
    """Claims of the last attempt that failed the checker (they were left out)."""
    if outcome is None or not outcome.attempts:
        return 0
    # a claim that only missed the question (off_question) is no defect of the delivered answer
    return sum(1 for v in outcome.attempts[-1].get("verdicts") or []
               if not v.get("ok") and set(v.get("reasons") or ()) - {"off_question"})


async def answer(bundle: OpenedBundle, request: AnswerRequest, options: SearchOptions,
                 generator: Generator | None, *, emit: Emit | None = None, cache: AnswerCache | None = None,
                 coverage_threshold: float = 0.20, min_support: float | None = None,
                 include_debug: bool = False, answerability: bool = True) -> dict[str, Any]:
    """Answer ``request`` from ``bundle``; return the ``/answer`` response body.

    Body: the contract envelope plus ``query``, ``engine``, ``answer`` (text with ``[S1]`` markers,
    or null), ``claims`` (``[{text, source_ids, evidence: [{evidence_id, source_id, chunk_id,
    document_path, heading_path, quote}]}]``), ``answer_coverage`` (``{scope, status, warnings, limitations}``),
    ``cached``, ``timings`` (ms per stage); ``candidates`` when ambiguous; ``evidence`` in
    ``mode=retrieve``; ``debug`` (the checker's report) when ``include_debug``.

    ``answerability``: gate text claims with the calibrated score (:mod:`query.answer.answerability`; a no-op
    when no model is installed).  ``generator`` may be ``None`` only in ``mode=retrieve``.  The route and
    retrieval run in a worker thread.  :raises GeneratorUnavailableError: the provider failed (``mode=answer``).
    :raises RetrievalUnavailableError: the graph or text index failed.
    """
    emit = emit or _no_emit
    started = time.perf_counter()
    fingerprint = generator.fingerprint() if generator is not None else "none"
    model = default_model() if answerability else None
    fingerprint += f":answerability={model.fingerprint if model is not None else 'none'}"
    key = AnswerCache.key(bundle.manifest.content_digest, fingerprint, request) if cache is not None else None
    if cache is not None and key is not None and not include_debug:
        hit = cache.get(key)
        if hit is not None:
            hit["cached"] = True
            hit["timings"] = {"total": _ms(started)}
            await emit("retrieval", {"engine": hit["engine"], "sources": hit["sources"]})
            return hit

    routed = await asyncio.to_thread(route_question, bundle, request, options, min_support)
    timings = dict(routed.timings)
    context = routed.context
    await emit("retrieval", {"engine": routed.engine,
                             "sources": [s.model_dump(mode="json") for s in context.sources]})
    base = {"query": request.query, "engine": routed.engine, "answer": None, "claims": [],
            "answer_coverage": None, "cached": False,
            # the retrieval arms this bundle has: BM25 only while it is a lexical bundle (vectors pending)
            "engines": engines_used(bundle), "warnings": engine_warnings(bundle)}
    truncation = list(context.truncation_reasons)

    def finish(body: dict[str, Any], cacheable: bool = True) -> dict[str, Any]:
        timings["total"] = _ms(started)
        body["timings"] = timings
        if cache is not None and key is not None and cacheable and not include_debug:
            cache.put(key, body)
        return body

    if routed.status != "ok":
        body = _envelope(bundle, routed.status, routed.reason, [], complete=routed.complete, truncation=[])
        body.update(base)
        if routed.candidates is not None:
            body["candidates"] = routed.candidates
            body["sources"] = (routed.graph_body or {}).get("sources", [])
        if include_debug:
            body["debug"] = _refusal_report(routed)
        return finish(body)

    if request.mode == "retrieve":
        status, reason = ("ok", None) if context.items else ("no_answer", "insufficient_evidence")
        body = _envelope(bundle, status, reason, context.sources, complete=routed.complete, truncation=truncation)
        body.update(base)
        body["evidence"] = context.public_items()
        body["best_support"] = None if context.best_support is None else round(context.best_support, 4)
        return finish(body)

    if not context.items:
        body = _envelope(bundle, "no_answer", "insufficient_evidence", [], complete=None, truncation=truncation)
        body.update(base)
        if include_debug:
            body["debug"] = _refusal_report(routed)
        return finish(body)

    outcome: GenerationOutcome
    scorer: UnitScorer | None = None
    generation_started = time.perf_counter()
    if routed.engine == "graph":
        assert routed.graph_body is not None
        await emit("status", {"stage": "checking"})
        outcome = check_graph(request.query, context.items, routed.graph_body)
    else:
        if generator is None:
            raise ValueError("mode=answer needs a generator")
        # the text route only: graph+text evidence is already restricted to the pages of a resolved person
        scorer = _scorer(bundle, request.query, context) if answerability and routed.engine == "text" else None
        outcome = await run_generation(request.query, context.items, _Observed(generator, emit),
                                       coverage_threshold=coverage_threshold, graph=None,
                                       ignore=routed.resolved_words, weights=context.word_weights or None,
                                       unknown=context.unknown_words, answerability=scorer,
                                       rescue=getattr(generator, "name", None) == "extractive")
    timings["generation"] = _ms(generation_started)

    if outcome.status != "ok" or not outcome.claims:
        body = _envelope(bundle, "no_answer", outcome.reason or "unsupported_answer", [], complete=None,
                         truncation=truncation)
        body.update(base)
        if include_debug:
            body["debug"] = _debug_report(outcome)
            body["debug"]["route"] = routed.engine
            body["debug"]["retrieval"] = dict(context.retrieval) or None
        return finish(body)

    claims = list(outcome.claims)
    text, claims_json, sources = _deliver(claims, context, display=routed.engine != "graph")
    if routed.engine == "graph" and routed.graph_body is not None:
        missing = _missing_entries(routed, claims, truncation)
        text = GraphPhrasing(routed.graph_body).text(claims_json, missing)
    body = _envelope(bundle, "ok", None, sources, complete=routed.complete if routed.engine == "graph" else None,
                     truncation=truncation)
    body.update(base)
    body["answer"] = text
    body["claims"] = claims_json
    weak = _weak_definition(request.query, claims) if routed.engine != "graph" else None
    body["answer_coverage"] = _coverage_block(routed, outcome, len(claims_json), weak, scorer, claims)
    if (premise := _premise_of(routed.graph_body)) is not None and routed.engine == "graph":
        # a question that states a fact: the graph's fact confirms it or corrects it
        body["answer_coverage"]["premise"] = premise
        body["answer_coverage"]["correction"] = not premise["holds"]
    if include_debug:
        body["debug"] = _debug_report(outcome)
        body["debug"]["route"] = routed.engine
        body["debug"]["retrieval"] = dict(context.retrieval) or None
    return finish(body)


__all__ = ["AnswerCache", "AnswerRequest", "GraphPhrasing", "Routed", "answer", "normalise_question",
           "parse_answer_request", "route_question"]
