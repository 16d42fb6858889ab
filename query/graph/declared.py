"""Answers of the intents a mapping declares as data (:class:`artifacts.graphmap.Intent`): the intent's
Cypher template run with its slots, each row one fact, phrased with the intent's own lines.

Nothing here knows an intent by name: a new intent ("who owns X?" over an ``owner:`` front matter
field) is a few lines of the mapping file (``relations``, ``intents`` and the question words in
``questions.concepts``), not code.
"""

from __future__ import annotations

import re
from typing import Any

from artifacts.graphmap import Intent
from artifacts.graphschema import fetch_rows
from query.graph.analysis import Analysis
from query.graph.assembly import Answer
from query.graph.index import GraphIndex


def _parameters(intent: Intent, a: Analysis, published_only: bool) -> dict[str, Any]:
    """The template's parameters: each slot's page path or value, and ``published_only`` (only those the
    template uses: the database refuses a parameter it does not know)."""
    values: dict[str, Any] = {"published_only": published_only}
    for name, kind in intent.slots.items():
        values[name] = a.pages[0].path if kind == "page" else a.field_values[kind.split(":", 1)[1]][0]
    return {k: v for k, v in values.items() if re.search(rf"\${re.escape(k)}\b", intent.cypher)}


def answer_declared(out: Answer, index: GraphIndex, a: Analysis) -> dict[str, Any]:
    """Answer ``a.intent``, an intent of the mapping: its template's rows ``(document path, subject,
    object)`` become facts (predicate: the intent's ``predicate``); ``answer.values`` lists the distinct
    objects (cut at ``limit``: ``result_limit``), ``answer.count`` and ``aggregation.count`` count them
    exactly, ``answer.lines`` phrases the facts in the question's language (the intent's ``phrasing``;
    a language it lacks: its first one).  No row: ``unsupported_question`` (the front matter has no such
    value, the text may state it)."""
    intent = index.mapping.intents[a.intent]
    params = _parameters(intent, a, out.request.published_only)
    rows = list(dict.fromkeys(tuple(r[:3]) for r in fetch_rows(out.bundle.graph_connection(), intent.cypher, params)))
    values = list(dict.fromkeys(r[2] for r in rows))
    count = len(values)
    shown = values[: out.request.limit]
    if count > len(shown):
        out.truncation.append("result_limit")
    for page in a.pages:
        out.source(page.path)
    kept = [r for r in rows if r[2] in set(shown)]
    for path, subject, obj in kept:
        out.fact(str(subject), intent.predicate, obj, path)
    slots = {k: v for k, v in params.items() if k != "published_only"}
    answer: dict[str, Any] = {"intent": a.intent, "slots": slots, "values": shown, "count": count,
                              "lines": _lines(out, intent, a.language, kept)}
    known = index.by_published[out.request.published_only].pages
    if shown and all(isinstance(v, str) and v in known for v in shown):
        answer["documents"] = shown  # a list of pages: the answer's list (query.graph.assembly.answer_list)
    if not rows:
        # the front matter states no such value for what the question names: the graph cannot hold the
        # answer, the pages' text may ("Owner: ..." in the body), so text retrieval gets the question
        return out.unsupported("The front matter states no value of that kind for what the question names; "
                               "try /search.")
    return out.body("ok", complete=not out.truncation, answer=answer, aggregation={"count": count, "complete": True})


def _lines(out: Answer, intent: Intent, language: str | None, rows: list[tuple[Any, ...]]) -> list[str]:
    """One line per subject, its objects joined by ", ", a page shown by its title."""
    if not intent.phrasing:
        return []
    template = intent.phrasing.get(language or "") or next(iter(intent.phrasing.values()))
    grouped: dict[str, list[str]] = {}
    for _, subject, obj in rows:
        grouped.setdefault(_shown(out, subject), []).append(_shown(out, obj))
    return [template.format(subject=subject, object=", ".join(dict.fromkeys(objs)))
            for subject, objs in grouped.items()]


def _shown(out: Answer, value: Any) -> str:
    doc = out.bundle.docs.get(value) if isinstance(value, str) else None
    return doc.title if doc is not None and doc.title else str(value)
