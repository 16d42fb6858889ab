"""The graph response body: sources, facts, paths, entities; lists and what a delivered answer
shows of them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from query.bundle import OpenedBundle
from query.contract import source_url
from query.graph.analysis import Analysis
from query.graph.index import GraphIndex
from query.graph.provenance import stating_chunks
from query.graph.request import GraphRequest

# -- lists and what a delivered answer shows of them ------------------------------------------------


def answer_list(body: dict[str, Any]) -> tuple[list[str], int] | None:
    """``(entries, count)`` of a list answer: the persons (ids), documents, tags or topics the answer
    lists and the exact count it states (``aggregation.count``, else the list's length); ``None``
    when the answer is no list (a fact of one person, per-person answers)."""
    answer = body.get("answer")
    if not isinstance(answer, dict):
        return None
    intent = str(body.get("intent"))
    if intent in ("common_tags", "tags_of_person"):
        entries = answer.get("tags")
    elif intent in ("common_topics", "topics_of_person"):
        entries = answer.get("topics")
    elif intent == "author_of_document":
        entries = answer.get("author_ids")
    elif isinstance(answer.get("authors"), list) and all(isinstance(i, dict) for i in answer["authors"]):
        entries = [d for item in answer["authors"] for d in item.get("documents") or []]  # several authors
    else:
        entries = answer.get("person_ids") if isinstance(answer.get("person_ids"), list) else answer.get("documents")
    if not isinstance(entries, list):
        return None
    agg = body.get("aggregation")
    count = agg.get("count") if isinstance(agg, dict) and isinstance(agg.get("count"), int) else len(entries)
    return [str(e) for e in entries], int(cast(int, count))  # an int count or len(entries)


def shown_entries(body: dict[str, Any], facts: Iterable[dict[str, Any]]) -> int | None:
    """How many entries of the body's list (:func:`answer_list`) the delivered ``facts`` name
    (as subject, object, their ids or document); ``None`` when the answer is no list."""
    listed = answer_list(body)
    if listed is None:
        return None
    named = {str(v) for f in facts for v in (f.get("subject_id"), f.get("subject"), f.get("object"),
                                              f.get("object_id"), f.get("document_path")) if isinstance(v, str | int)}
    return sum(1 for e in listed[0] if e in named)
# -- answering -------------------------------------------------------------------------------------


class Answer:
    """Accumulates the response body: sources (S1..), facts, paths, documents."""

    def __init__(self, bundle: OpenedBundle, request: GraphRequest, analysis: Analysis | None,
                 index: GraphIndex | None, base_url: str | None) -> None:
        self.bundle = bundle
        self.request = request
        self.base_url = base_url
        self.index = index
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
            url = source_url(self.base_url, path, self.bundle.manifest.commit)
            self.sources[path] = {
                "source_id": f"S{len(self.sources) + 1}",
                "document_path": path,
                "source_url": url,
                "title": doc.title if doc else None,
            }
        return self.sources[path]["source_id"]  # type: ignore[no-any-return]

    def fact(self, subject: str, predicate: str, obj: Any, path: str | None, chunk_ids: list[str] | None = None,
             **extra: Any) -> None:
        """Add a fact read from the document at ``path``.  Its ``chunk_ids`` are the chunks of that
        document whose text states the fact's values (:func:`stating_chunks`); ``front_matter`` lists
        the values those chunks do not state (only the front matter does): all of them when
        ``chunk_ids`` is ``[]``, none when the chunks state every value."""
        stated = stating_chunks(self.bundle, path, predicate, subject, obj, chunk_ids)
        if stated is not None:
            chunk_ids, extra["front_matter"] = stated
        self.facts.append({
            "subject": subject, "predicate": predicate, "object": obj, "source_id": self.source(path),
            "document_path": path, "chunk_ids": chunk_ids or [], **extra,
        })

    def _entities(self) -> dict[str, Any] | None:
        a, index = self.analysis, self.index
        if a is None or index is None:
            return None
        persons = []
        for m in a.persons:
            for e in m.entries:
                person = index.persons.get(e.ref)
                persons.append({"id": e.ref, "name": e.name, "path": person.path if person else None,
                                "matched": " ".join(a.tokens[p].text for p in m.positions)})
        return {
            "persons": persons,
            "unknown_names": [" ".join(t.text for t in run) for run in a.unmatched_names],
            "document_authors": sorted({e.name for m in a.document_authors for e in m.entries}),
            "years": a.years,
            "work_types": a.work_types,
            "tags": a.tags,
            "topics": [{"id": t.ref, "name": t.label, "path": t.path} for t in a.topics],
            "pages": [{"path": p.path, "title": p.label} for p in a.pages],
            "language": a.language,
            # the question's words the analysis explained (entities, intent words, stop and filler
            # words): an ``ok`` answer explains every word, and its claims answer them all
            "explained_words": [t.text for t in a.tokens if t.text not in a.unexplained],
            # asks for persons or documents selected by front matter or links: never for text search
            "structure_question": a.structure_question(index.vocabulary),
            # values of front matter relations the question names (only for a mapping with ``relations``)
            **({"field_values": a.field_values} if index.mapping.relations else {}),
        }

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
            "query": self.request.text,
            "question": self.request.text,
            "intent": a.intent if a else None,
            "entities": self._entities(),
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

    def unsupported(self, message: str) -> dict[str, Any]:
        return self.body("no_answer", "unsupported_question", suggested_endpoint="/search", message=message)

    def cut(self, rows: list[list[Any]], reason: str) -> list[list[Any]]:
        if len(rows) > self.request.limit:
            self.truncation.append(reason)
            return rows[: self.request.limit]
        return rows
