"""Answers about documents: tags and topics of persons and pages, documents by tag or author,
authors of a page."""

from __future__ import annotations

import re
from typing import Any, cast

from artifacts.graphschema import fetch_rows
from query.graph.analysis import Analysis
from query.graph.assembly import Answer
from query.graph.index import GraphIndex, Person
from query.graph.names import (
    NameMatch,
)
from query.graph.values import Combination


def _person_documents_cypher(person: Person) -> str:
    """Documents of a person: their page (``DESCRIBES``) or the documents they wrote (``AUTHORED_BY``)."""
    if person.kind == "page":
        return "MATCH (p:Person {id: $id})<-[:DESCRIBES]-(d:Document) "
    return "MATCH (p:Person {id: $id})<-[:AUTHORED_BY]-(d:Document) "


def answer_common(out: Answer, persons: list[Person], what: str, combo: Combination | None = None) -> dict[str, Any]:
    """Tags (topics) of one person, or those every person has; with ``combo`` (persons joined by
    "or" / "but not"), those its operators select ("Aké tagy má X, ale nie Y?")."""
    conn = out.bundle.graph_connection()
    per_person = []
    for person in persons:
        where = "WHERE d.published OR NOT $published_only "
        if what == "tags":
            cypher = (_person_documents_cypher(person) + where
                      + "MATCH (d)-[:TAGGED]->(t:Tag) RETURN DISTINCT t.name, d.path")
        else:
            cypher = (_person_documents_cypher(person) + where
                      + "MATCH (d)-[:HAS_TOPIC]->(t:Topic) RETURN DISTINCT t.id, d.path, t.name")
        rows = fetch_rows(conn, cypher, {"id": person.id, "published_only": out.request.published_only})
        values: dict[str, list[Any]] = {}
        for row in rows:
            values.setdefault(row[0], row)
        per_person.append(values)
        if person.path:
            out.source(person.path)
        for key in sorted(values):
            out.fact(person.name, "tagged" if what == "tags" else "has_topic", key, values[key][1],
                     subject_id=person.id)
    if combo is not None:
        shared = sorted(combo.apply([set(v) for v in per_person]))
    else:
        shared = sorted(set.intersection(*(set(v) for v in per_person))) if per_person else []
    answer: dict[str, Any] = {"persons": [p.name for p in persons], "person_ids": [p.id for p in persons], what: shared}
    if len(persons) == 1:
        answer["person"] = persons[0].name
        answer["path"] = persons[0].path
    if what == "topics":
        answer["topic_names"] = [per_person[0][k][2] for k in shared]
    label = "Tag" if what == "tags" else "Topic"
    for key in shared:
        out.paths.append({
            "nodes": [{"label": "Person", "id": p.id} for p in persons[:1]] + [{"label": label, "id": key}]
            + [{"label": "Person", "id": p.id} for p in persons[1:]],
            "relationships": ["DESCRIBES" if persons[0].kind == "page" else "AUTHORED_BY",
                              "TAGGED" if what == "tags" else "HAS_TOPIC"] * len(persons),
        })
    return out.body("ok", complete=True, answer=answer, aggregation={"count": len(shared), "complete": True})


def _dated_fact(out: Answer, path: str) -> None:
    """The ``dated`` fact of a document: its front matter date (the year a question restricted it to)."""
    rows = fetch_rows(out.bundle.graph_connection(), "MATCH (d:Document {path: $path}) RETURN d.date, d.year",
                      {"path": path})
    if not rows:
        return
    date, year = rows[0]
    day = re.match(r"\d{4}-\d{1,2}-\d{1,2}", str(date or "").strip())
    if day or year:
        out.fact(path, "dated", day.group(0) if day else str(year), path)


def answer_with_tag(out: Answer, index: GraphIndex, a: Analysis) -> dict[str, Any]:
    """Persons (or documents) whose documents carry the tag or belong to the topic named."""
    conn = out.bundle.graph_connection()
    if a.tags:
        value, label = a.tags[0], "tag"
        doc_match = "MATCH (d:Document)-[:TAGGED]->(:Tag {name: $value}) "
    else:
        value, label = a.topics[0].ref, "topic"
        doc_match = "MATCH (d:Document)-[:HAS_TOPIC]->(:Topic {id: $value}) "
    params: dict[str, Any] = {"value": value, "published_only": out.request.published_only,
                              "n": out.request.limit + 1}
    doc_match += "WHERE (d.published OR NOT $published_only) "
    if a.intent == "documents_with_tag":
        if a.work_years:  # "Kolik článků se štítkem X vyšlo v roce 2021?": the year of the document's date
            doc_match += "AND d.year IN $years "
            params["years"] = a.work_years
        count = int(fetch_rows(conn, doc_match + "RETURN count(DISTINCT d.path)", params)[0][0])
        rows = out.cut(fetch_rows(conn, doc_match + "RETURN DISTINCT d.path ORDER BY d.path LIMIT $n", params),
                       "result_limit")
        for (path,) in rows:
            out.fact(path, "tagged" if label == "tag" else "has_topic", value, path)
            if a.work_years:
                _dated_fact(out, path)
        answer = {label: value, "count": count, "documents": [r[0] for r in rows], "years": a.work_years or None}
        return out.body("ok", complete=not out.truncation, answer=answer,
                        aggregation={"count": count, "complete": True})
    rel = "DESCRIBES" if index.person_kind == "page" else "AUTHORED_BY"
    edge = "(d)-[:DESCRIBES]->(p:Person)" if rel == "DESCRIBES" else "(d)-[:AUTHORED_BY]->(p:Person)"
    match = doc_match + f"MATCH {edge} "
    count = int(fetch_rows(conn, match + "RETURN count(DISTINCT p.id)", params)[0][0])
    rows = out.cut(fetch_rows(conn, match + "RETURN DISTINCT p.id, p.name, d.path ORDER BY p.name, p.id, d.path",
                              params), "entity_limit")
    persons: dict[str, str] = {}
    for pid, name, path in rows:
        persons.setdefault(pid, name)
        out.fact(name, "tagged" if label == "tag" else "has_topic", value, path, subject_id=pid)
    chosen = list(persons.items())[: out.request.limit]
    if len(persons) > out.request.limit and "entity_limit" not in out.truncation:
        out.truncation.append("entity_limit")
    answer = {label: value, "count": count, "persons": [n for _, n in chosen], "person_ids": [i for i, _ in chosen]}
    return out.body("ok", complete=not out.truncation, answer=answer, aggregation={"count": count, "complete": True})


def answer_documents_of_author(out: Answer, index: GraphIndex, persons: list[Person],
                         authors: list[NameMatch], tags: list[str] | None = None,
                         years: list[int] | None = None, combo: Combination | None = None) -> dict[str, Any]:
    """Documents of persons (``AUTHORED_BY``) or document authors; with ``tags``, only those tagged
    with one of them (with ``combo``, those its operators select: every tag, any, the first but not
    the second), with ``years`` only those dated in one of them (each document's matching tags and
    year are facts too)."""
    conn = out.bundle.graph_connection()
    items: list[dict[str, Any]] = []
    targets: list[tuple[str, str, str]] = [(p.name, p.id, "MATCH (d:Document)-[:AUTHORED_BY]->(:Person {id: $id}) ")
                                           for p in persons]
    for match in authors:
        if len(match.entries) > 1:
            return out.body("ambiguous", "ambiguous_person", candidates=[{"person": e.name} for e in match.entries],
                            message="Several document authors match the name.")
        name = match.entries[0].name
        targets.append((name, name, "MATCH (d:Document)-[:HAS_DOCUMENT_AUTHOR]->(:DocumentAuthor {name: $id}) "))
    fact_tags = [combo.values[k] for k in combo.positive()] if combo is not None else tags
    for name, ident, match_doc in targets:
        if tags:
            match_doc += "MATCH (d)-[:TAGGED]->(t:Tag) WHERE t.name IN $tags AND (d.published OR NOT $published_only) "
        where = match_doc + ("" if tags else "WHERE (d.published OR NOT $published_only) ")
        if years:
            where += "AND d.year IN $years "
        params = {"id": ident, "published_only": out.request.published_only, "n": out.request.limit + 1,
                  **({"tags": tags} if tags else {}), **({"years": years} if years else {})}
        if combo is not None:  # the documents of every tag, then the set operators over them
            pairs = fetch_rows(conn, where + "RETURN DISTINCT d.path, d.title, t.name", params)
            chosen = combo.apply([{p for p, _, t in pairs if t == tag} for tag in combo.values])
            found = sorted({(p, title) for p, title, _ in pairs if p in chosen})
            count = len(found)
            rows = out.cut([list(r) for r in found], "result_limit")
        else:
            count = int(fetch_rows(conn, where + "RETURN count(DISTINCT d.path)", params)[0][0])
            rows = out.cut(fetch_rows(conn, where + "RETURN DISTINCT d.path, d.title ORDER BY d.path LIMIT $n",
                                      params), "result_limit")
        for path, _title in rows:
            out.fact(name, "authored", path, path, subject_id=ident)
            for tag in (r[0] for r in fetch_rows(conn, "MATCH (d:Document {path: $path})-[:TAGGED]->(t:Tag) "
                                                       "WHERE t.name IN $tags RETURN t.name ORDER BY t.name",
                                                 {"path": path, "tags": fact_tags})) if fact_tags else ():
                out.fact(path, "tagged", tag, path)
            if years:
                _dated_fact(out, path)
        items.append({"author": name, "person": name, "author_id": ident, "count": count, "tags": tags or None,
                      "operators": list(combo.ops) if combo is not None else None,
                      "years": years or None,
                      "documents": [r[0] for r in rows], "titles": [r[1] for r in rows]})
    total = sum(item["count"] for item in items)
    answer: Any = items[0] if len(items) == 1 else {"authors": items}
    if total == 0:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        message="The graph has no document written by that person.")
    return out.body("ok", complete=not out.truncation, answer=answer, aggregation={"count": total, "complete": True})


def answer_authors_of_document(out: Answer, a: Analysis) -> dict[str, Any]:
    page = a.pages[0]
    conn = out.bundle.graph_connection()
    rows = fetch_rows(conn, "MATCH (d:Document {path: $path})-[:AUTHORED_BY]->(p:Person) RETURN p.id, p.name "
                            "ORDER BY p.name", {"path": page.path})
    rows += fetch_rows(conn, "MATCH (d:Document {path: $path})-[:HAS_DOCUMENT_AUTHOR]->(a:DocumentAuthor) "
                             "RETURN a.name, a.name ORDER BY a.name", {"path": page.path})
    for ident, name in rows:
        out.fact(cast(str, page.path), "authored_by", name, page.path, object_id=ident)  # a page has a path
    out.source(page.path)
    answer = {"document": page.path, "title": page.label, "authors": [r[1] for r in rows],
              "author_ids": [r[0] for r in rows]}
    if not rows:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        message="The page names no author.")
    return out.body("ok", complete=True, answer=answer, aggregation={"count": len(rows), "complete": True})


def answer_tags_of_document(out: Answer, a: Analysis) -> dict[str, Any]:
    """Tags (or topics) of the page named by its title."""
    page = a.pages[0]
    tags = a.intent == "tags_of_document"
    cypher = ("MATCH (d:Document {path: $path})-[:TAGGED]->(t:Tag) RETURN DISTINCT t.name ORDER BY t.name" if tags
              else "MATCH (d:Document {path: $path})-[:HAS_TOPIC]->(t:Topic) RETURN DISTINCT t.id ORDER BY t.id")
    values = [r[0] for r in fetch_rows(out.bundle.graph_connection(), cypher, {"path": page.path})]
    out.source(page.path)
    for value in values:
        out.fact(cast(str, page.path), "tagged" if tags else "has_topic", value, page.path)  # a page has a path
    answer = {"document": page.path, "title": page.label, "tags" if tags else "topics": values}
    if not values:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        message="The page has no tags." if tags else "The page has no topics.")
    return out.body("ok", complete=True, answer=answer)
