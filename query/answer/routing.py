"""Route a question to the graph, to text retrieval or to both, and build its evidence (:func:`route_question`).

Router (:func:`route_question`), graph first:

=============================================  ==========================================================
graph answer                                   what ``/answer`` does
=============================================  ==========================================================
``ok`` with facts                              evidence = the facts (one item per document), phrased
                                               deterministically (:class:`GraphPhrasing`), still checked
``ok`` without facts / other ``no_answer``     ``no_answer`` with the graph's reason (``engine: graph``)
``unknown_person``                             ``no_answer`` / ``unknown_person`` (also for a content
                                               question about someone the wiki does not know: it is
                                               never answered from another person's page)
``ambiguous_person``                           ``ambiguous`` with the graph's ``candidates``
``unsupported_question``, structure question  ``no_answer`` / ``unsupported_question``: persons or
                                               documents selected by front matter or links ("Ktorí
                                               študenti majú tag X?", ``entities.structure_question``)
                                               are never answered by a text sentence
``unsupported_question`` naming known persons  text retrieval restricted to their pages (``graph+text``)
anything else                                  text retrieval over the whole bundle (``text``)
=============================================  ==========================================================

:class:`GraphPhrasing` and its check are :mod:`query.answer.graph_phrasing`.

A definition question ("Co je X?", "What is X?", "Kdo je X?";
:func:`query.question.definition_question`) is answered only by a sentence that defines X
(evidence with such sentences first, claims checked by :func:`query.answer.relevance.claim_relevance`); when
the best one only says what kind of thing X is (a relative clause, a noun of its kind),
``answer_coverage`` is ``partial`` with a warning.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from artifacts.text.words import analyze
from query.answer.graph_evidence import graph_context
from query.answer.rag import MIN_SUPPORT, MIN_SUPPORT_RESTRICTED, Context, text_context
from query.answer.request import AnswerRequest
from query.bundle import OpenedBundle
from query.graph.dispatch import answer_graph
from query.graph.index import graph_index
from query.graph.request import MAX_LIMIT as GRAPH_MAX_LIMIT
from query.question import definition_question
from query.search.request import SearchOptions
from query.search.weighting import ranking_searcher


@dataclass
class Routed:
    """Where a question went: ``engine`` (graph | text | graph+text), the evidence ``context``, and,
    when the route already decided, ``status``/``reason`` (no_answer, ambiguous) and ``candidates``."""

    engine: str
    context: Context
    status: str = "ok"
    reason: str | None = None
    graph_body: dict[str, Any] | None = None
    candidates: list[dict[str, Any]] | None = None
    complete: bool | None = None
    timings: dict[str, float] = field(default_factory=dict)
    resolved_words: tuple[str, ...] = ()


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


COMMON_TITLE_SHARE = 0.5
"""A title whose every word is in at least this share of the bundle's chunks names the site's subject, not
a page: "Frigate" in a question over Frigate's documentation (the word is on 59 % of its chunks) is no
reference to the page "Frigate+".  Half the chunks is where a word's idf bottoms out (the support weights)."""


def _distinctive_title(bundle: OpenedBundle, title: str) -> bool:
    """Whether some word of ``title`` is in fewer than :data:`COMMON_TITLE_SHARE` of the bundle's chunks."""
    searcher = ranking_searcher(bundle)
    total = max(searcher.doc_count_all(), 1)
    words = [w for w in analyze(title) if not w.isdigit()]
    return not words or any(searcher.doc_frequency("body", w) < COMMON_TITLE_SHARE * total for w in words)


def _resolved_paths(bundle: OpenedBundle, entities: dict[str, Any]) -> set[str]:
    """Pages the graph resolved the question to: the pages of its persons and the pages it names by a
    distinctive title (:func:`_distinctive_title`)."""
    paths: set[str] = {str(p["path"]) for p in entities.get("pages") or []
                       if p.get("path") and _distinctive_title(bundle, str(p.get("title") or ""))}
    persons = entities.get("persons") or []
    index = graph_index(bundle) if persons else None
    for p in persons:
        path = p.get("path")
        if path is None and index is not None and p.get("id") in index.persons:
            path = index.persons[p["id"]].path
        if path:
            paths.add(path)
    return paths


def route_question(bundle: OpenedBundle, request: AnswerRequest, options: SearchOptions,
                   min_support: float | None = None) -> Routed:
    """Route ``request.query`` (see the module table) and build its evidence.

    ``min_support``: relevance gate for text evidence (default :data:`query.answer.rag.MIN_SUPPORT`, or
    :data:`query.answer.rag.MIN_SUPPORT_RESTRICTED` when retrieval is restricted to the pages of persons
    the graph resolved).

    :raises RetrievalUnavailableError: the graph or the text index cannot be queried.
    """
    started = time.perf_counter()
    # the whole list: what the answer shows of it is decided by the evidence budget (max_context_tokens)
    body = answer_graph(bundle, {"question": request.query, "published_only": request.published_only,
                                 "limit": GRAPH_MAX_LIMIT}, base_url=options.base_url)
    timings = {"graph": _ms(started)}
    status, reason = body.get("status"), body.get("reason")
    entities = body.get("entities") or {}
    budget = request.max_context_tokens
    definition = definition_question(request.query)
    if status == "ok" and definition is not None and definition.kind == "thing" \
            and body.get("intent") in ("persons_with_tag", "documents_with_tag"):
        # "Čo je téma Syntéza reči?" asks what X is; the graph's list of the students of topic X is no
        # definition: the text (a sentence defining X) answers it, or nothing does
        status, reason = "no_answer", "unsupported_question"
    if status == "ok":
        context = graph_context(bundle, body, max_tokens=budget, base_url=options.base_url)
        if not context.items:
            return Routed("graph", context, "no_answer", "no_matching_sources", graph_body=body,
                          complete=body.get("complete"), timings=timings)
        return Routed("graph", context, graph_body=body, complete=body.get("complete"), timings=timings)
    if status == "ambiguous":
        return Routed("graph", Context(), "ambiguous", reason or "ambiguous_person", graph_body=body,
                      candidates=body.get("candidates") or [], timings=timings)
    if status == "no_answer" and reason != "unsupported_question":
        return Routed("graph", Context(), "no_answer", reason or "no_matching_sources", graph_body=body,
                      complete=body.get("complete"), timings=timings)
    if entities.get("structure_question"):
        # persons or documents selected by front matter or links ("Ktorí študenti majú tag X?"): only
        # the graph answers them, and it did not understand this one; a text sentence would name
        # none of the asked persons or documents, so the question is refused
        return Routed("graph", Context(), "no_answer", "unsupported_question", graph_body=body, timings=timings)
    # unsupported_question: the graph did not answer; text retrieval may, within what it recognised.
    started = time.perf_counter()
    paths = _resolved_paths(bundle, entities)
    engine = "graph+text" if paths else "text"
    if min_support is None:
        min_support = MIN_SUPPORT_RESTRICTED if paths else MIN_SUPPORT
    names = [w for p in entities.get("persons") or [] for w in str(p.get("matched") or "").split()]
    # "Kdo je X?": X is what the pages must be searched for, even when the graph knows X as a person
    search_names = [] if definition is not None else names
    context = text_context(bundle, request.query, max_tokens=budget, options=options, flt=request.filter,
                           published_only=request.published_only, paths=paths or None, min_support=min_support,
                           resolved_words=search_names)
    timings["retrieval"] = _ms(started)
    return Routed(engine, context, graph_body=body, timings=timings, resolved_words=tuple(names))
