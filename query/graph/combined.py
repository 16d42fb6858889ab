"""Several values of one kind joined by and / or / but not, answered as set operations
(:mod:`query.graph.values`) or refused."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from artifacts.graphschema import fetch_rows
from query.graph.analysis import Analysis
from query.graph.assembly import Answer
from query.graph.index import GraphIndex
from query.graph.intents import ONE_PERSON
from query.graph.values import Combination
from query.graph.works import as_written

# -- several values of one kind --------------------------------------------------------------------


_ALL_OPS = frozenset({"and", "or", "but_not"})
_COMBINES: dict[str, dict[str, frozenset[str]]] = {
    "persons_with_tag": {"tag": _ALL_OPS},
    "documents_with_tag": {"tag": _ALL_OPS},
    "documents_of_author": {"tag": _ALL_OPS, "person": frozenset({"and"}), "author": frozenset({"and"})},
    "persons_with_work": {"year": _ALL_OPS, "work_type": _ALL_OPS, "category": _ALL_OPS},
    # a person has one start year: "začali v roku 2016 a 2017" has no intersection to mean
    "persons_started": {"year": frozenset({"or"}), "category": _ALL_OPS},
    "supervised_by": {"author": _ALL_OPS, "year": _ALL_OPS, "work_type": _ALL_OPS},
    "common_tags": {"person": _ALL_OPS},
    "common_topics": {"person": _ALL_OPS},
    **{intent: {"person": frozenset({"and"}), "work_type": frozenset({"and"})} for intent in ONE_PERSON},
}
"""Per intent, the kinds of value it takes several of, and the operators it answers exactly
(:mod:`query.graph.values`): sets of persons or documents are intersected, united or subtracted;
a fact question about two persons (``ONE_PERSON``) is answered per person."""


def refuse_values(out: Answer, a: Analysis) -> dict[str, Any] | None:
    """The ``unsupported_question`` body of a question whose values the answer would not all use
    (never answered by the first value alone), or ``None``."""
    if a.negated:
        return out.unsupported("The question negates a value; the graph answers what pages have, not what "
                               "they lack.")
    if len(a.combos) > 1:
        return out.unsupported("The question joins several values of more than one kind; ask about one "
                               "kind at a time.")
    for kind, combo in a.combos.items():
        allowed = _COMBINES.get(a.intent, {}).get(kind)
        if allowed is None:
            return out.unsupported(f"The question names several values ({kind}) that this kind of answer "
                                   "cannot combine.")
        if not combo.clear or not set(combo.ops) <= allowed:
            return out.unsupported(f"How the values ({kind}) are joined (and / or / but not) is unclear or "
                                   "not answerable for this question.")
    return None


@dataclass
class _Selected:
    """Persons (or documents) one value selects: id -> (name, path), and the facts that show it."""

    items: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    facts: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = field(default_factory=dict)

    def add(self, ident: str, name: str, path: str | None, *fact: Any, **extra: Any) -> None:
        self.items.setdefault(ident, (name, path))
        if fact:
            self.facts.setdefault(ident, []).append((fact, extra))


def _person_edge(index: GraphIndex) -> str:
    return "(d)-[:DESCRIBES]->(p:Person)" if index.person_kind == "page" else "(d)-[:AUTHORED_BY]->(p:Person)"


def _select_tag(out: Answer, index: GraphIndex, tag: str, documents: bool) -> _Selected:
    conn = out.bundle.graph_connection()
    params = {"value": tag, "published_only": out.request.published_only}
    match = ("MATCH (d:Document)-[:TAGGED]->(:Tag {name: $value}) WHERE (d.published OR NOT $published_only) ")
    sel = _Selected()
    if documents:
        for (path,) in fetch_rows(conn, match + "RETURN DISTINCT d.path", params):
            sel.add(path, path, path, path, "tagged", tag, path)
        return sel
    for pid, name, path in fetch_rows(conn, match + f"MATCH {_person_edge(index)} RETURN DISTINCT p.id, p.name, "
                                                    "d.path", params):
        sel.add(pid, name, path, name, "tagged", tag, path, subject_id=pid)
    return sel


def _select_works(out: Answer, types: list[str], year: int | None, supervisor: str | None = None) -> _Selected:
    conn = out.bundle.graph_connection()
    where = "w.type IN $types AND (p.published OR NOT $published_only)" + (" AND w.year = $year" if year else "")
    params: dict[str, Any] = {"types": types, "published_only": out.request.published_only,
                              **({"year": year} if year else {})}
    match = "MATCH (p:Person)-[:HAS_WORK]->(w:Work) "
    if supervisor is not None:
        match = ("MATCH (:DocumentAuthor {name: $name})<-[:HAS_DOCUMENT_AUTHOR]-(:Document)-[:DESCRIBES]->(p:Person)"
                 "-[:HAS_WORK]->(w:Work) ")
        params["name"] = supervisor
    sel = _Selected()
    for pid, name, wid, wtype, wyear, title, path, chunk_ids in fetch_rows(
            conn, match + f"WHERE {where} RETURN DISTINCT p.id, p.name, w.id, w.type, w.year, w.title, w.path, "
                          "w.chunk_ids ORDER BY w.year, w.type", params):
        obj = {"type": wtype, "year": wyear, "title": title, "title_missing": title is None, "work_id": wid}
        if supervisor is not None:
            obj["supervisor"] = supervisor
        sel.add(pid, name, path, name, "has_work", obj, path, json.loads(chunk_ids or "[]"), subject_id=pid)
    return sel


def _select_started(out: Answer, year: int) -> _Selected:
    sel = _Selected()
    for pid, name, path in fetch_rows(out.bundle.graph_connection(),
                                      "MATCH (p:Person) WHERE p.start_year = $year AND (p.published OR NOT "
                                      "$published_only) RETURN p.id, p.name, p.path",
                                      {"year": year, "published_only": out.request.published_only}):
        sel.add(pid, name, path, name, "started_in", year, path, subject_id=pid)
    return sel


def _select_supervised(out: Answer, index: GraphIndex, a: Analysis, name: str) -> _Selected:
    """Persons whose page names ``name`` as supervisor (restricted by the question's work types,
    work years and start year, as :func:`answer_supervised_by`)."""
    if a.work_types or a.work_years:
        works = _select_works(out, a.work_types or index.work_types, a.work_years[0] if a.work_years else None, name)
    rows = fetch_rows(out.bundle.graph_connection(),
                      "MATCH (:DocumentAuthor {name: $name})<-[:HAS_DOCUMENT_AUTHOR]-(d:Document)-[:DESCRIBES]->"
                      "(p:Person) WHERE p.published OR NOT $published_only RETURN DISTINCT p.id, p.name, p.path",
                      {"name": name, "published_only": out.request.published_only})
    started = a.years if a.has("start") else []
    sel = _Selected()
    for pid, pname, path in rows:
        if (a.work_types or a.work_years) and pid not in works.items:
            continue
        if started and index.persons[pid].start_year not in started:
            continue
        written = as_written(out, path, name)
        sel.add(pid, pname, path, pname, "supervised_by", name, path, subject_id=pid,
                **({"as_written": written} if written else {}))
        for fact, extra in (works.facts.get(pid, []) if (a.work_types or a.work_years) else []):
            sel.facts[pid].append((fact, extra))
    return sel


def answer_combined(out: Answer, index: GraphIndex, a: Analysis) -> dict[str, Any] | None:
    """Answer a question with several values of one kind (``a.combos``), or ``None`` when the intent's
    own function does (persons answered one by one, common tags, documents per author)."""
    ((kind, combo),) = a.combos.items()
    values = list(combo.values)
    documents = a.intent in ("documents_with_tag", "documents_of_author")
    if a.intent in ("persons_with_tag", "documents_with_tag") and kind == "tag":
        if a.topics or (documents and a.work_years):
            return out.unsupported("Several tags together with a topic or a year are not combined.")
        selected = [_select_tag(out, index, v, documents) for v in values]
    elif a.intent in ("persons_with_work", "persons_started"):
        types = a.work_types or index.work_types
        if kind == "year":
            selected = [_select_works(out, types, v) if a.intent == "persons_with_work" else _select_started(out, v)
                        for v in values]
        elif kind == "work_type":
            if len(a.years) > 1:
                return out.unsupported("Several work types and several years: ask about one at a time.")
            selected = [_select_works(out, [v], a.years[0] if a.years else None) for v in values]
        else:  # category values: a work of a type in a year, or a start year
            selected = [_select_started(out, y) if t == "start" else _select_works(out, [t], y) for t, y in values]
    elif a.intent == "supervised_by":
        if kind == "author":
            if any(len(refs) > 1 for refs in values):
                return out.unsupported("A supervisor's name fits several document authors.")
            selected = [_select_supervised(out, index, a, refs[0]) for refs in values]
        else:
            if len(a.document_authors) != 1 or len(a.document_authors[0].entries) != 1:
                return out.unsupported("The question names several supervisors; ask about one at a time.")
            name = a.document_authors[0].entries[0].name
            if kind == "year":
                selected = [_select_works(out, a.work_types or index.work_types, v, name) for v in values]
            else:
                selected = [_select_works(out, [v], a.work_years[0] if a.work_years else None, name) for v in values]
    else:
        return None  # answered per person / by the intent's own function
    return _combined_body(out, a, combo, selected, documents)


def _combined_body(out: Answer, a: Analysis, combo: Combination, selected: list[_Selected],
                   documents: bool) -> dict[str, Any]:
    """The body of a set answer: persons (or documents) of ``combo`` over ``selected``, their facts,
    the exact count; the list is cut at ``limit`` (``entity_limit``/``result_limit``)."""
    chosen_ids = combo.apply([set(s.items) for s in selected])
    names: dict[str, tuple[str, str | None]] = {}
    for s in selected:
        for ident in chosen_ids & s.items.keys():
            names.setdefault(ident, s.items[ident])
    order = sorted(chosen_ids, key=lambda i: (names[i][0], i))
    count = len(order)
    shown = order[: out.request.limit]
    if len(order) > out.request.limit:
        out.truncation.append("result_limit" if documents else "entity_limit")
    for ident in shown:
        for k in combo.positive():
            for fact, extra in selected[k].facts.get(ident, []):
                out.fact(*fact, **extra)
    shown_values = [v if not isinstance(v, tuple) or combo.kind != "author" else v[0] for v in combo.values]
    answer: dict[str, Any] = {"kind": combo.kind, "values": shown_values, "operators": list(combo.ops),
                              "count": count}
    if combo.kind == "tag":
        answer["tags"] = shown_values
    if documents:
        answer["documents"] = shown
    else:
        answer["persons"] = [names[i][0] for i in shown]
        answer["person_ids"] = shown
    if count == 0:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        aggregation={"count": 0, "complete": True},
                        message="No person or document has that combination of values.")
    return out.body("ok", complete=not out.truncation, answer=answer, aggregation={"count": count, "complete": True})
