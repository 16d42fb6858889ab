"""Graph retrieval: recognise entities in a question, run a parameterised Cypher template, answer
with facts, paths, documents and exact aggregations in the response contract.

Entry point: :func:`answer_graph` (``POST /graph`` and ``gitrag graph``).  Templates:

=========================  ===================================================================
``intent``                 question shape (Slovak) and answer
=========================  ===================================================================
``works_of_person``        "Aké práce má Ján Holp?": every work (type, year, title or null)
``title_of_work``          "Aký názov má diplomová práca Jána Holpa?": titles and years of that type
``year_of_work``           "Kedy obhájil Ján Holp bakalársku prácu?": years of works of that type
``persons_with_work``      "Koľko študentov má prácu v roku 2025?": exact count + list (a year
                           with no works is ``ok`` with count 0)
``common_tags``            "Ktoré tagy majú spoločné X a Y?": tags shared by all persons named
``common_topics``          "Aké spoločné témy majú X a Y?": topics shared by all persons named
``tags_of_person``         "Aké tagy má X?"
``documents_of_person``    front matter authors (generic mapping): documents they wrote
``links_to`` / ``links_from``  "Ktoré stránky odkazujú na <title>?" / "Kam odkazuje <title>?"
=========================  ===================================================================

Honest non-answers: a question needing a person that names nobody known -> ``no_answer`` /
``unknown_person`` (a name that is only a document author, e.g. a supervisor, is reported in
``entities.document_authors`` but never taken for a student); several persons fit ->
``ambiguous`` / ``ambiguous_person`` with ``candidates``; content questions (assignments,
results) and anything else no template covers -> ``no_answer`` / ``unsupported_question`` with
``suggested_endpoint: "/search"``.  Lists are fetched with ``limit + 1`` rows: when a list is cut,
``truncated`` is true, ``truncation_reasons`` names the limit and ``complete`` is false, while
``aggregation.count`` (a separate ``count(DISTINCT ...)``) stays exact with
``aggregation.complete = true``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from artifacts.analysis import fold
from artifacts.graphmap import GraphMapping, mapping_from_config
from artifacts.graphschema import fetch_rows

from .bundle import OpenedBundle
from .contract import validate_request
from .errors import RetrievalUnavailableError
from .graph_names import NameEntry, NameIndex, NameMatch, Token, capital_runs, damerau1, find_years, tokenize

MAX_QUESTION_CHARS = 1000
_WORD_RE = re.compile(r"\w+(?:[-’']\w+)*")
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000

_CONTENT = ("zadani", "uloh", "ciel", "vysledk", "bod", "metodik", "obsah", "abstrakt", "stretnut", "experiment")
_TAGS = ("tag", "stitk", "znack", "znaci")
_TOPICS = ("tem",)
_COMMON = ("spolocn", "zhodn", "oboch", "obaja", "obidv", "zdiel")
_TITLE = ("nazov", "nazv", "tem", "vola", "nazyv")
_YEAR = ("rok", "kedy")
_COUNT = ("kolko", "pocet")
_WHO = ("kto", "ktori", "ktore", "ktora", "ktory", "vymenuj", "vypis", "zoznam", "studenti", "studentov", "ludi")
_LINKS = ("odkaz", "link", "prepoj")
_WORKS_WORDS = ("prac", "projekt")
_FINAL_THESIS = "zaverecn"


class GraphRequest(BaseModel):
    """``POST /graph`` body: ``question`` (1-1000 characters), ``limit`` rows per list (1-1000,
    default 100), ``published_only`` (default true: persons and documents with ``published: false``
    do not exist for the answer), ``at`` (commit or bundle; resolved by the transport, not here)."""

    model_config = ConfigDict(extra="forbid")

    question: str
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    published_only: bool = True
    at: str | None = None


def parse_graph_request(payload: Any) -> GraphRequest:
    """Validate a decoded JSON body.

    :raises InvalidQueryError: ``question`` missing, not a string, blank or too long.
    :raises InvalidRequestError: not an object, unknown fields or wrong types.
    """
    return validate_request(payload, GraphRequest, "question", MAX_QUESTION_CHARS)


# -- per-bundle index of names ---------------------------------------------------------------------


@dataclass
class _Person:
    id: str
    name: str
    kind: str
    path: str | None
    start_year: int | None
    published: bool


@dataclass
class GraphIndex:
    """What a bundle's graph offers for recognition, read once per bundle (cached on it)."""

    mapping: GraphMapping
    persons: dict[str, _Person]
    names: dict[bool, NameIndex]  # published_only -> index
    authors: NameIndex
    tags: dict[str, str]  # folded tag -> tag
    titles: list[tuple[str, str, str]]  # (folded title, title, path), longest first
    has_works: bool
    ignore: set[str] = field(default_factory=set)


def graph_index(bundle: OpenedBundle) -> GraphIndex:
    """Return the bundle's :class:`GraphIndex`, building it on first use."""
    with bundle.graph_lock:
        cached = bundle.graph_cache.get("index")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        conn = bundle.graph_connection()
        rows = fetch_rows(conn, "MATCH (p:Person) RETURN p.id, p.name, p.kind, p.path, p.start_year, p.published")
        persons = {r[0]: _Person(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in rows}
        kind = "page" if any(p.kind == "page" for p in persons.values()) else "author"

        def entries(published_only: bool) -> NameIndex:
            chosen = [p for p in persons.values() if p.kind == kind and (p.published or not published_only)]
            return NameIndex.build(NameEntry(p.id, p.name, tuple(p.name.lower().split())) for p in chosen)

        authors = [r[0] for r in fetch_rows(conn, "MATCH (a:DocumentAuthor) RETURN a.name")]
        tags = {fold(r[0]).replace(" ", ""): r[0] for r in fetch_rows(conn, "MATCH (t:Tag) RETURN t.name")}
        titles = fetch_rows(conn, "MATCH (d:Document) RETURN d.title, d.path, d.published")
        has_works = bool(fetch_rows(conn, "MATCH (w:Work) RETURN w.id LIMIT 1"))
        mapping = mapping_from_config(bundle.manifest.config.model_dump().get("graph_mapping"))
        index = GraphIndex(
            mapping=mapping,
            persons=persons,
            names={True: entries(True), False: entries(False)},
            authors=NameIndex.build(NameEntry(a, a, tuple(a.lower().split())) for a in authors),
            tags=tags,
            titles=sorted(
                ((fold(t), t, p) for t, p, _ in titles if len(fold(t)) >= 4),
                key=lambda x: (-len(x[0]), x[2]),
            ),
            has_works=has_works,
        )
        bundle.graph_cache["index"] = index
        return index


# -- question analysis -----------------------------------------------------------------------------


@dataclass
class Analysis:
    tokens: list[Token]
    years: list[int]
    work_types: list[str]
    specific_type: bool
    persons: list[NameMatch]
    unmatched_names: list[str]
    document_authors: list[str]
    tags: list[str]
    intent: str


def _has(tokens: list[Token], stems: tuple[str, ...]) -> bool:
    return any(t.folded.startswith(stems) for t in tokens)


def _stem_in(tokens: list[Token], stem: str) -> bool:
    """A word starts with ``stem``, or (stems of 5+ letters) with a one-edit variant of it."""
    for token in tokens:
        word = token.folded
        if word.startswith(stem):
            return True
        if len(stem) >= 5 and any(damerau1(word[:n], stem) for n in (len(stem) - 1, len(stem), len(stem) + 1)):
            return True
    return False


def _work_types(tokens: list[Token], mapping: GraphMapping) -> tuple[list[str], bool]:
    """Work types named in the question, and whether a specific type was named (else all of them)."""
    if mapping.works is None:
        return [], False
    types = mapping.works.types
    named = [k for k, t in types.items() if any(_stem_in(tokens, fold(w)) for w in t.words)]
    if named:
        return named, True
    labels = {k: fold(t.label) for k, t in types.items()}
    if _has(tokens, (_FINAL_THESIS,)) and not _has(tokens, ("projekt",)):
        return [k for k, label in labels.items() if "prac" in label] or list(types), False
    if _has(tokens, ("projekt",)) and not _has(tokens, ("prac",)):
        return [k for k, label in labels.items() if "projekt" in label] or list(types), False
    return list(types), False


def analyse(question: str, index: GraphIndex, published_only: bool) -> Analysis:
    """Recognise persons, document authors, years, work types, tags and the intent of ``question``."""
    tokens = tokenize(question)
    starts = _sentence_starts(question, tokens)
    names = index.names[published_only]
    persons = names.match(tokens)
    covered = {p for m in persons for p in m.positions}
    # Sentence-initial words are capitalised anyway; they are name words only inside a full match.
    runs = [
        [t for t in run if t.index not in covered]
        for run in capital_runs(tokens, ignore=set())
    ]
    runs = [[t for t in run if not (t.index in starts and len(run) == 1)] for run in runs]
    runs = [run for run in runs if run]
    unmatched: list[str] = []
    for run in runs:
        if len(run) == 1 and run[0].index not in starts:
            surname = names.match_surname(run[0])
            if surname is not None:
                persons.append(surname)
                continue
        if not (len(run) == 1 and run[0].index in starts):
            unmatched.append(" ".join(t.text for t in run))
    persons.sort(key=lambda m: m.positions)
    authors = sorted({e.name for m in index.authors.match(tokens) for e in m.entries})
    work_types, specific = _work_types(tokens, index.mapping)
    tags = [index.tags[t.folded] for t in tokens if t.folded in index.tags and not t.capital]
    analysis = Analysis(tokens, find_years(tokens), work_types, specific, persons, unmatched, authors, tags, "")
    analysis.intent = _intent(analysis, index)
    return analysis


def _sentence_starts(question: str, tokens: list[Token]) -> set[int]:
    starts = {0}
    text = unicodedata.normalize("NFC", question)
    words = list(_WORD_RE.finditer(text))
    for i in range(1, len(words)):
        between = text[words[i - 1].end() : words[i].start()]
        if any(c in between for c in ".?!:;"):
            starts.add(i)
    return starts & {t.index for t in tokens}


def _intent(a: Analysis, index: GraphIndex) -> str:
    t = a.tokens
    person_words = bool(a.persons) or bool(a.unmatched_names) or bool(a.document_authors)
    if _has(t, _CONTENT):
        return "content"
    if _has(t, _TAGS):
        if len(a.persons) >= 2 or _has(t, _COMMON):
            return "common_tags"
        if person_words:
            return "tags_of_person"
        return "unsupported"
    if _has(t, _COMMON) and _has(t, _TOPICS):
        return "common_topics"
    if _has(t, _LINKS):
        return "links"
    if person_words:
        if not index.has_works:
            return "documents_of_person"
        if _has(t, _TITLE) and a.specific_type:  # before years: "... ktorý začal v roku 2020"
            return "title_of_work"
        if _has(t, _YEAR) and a.specific_type:
            return "year_of_work"
        if a.specific_type and not _has(t, _YEAR):
            return "title_of_work"
        if _has(t, _WORKS_WORDS) or _has(t, _YEAR) or _has(t, ("co", "robil")):
            return "works_of_person"
        return "works_of_person"
    if index.has_works and (_has(t, _COUNT) or _has(t, _WHO)) and (a.years or a.specific_type or _has(t, _WORKS_WORDS)):
        return "persons_with_work"
    return "unsupported"


# -- answering -------------------------------------------------------------------------------------


class _Answer:
    """Accumulates the response body: sources (S1..), facts, paths, documents."""

    def __init__(self, bundle: OpenedBundle, request: GraphRequest, analysis: Analysis | None,
                 base_url: str | None) -> None:
        self.bundle = bundle
        self.request = request
        self.base_url = base_url
        self.sources: dict[str, dict[str, Any]] = {}
        self.facts: list[dict[str, Any]] = []
        self.paths: list[dict[str, Any]] = []
        self.truncation: list[str] = []
        self.analysis = analysis

    def source(self, path: str | None) -> str | None:
        if path is None:
            return None
        if path not in self.sources:
            doc = self.bundle.docs.get(path)
            url = None
            if self.base_url:
                from urllib.parse import quote

                url = self.base_url.rstrip("/") + "/" + quote(path)
            self.sources[path] = {
                "source_id": f"S{len(self.sources) + 1}",
                "document_path": path,
                "source_url": url,
                "title": doc.title if doc else None,
            }
        return self.sources[path]["source_id"]  # type: ignore[no-any-return]

    def fact(self, subject: str, predicate: str, obj: Any, path: str | None, chunk_ids: list[str] | None = None,
             **extra: Any) -> None:
        self.facts.append({
            "subject": subject, "predicate": predicate, "object": obj, "source_id": self.source(path),
            "document_path": path, "chunk_ids": chunk_ids or [], **extra,
        })

    def body(self, status: str = "ok", reason: str | None = None, *, complete: bool | None = None,
             **fields: Any) -> dict[str, Any]:
        a = self.analysis
        body: dict[str, Any] = {
            "status": status,
            "reason": reason,
            "sources": list(self.sources.values()),
            "index_version": self.bundle.index_version.model_dump(mode="json"),
            "complete": complete,
            "truncated": bool(self.truncation),
            "truncation_reasons": sorted(set(self.truncation)),
            "question": self.request.question,
            "intent": a.intent if a else None,
            "entities": None if a is None else {
                "persons": [
                    {"name": e.name, "id": e.ref, "matched": " ".join(a.tokens[p].text for p in m.positions)}
                    for m in a.persons for e in m.entries
                ],
                "unknown_names": a.unmatched_names,
                "document_authors": a.document_authors,
                "years": a.years,
                "work_types": a.work_types if a.specific_type else [],
                "tags": a.tags,
            },
            "answer": None,
            "facts": self.facts,
            "paths": self.paths,
            "documents": [
                {"source_id": s["source_id"], "document_path": s["document_path"], "title": s["title"]}
                for s in self.sources.values()
            ],
            "aggregation": None,
        }
        body.update(fields)
        return body


def answer_graph(bundle: OpenedBundle, payload: dict[str, Any], *, base_url: str | None = None) -> dict[str, Any]:
    """Answer a ``POST /graph`` body from the bundle's graph.

    :param bundle: the opened bundle (its graph connection is opened lazily, read-only).
    :param payload: the decoded JSON body, see :class:`GraphRequest`.
    :param base_url: prefix of ``source_url`` (document path appended), or ``None``.
    :returns: the response body: contract fields plus ``question``, ``intent``, ``entities``,
        ``answer`` (structured, per intent), ``facts``, ``paths``, ``documents``, ``aggregation``
        (``{count, complete}`` or null) and, when ambiguous, ``candidates``.
    :raises InvalidQueryError, InvalidRequestError: bad payload.
    :raises RetrievalUnavailableError: the graph database cannot be opened or queried.
    """
    request = parse_graph_request(payload)
    try:
        index = graph_index(bundle)
        with bundle.graph_lock:
            analysis = analyse(request.question, index, request.published_only)
            out = _Answer(bundle, request, analysis, base_url)
            return _dispatch(out, index, analysis)
    except RuntimeError as exc:  # ladybug failures
        raise RetrievalUnavailableError("graph query failed") from exc
    except Exception as exc:
        from artifacts.errors import ArtifactError

        if isinstance(exc, ArtifactError):
            raise RetrievalUnavailableError("graph database unavailable") from exc
        raise


def _dispatch(out: _Answer, index: GraphIndex, a: Analysis) -> dict[str, Any]:
    if a.intent == "content":
        return out.body("no_answer", "unsupported_question", suggested_endpoint="/search",
                        message="Questions about the content of documents are answered by /search.")
    if a.intent == "unsupported":
        return out.body("no_answer", "unsupported_question", suggested_endpoint="/search",
                        message="No graph template covers this question; try /search.")
    if a.intent == "persons_with_work":
        return _persons_with_work(out, index, a)
    if a.intent == "links":
        return _links(out, index, a)
    persons = _resolve_persons(out, index, a)
    if isinstance(persons, dict):
        return persons
    if a.intent in ("common_tags", "common_topics"):
        if len(persons) < 2:
            return out.body("no_answer", "unsupported_question", suggested_endpoint="/search",
                            message="A question about shared tags or topics needs two or more persons.")
        return _common(out, persons, "tags" if a.intent == "common_tags" else "topics")
    if a.intent == "tags_of_person":
        return _common(out, persons, "tags")
    if a.intent == "documents_of_person":
        return _documents_of_person(out, index, persons)
    return _person_works(out, index, a, persons)


def _resolve_persons(out: _Answer, index: GraphIndex, a: Analysis) -> list[_Person] | dict[str, Any]:
    """Persons of the question, or the ``no_answer`` / ``ambiguous`` body.

    A name the graph does not know makes a question about shared tags or topics unanswerable; in a
    question about one person it only matters when no person was recognised at all.
    """
    needs_all = a.intent in ("common_tags", "common_topics")
    if not a.persons or (needs_all and a.unmatched_names):
        message = "No person of the graph matches the name in the question."
        if a.document_authors:
            message += " The name is a document author (for example a supervisor), not a person the pages describe."
        return out.body("no_answer", "unknown_person", message=message)
    resolved: list[_Person] = []
    for match in a.persons:
        entries = _narrow_by_years(index, match.entries, a.years)
        if len(entries) == 1:
            resolved.append(index.persons[entries[0].ref])
            continue
        if len(match.entries) > 1:
            candidates = [_candidate(out, index, index.persons[e.ref]) for e in match.entries]
            return out.body("ambiguous", "ambiguous_person", candidates=candidates,
                            message="Several persons match the name; ask again with the full name.")
        resolved.append(index.persons[match.entries[0].ref])
    return list({p.id: p for p in resolved}.values())


def _narrow_by_years(index: GraphIndex, entries: list[NameEntry], years: list[int]) -> list[NameEntry]:
    """Of several same-named persons, those whose start year is named in the question (if exactly one)."""
    if len(entries) < 2 or not years:
        return entries
    chosen = [e for e in entries if index.persons[e.ref].start_year in years]
    return chosen if len(chosen) == 1 else entries


def _works(out: _Answer, person: _Person) -> list[dict[str, Any]]:
    rows = fetch_rows(
        out.bundle.graph_connection(),
        "MATCH (p:Person {id: $id})-[:HAS_WORK]->(w:Work) "
        "RETURN w.id, w.type, w.type_label, w.year, w.title, w.path, w.section_id, w.chunk_ids "
        "ORDER BY w.year, w.type, w.id LIMIT $n",
        {"id": person.id, "n": out.request.limit + 1},
    )
    if len(rows) > out.request.limit:
        out.truncation.append("fact_limit")
        rows = rows[: out.request.limit]
    return [
        {"id": r[0], "type": r[1], "type_label": r[2], "year": r[3], "title": r[4], "path": r[5],
         "section_id": r[6], "chunk_ids": json.loads(r[7] or "[]")}
        for r in rows
    ]


def _candidate(out: _Answer, index: GraphIndex, person: _Person) -> dict[str, Any]:
    works = _works(out, person) if index.has_works else []
    out.source(person.path)
    return {
        "person": person.name, "id": person.id, "path": person.path, "start_year": person.start_year,
        "source_id": out.source(person.path),
        "works": [{"type": w["type"], "year": w["year"], "title": w["title"]} for w in works],
    }


def _work_facts(out: _Answer, person: _Person, works: list[dict[str, Any]]) -> None:
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


def _person_works(out: _Answer, index: GraphIndex, a: Analysis, persons: list[_Person]) -> dict[str, Any]:
    answers = []
    found_any = False
    for person in persons:
        out.source(person.path)
        works = _works(out, person)
        if a.intent in ("title_of_work", "year_of_work"):
            works = [w for w in works if w["type"] in a.work_types]
        _work_facts(out, person, works)
        found_any = found_any or bool(works)
        item: dict[str, Any] = {"person": person.name, "person_id": person.id, "path": person.path}
        if a.intent == "works_of_person":
            item["works"] = [{"type": w["type"], "type_label": w["type_label"], "year": w["year"],
                              "title": w["title"]} for w in works]
            item["years"] = sorted({w["year"] for w in works})
            item["titles"] = [w["title"] for w in works if w["title"] is not None]
        else:
            item["work_type"] = a.work_types[0] if len(a.work_types) == 1 else a.work_types
            item["years"] = sorted({w["year"] for w in works})
            if a.intent == "title_of_work":
                item["titles"] = [w["title"] for w in works if w["title"] is not None]
                item["title_missing"] = any(w["title"] is None for w in works)
        answers.append(item)
    answer = answers[0] if len(answers) == 1 else {"persons": answers}
    complete = not out.truncation
    if not found_any:
        return out.body("no_answer", "no_matching_sources", complete=complete, answer=answer,
                        message="The person has no work of the kind asked about in the graph.")
    return out.body("ok", complete=complete, answer=answer)


def _persons_with_work(out: _Answer, index: GraphIndex, a: Analysis) -> dict[str, Any]:
    conn = out.bundle.graph_connection()
    where = "w.type IN $types AND (p.published OR NOT $published_only)"
    params: dict[str, Any] = {"types": a.work_types, "published_only": out.request.published_only}
    if a.years:
        where += " AND w.year = $year"
        params["year"] = a.years[0]
    match = f"MATCH (p:Person)-[:HAS_WORK]->(w:Work) WHERE {where}"
    count = int(fetch_rows(conn, f"{match} RETURN count(DISTINCT p.id)", params)[0][0])
    rows = fetch_rows(
        conn, f"{match} RETURN DISTINCT p.id, p.name, p.path ORDER BY p.name, p.id LIMIT $n",
        {**params, "n": out.request.limit + 1},
    )
    if len(rows) > out.request.limit:
        out.truncation.append("entity_limit")
        rows = rows[: out.request.limit]
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
    answer = {
        "year": a.years[0] if a.years else None,
        "work_types": sorted(a.work_types),
        "count": count,
        "persons": [r[1] for r in rows],
        "person_ids": ids,
    }
    return out.body("ok", complete=not out.truncation, answer=answer,
                    aggregation={"count": count, "complete": True})


def _common(out: _Answer, persons: list[_Person], what: str) -> dict[str, Any]:
    conn = out.bundle.graph_connection()
    if what == "tags":
        cypher = "MATCH (p:Person {id: $id})<-[:DESCRIBES]-(d:Document)-[:TAGGED]->(t:Tag) RETURN DISTINCT t.name"
    else:
        cypher = ("MATCH (p:Person {id: $id})<-[:DESCRIBES]-(d:Document)-[:HAS_TOPIC]->(t:Topic) "
                  "RETURN DISTINCT t.id, t.name, t.path")
    per_person = []
    for person in persons:
        out.source(person.path)
        rows = fetch_rows(conn, cypher, {"id": person.id})
        values = {r[0]: r for r in rows}
        per_person.append(values)
        for key in sorted(values):
            out.fact(person.name, "tagged" if what == "tags" else "has_topic", key, person.path, subject_id=person.id)
    shared = sorted(set.intersection(*(set(v) for v in per_person))) if per_person else []
    answer: dict[str, Any] = {"persons": [p.name for p in persons], "person_ids": [p.id for p in persons]}
    if len(persons) == 1:
        answer[what] = shared
    else:
        answer[what] = shared
    if what == "topics":
        answer["topic_names"] = [per_person[0][k][1] for k in shared]
    for key in shared:
        out.paths.append({
            "nodes": [{"label": "Person", "id": p.id} for p in persons[:1]]
            + [{"label": "Tag" if what == "tags" else "Topic", "id": key}]
            + [{"label": "Person", "id": p.id} for p in persons[1:]],
            "relationships": ["DESCRIBES", "TAGGED" if what == "tags" else "HAS_TOPIC"] * len(persons),
        })
    return out.body("ok", complete=True, answer=answer, aggregation={"count": len(shared), "complete": True})


def _documents_of_person(out: _Answer, index: GraphIndex, persons: list[_Person]) -> dict[str, Any]:
    conn = out.bundle.graph_connection()
    answer = []
    for person in persons:
        count = int(fetch_rows(conn, "MATCH (d:Document)-[:AUTHORED_BY]->(p:Person {id: $id}) "
                                     "WHERE d.published OR NOT $published_only RETURN count(d)",
                               {"id": person.id, "published_only": out.request.published_only})[0][0])
        rows = fetch_rows(conn, "MATCH (d:Document)-[:AUTHORED_BY]->(p:Person {id: $id}) "
                                "WHERE d.published OR NOT $published_only "
                                "RETURN d.path, d.title ORDER BY d.path LIMIT $n",
                          {"id": person.id, "published_only": out.request.published_only, "n": out.request.limit + 1})
        if len(rows) > out.request.limit:
            out.truncation.append("result_limit")
            rows = rows[: out.request.limit]
        for path, _title in rows:
            out.fact(person.name, "authored", path, path, subject_id=person.id)
        answer.append({"person": person.name, "count": count, "documents": [r[0] for r in rows]})
    total = sum(item["count"] for item in answer)
    return out.body("ok", complete=not out.truncation, answer=answer[0] if len(answer) == 1 else answer,
                    aggregation={"count": total, "complete": True})


def _links(out: _Answer, index: GraphIndex, a: Analysis) -> dict[str, Any]:
    question = fold(out.request.question)
    target = next(((t, p) for f, t, p in index.titles if f" {f} " in f" {question} "), None)
    if target is None or (out.request.published_only and not out.bundle.docs.get(target[1], None)):
        return out.body("no_answer", "no_matching_sources", message="No document title was recognised.")
    title, path = target
    before = question[: f" {question} ".index(f" {fold(title)} ")].split()
    incoming = bool(before) and before[-1] in ("na", "k", "ku")  # "odkazujú na X"; "na ktoré ... odkazuje X"
    cypher = (
        "MATCH (a:Document)-[:LINKS_TO]->(b:Document {path: $path}) WHERE a.published OR NOT $published_only "
        "RETURN DISTINCT a.path, a.title ORDER BY a.path LIMIT $n"
        if incoming else
        "MATCH (b:Document {path: $path})-[:LINKS_TO]->(a:Document) WHERE a.published OR NOT $published_only "
        "RETURN DISTINCT a.path, a.title ORDER BY a.path LIMIT $n"
    )
    params = {"path": path, "published_only": out.request.published_only, "n": out.request.limit + 1}
    rows = fetch_rows(out.bundle.graph_connection(), cypher, params)
    if len(rows) > out.request.limit:
        out.truncation.append("result_limit")
        rows = rows[: out.request.limit]
    out.source(path)
    for other, _ in rows:
        src, dst = (other, path) if incoming else (path, other)
        out.fact(src, "links_to", dst, src)
    a.intent = "links_to" if incoming else "links_from"
    return out.body("ok", complete=not out.truncation, answer={"document": path, "title": title,
                                                              "direction": "incoming" if incoming else "outgoing",
                                                              "documents": [r[0] for r in rows]})
