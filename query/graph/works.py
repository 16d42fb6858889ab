"""Answers about persons and their works: works, titles, years, supervisors, start years."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from artifacts.analysis import fold
from artifacts.graphschema import fetch_rows
from query.graph.analysis import Analysis
from query.graph.assembly import Answer
from query.graph.index import GraphIndex, Person


def _works(out: Answer, person: Person) -> list[dict[str, Any]]:
    rows = fetch_rows(
        out.bundle.graph_connection(),
        "MATCH (p:Person {id: $id})-[:HAS_WORK]->(w:Work) "
        "RETURN w.id, w.type, w.type_label, w.year, w.title, w.path, w.section_id, w.chunk_ids "
        "ORDER BY w.year, w.type, w.id LIMIT $n",
        {"id": person.id, "n": out.request.limit + 1},
    )
    rows = out.cut(rows, "fact_limit")
    return [
        {"id": r[0], "type": r[1], "type_label": r[2], "year": r[3], "title": r[4], "path": r[5],
         "section_id": r[6], "chunk_ids": json.loads(r[7] or "[]")}
        for r in rows
    ]


def person_candidate(out: Answer, index: GraphIndex, person: Person) -> dict[str, Any]:
    works = _works(out, person) if index.has_works else []
    return {
        "person": person.name, "id": person.id, "path": person.path, "start_year": person.start_year,
        "source_id": out.source(person.path),
        "works": [{"type": w["type"], "year": w["year"], "title": w["title"]} for w in works],
    }


def _work_facts(out: Answer, person: Person, works: list[dict[str, Any]]) -> None:
    for w in works:
        obj = {"type": w["type"], "type_label": w["type_label"], "year": w["year"], "title": w["title"],
               "title_missing": w["title"] is None, "work_id": w["id"]}
        out.fact(person.name, "has_work", obj, w["path"], w["chunk_ids"], subject_id=person.id)
        out.paths.append({
            "nodes": [{"label": "Document", "id": person.path}, {"label": "Person", "id": person.id},
                      {"label": "Work", "id": w["id"]}]
            + ([{"label": "Section", "id": w["section_id"]}] if w["section_id"] else []),
            "relationships": ["DESCRIBES", "HAS_WORK"] + (["DESCRIBED_IN"] if w["section_id"] else []),
        })


def answer_person_works(out: Answer, index: GraphIndex, a: Analysis, person: Person) -> dict[str, Any]:
    out.source(person.path)
    works = _works(out, person)
    if a.work_types:
        works = [w for w in works if w["type"] in a.work_types]
    if a.work_years:
        works = [w for w in works if w["year"] in a.work_years]
    item: dict[str, Any] = {"person": person.name, "person_id": person.id, "path": person.path}
    if a.intent == "works_of_person":
        item["works"] = [{"type": w["type"], "type_label": w["type_label"], "year": w["year"],
                          "title": w["title"]} for w in works]
        item["years"] = sorted({w["year"] for w in works})
        item["titles"] = [w["title"] for w in works if w["title"] is not None]
        found = bool(works)
    else:
        item["work_type"] = a.work_types[0] if len(a.work_types) == 1 else (a.work_types or None)
        item["years"] = sorted({w["year"] for w in works})
        found = bool(works)
        if a.intent == "title_of_work":
            if not a.work_types:
                item["works"] = [{"type": w["type"], "year": w["year"], "title": w["title"]} for w in works]
            item["titles"] = [w["title"] for w in works if w["title"] is not None]
            item["title_missing"] = any(w["title"] is None for w in works)
            found = bool(item["titles"])
    _work_facts(out, person, works)
    complete = not out.truncation
    if not found:
        message = ("The work asked about has no title on the person's page." if works
                   else "The person has no work of the kind asked about in the graph.")
        return out.body("no_answer", "no_matching_sources", complete=complete, answer=item, message=message)
    return out.body("ok", complete=complete, answer=item)


def as_written(out: Answer, path: str | None, name: str) -> str | None:
    """How the page at ``path`` spells the document author ``name``, when it spells it otherwise.

    The build merges spellings of one name whose folded form is the same ("Eva Kolarova" and "Eva
    Kolárová", :func:`artifacts.graphschema.name_key`) into one ``DocumentAuthor`` named as most pages
    spell it; a fact about a page that spells it differently says so (``as_written``)."""
    doc = out.bundle.docs.get(path) if path else None
    for written in doc.authors if doc is not None else ():
        written = unicodedata.normalize("NFC", written.strip())
        if written != name and fold(written) == fold(name):
            return written
    return None


def _supervised_fact(out: Answer, subject: str, name: str, path: str | None, subject_id: str) -> str:
    """Add the ``supervised_by`` fact of one page; returns the name as the page writes it."""
    written = as_written(out, path, name)
    extra: dict[str, Any] = {"as_written": written} if written else {}
    out.fact(subject, "supervised_by", name, path, subject_id=subject_id, **extra)
    return written or name


def answer_supervisor(out: Answer, index: GraphIndex, a: Analysis, person: Person) -> dict[str, Any]:
    """Supervisors of a person's works: the document authors of the person's page."""
    conn = out.bundle.graph_connection()
    if (a.work_types or a.work_years) and index.has_works:
        works = [w for w in _works(out, person) if (not a.work_types or w["type"] in a.work_types)
                 and (not a.work_years or w["year"] in a.work_years)]
        if not works:
            return out.body("no_answer", "no_matching_sources", complete=True,
                            message="The person has no work of the kind asked about in the graph.")
    rows = fetch_rows(conn, "MATCH (d:Document {path: $path})-[:HAS_DOCUMENT_AUTHOR]->(a:DocumentAuthor) "
                            "RETURN a.name ORDER BY a.name", {"path": person.path})
    names = [r[0] for r in rows]
    for name in names:
        _supervised_fact(out, person.name, name, person.path, person.id)
    answer = {"person": person.name, "person_id": person.id, "path": person.path,
              "work_type": a.work_types[0] if len(a.work_types) == 1 else (a.work_types or None),
              "supervisors": names}
    if not names:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        message="The person's page names no supervisor.")
    return out.body("ok", complete=True, answer=answer, aggregation={"count": len(names), "complete": True})


def answer_supervised_by(out: Answer, index: GraphIndex, a: Analysis) -> dict[str, Any]:
    """Persons (and their works) whose page names the document author as supervisor."""
    match = a.document_authors[0]
    if len(a.document_authors) > 1 or len(match.entries) > 1:
        return out.unsupported("The question names several supervisors; ask about one at a time.")
    name = match.entries[0].name
    conn = out.bundle.graph_connection()
    cypher = ("MATCH (:DocumentAuthor {name: $name})<-[:HAS_DOCUMENT_AUTHOR]-(d:Document)-[:DESCRIBES]->(p:Person) "
              "WHERE p.published OR NOT $published_only "
              "OPTIONAL MATCH (p)-[:HAS_WORK]->(w:Work) "
              "RETURN p.id, p.name, p.path, w.id, w.type, w.year, w.title, w.chunk_ids ORDER BY p.name, p.id, w.year")
    rows = fetch_rows(conn, cypher, {"name": name, "published_only": out.request.published_only})
    if a.work_types:
        rows = [r for r in rows if r[4] in a.work_types]
    if a.work_years:
        rows = [r for r in rows if r[5] in a.work_years]
    started = a.years if a.has("start") else []  # "Ktorých študentov, čo začali v roku 2022, viedol X?"
    if started:
        rows = [r for r in rows if index.persons[r[0]].start_year in started]
    persons: dict[str, tuple[str, str]] = {}
    works = []
    spellings: dict[str, int] = {}
    for pid, pname, path, wid, wtype, year, title, chunk_ids in rows:
        if pid not in persons:  # one supervised_by fact per person, however many works
            written = _supervised_fact(out, pname, name, path, pid)
            spellings[written] = spellings.get(written, 0) + 1
            if started:
                out.fact(pname, "started_in", index.persons[pid].start_year, path, subject_id=pid)
        persons.setdefault(pid, (pname, path))
        if wid is not None:
            works.append({"person": pname, "type": wtype, "year": year, "title": title})
            out.fact(pname, "has_work", {"type": wtype, "year": year, "title": title, "work_id": wid,
                                         "supervisor": name}, path, json.loads(chunk_ids or "[]"), subject_id=pid)
    chosen = list(persons.items())
    if len(chosen) > out.request.limit:
        out.truncation.append("entity_limit")
        chosen = chosen[: out.request.limit]
    answer = {"supervisor": name, "work_types": a.work_types or None, "year": a.work_years[0] if a.work_years else None,
              "start_year": started[0] if started else None,
              # the spellings merged into the name, with their numbers of pages (only when several)
              "spellings": spellings if len(spellings) > 1 else None,
              "count": len(persons), "persons": [n for _, (n, _) in chosen], "person_ids": [i for i, _ in chosen],
              "works": works}
    if not persons:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        message="No page names that supervisor for the works asked about.")
    return out.body("ok", complete=not out.truncation, answer=answer,
                    aggregation={"count": len(persons), "complete": True})


def answer_start_year(out: Answer, person: Person) -> dict[str, Any]:
    answer = {"person": person.name, "person_id": person.id, "path": person.path, "start_year": person.start_year}
    if person.start_year is None:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        message="The person's page names no start year.")
    out.fact(person.name, "started_in", person.start_year, person.path, subject_id=person.id)
    return out.body("ok", complete=True, answer=answer)


def answer_persons_with_work(out: Answer, index: GraphIndex, a: Analysis) -> dict[str, Any]:
    conn = out.bundle.graph_connection()
    types = a.work_types or index.work_types
    where = "w.type IN $types AND (p.published OR NOT $published_only)"
    params: dict[str, Any] = {"types": types, "published_only": out.request.published_only}
    if a.years:
        where += " AND w.year = $year"
        params["year"] = a.years[0]
    match = f"MATCH (p:Person)-[:HAS_WORK]->(w:Work) WHERE {where}"
    count = int(fetch_rows(conn, f"{match} RETURN count(DISTINCT p.id)", params)[0][0])
    rows = out.cut(fetch_rows(
        conn, f"{match} RETURN DISTINCT p.id, p.name, p.path ORDER BY p.name, p.id LIMIT $n",
        {**params, "n": out.request.limit + 1},
    ), "entity_limit")
    ids = [r[0] for r in rows]
    works = fetch_rows(
        conn,
        f"{match} AND p.id IN $ids RETURN p.id, p.name, w.id, w.type, w.year, w.title, w.path, w.chunk_ids "
        "ORDER BY p.name, p.id, w.year, w.type",
        {**params, "ids": ids},
    ) if ids else []
    for pid, name, wid, wtype, year, title, path, chunk_ids in works:
        out.fact(name, "has_work", {"type": wtype, "year": year, "title": title, "title_missing": title is None,
                                    "work_id": wid}, path, json.loads(chunk_ids or "[]"), subject_id=pid)
    answer = {"year": a.years[0] if a.years else None, "work_types": sorted(types), "count": count,
              "persons": [r[1] for r in rows], "person_ids": ids}
    return out.body("ok", complete=not out.truncation, answer=answer, aggregation={"count": count, "complete": True})


def answer_persons_started(out: Answer, a: Analysis) -> dict[str, Any]:
    conn = out.bundle.graph_connection()
    where = "p.start_year = $year AND (p.published OR NOT $published_only)"
    params: dict[str, Any] = {"year": a.years[0], "published_only": out.request.published_only}
    count = int(fetch_rows(conn, f"MATCH (p:Person) WHERE {where} RETURN count(DISTINCT p.id)", params)[0][0])
    rows = out.cut(fetch_rows(conn, f"MATCH (p:Person) WHERE {where} RETURN p.id, p.name, p.path "
                                    "ORDER BY p.name, p.id LIMIT $n", {**params, "n": out.request.limit + 1}),
                   "entity_limit")
    for pid, name, path in rows:
        out.fact(name, "started_in", a.years[0], path, subject_id=pid)
    answer = {"year": a.years[0], "count": count, "persons": [r[1] for r in rows], "person_ids": [r[0] for r in rows]}
    return out.body("ok", complete=not out.truncation, answer=answer, aggregation={"count": count, "complete": True})
