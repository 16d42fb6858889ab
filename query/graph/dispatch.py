"""The entry point :func:`answer_graph`: analyse the question, refuse what the graph cannot answer,
and hand the rest to the intent's answer."""

from __future__ import annotations

import re
from typing import Any

from artifacts.analysis import fold
from query.bundle import OpenedBundle
from query.errors import RetrievalUnavailableError
from query.graph.analysis import Analysis
from query.graph.assembly import Answer
from query.graph.combined import answer_combined, refuse_values
from query.graph.declared import answer_declared
from query.graph.documents import (
    answer_authors_of_document,
    answer_common,
    answer_documents_of_author,
    answer_tags_of_document,
    answer_with_tag,
)
from query.graph.index import GraphIndex, Person, graph_index
from query.graph.intents import ONE_PERSON
from query.graph.links import answer_links
from query.graph.names import (
    NameEntry,
    Token,
    looks_like_person_name,
)
from query.graph.recognition import analyse
from query.graph.request import parse_graph_request
from query.graph.values import Combination
from query.graph.works import (
    answer_person_works,
    answer_persons_started,
    answer_persons_with_work,
    answer_start_year,
    answer_supervised_by,
    answer_supervisor,
    person_candidate,
)
from query.question import definition_question


def answer_graph(bundle: OpenedBundle, payload: dict[str, Any], *, base_url: str | None = None) -> dict[str, Any]:
    """Answer a ``POST /graph`` body from the bundle's graph.

    :param bundle: the opened bundle (its graph connection is opened lazily, read-only).
    :param payload: the decoded JSON body, see :class:`GraphRequest`.
    :param base_url: prefix of ``source_url`` (document path appended), or ``None``.
    :returns: the response body: contract fields plus ``query`` (and ``question``, the same text),
        ``intent``, ``entities`` (``persons`` ``[{id, name, path, matched}]``, ``unknown_names``,
        ``document_authors``, ``years``, ``work_types``, ``tags``, ``topics``, ``pages``,
        ``language`` (of the question words: sk, cs, en, de; null when none matched), ``explained_words``),
        ``answer`` (structured, per intent), ``facts``, ``paths``, ``documents``,
        ``aggregation`` (``{count, complete}`` or null) and, when ambiguous, ``candidates``.
    :raises InvalidQueryError, InvalidRequestError: bad payload.
    :raises RetrievalUnavailableError: the graph database cannot be opened or queried.
    """
    request = parse_graph_request(payload)
    try:
        index = graph_index(bundle)
        with bundle.graph_lock:
            analysis = analyse(request.text, index, request.published_only)
            out = Answer(bundle, request, analysis, index, base_url)
            return _dispatch(out, index, analysis)
    except RuntimeError as exc:  # ladybug failures
        raise RetrievalUnavailableError("graph query failed") from exc
    except Exception as exc:
        from artifacts.errors import ArtifactError

        if isinstance(exc, ArtifactError):
            raise RetrievalUnavailableError("graph database unavailable") from exc
        raise

_PERSON_CONCEPTS = ("who", "person", "author", "supervisor", "work", "start", "tag", "topic", "title", "year",
                    "common", "count", "link")
"""Question words that make a name the subject of a person question (then an unknown name is refused)."""
_GENERIC_CONCEPTS = ("who", "person", "count")
"""Of those, the ones that ask about people or numbers in general ("Kdo po X převzal ...?", "Kolik lidí
přišlo na X?"): with every name of the question found in the pages, the text answers them."""


def _named_in_pages(bundle: OpenedBundle, run: list[Token], published_only: bool) -> bool:
    """Whether the words of ``run`` occur together, in this order, in some chunk's title or text
    (of a published document, with ``published_only``).

    A capitalised name the graph does not know as a person ("Jehlomat", "Česko.Digital") that the
    pages mention is a thing the text can answer about, not "a person nobody has"."""
    from whoosh import query as wq

    from query.search.weighting import _chunk_id, ranking_searcher

    words = re.findall(r"\w+", fold(" ".join(t.text for t in run)))
    phrase = " ".join(words)
    if not phrase:
        return False
    searcher: Any = ranking_searcher(bundle)
    # the index may hold the name as one token ("česko.digital"): try the joined forms too
    joined = [wq.Term(f, sep.join(words)) for sep in (".", "-", "") for f in ("body", "title")] \
        if len(words) > 1 else []
    hits = searcher.search(wq.Or([wq.And([wq.Or([wq.Term("body", w), wq.Term("title", w)]) for w in words]), *joined]),
                           limit=200, scored=False)
    for _, docnum in hits.top_n:
        chunk = bundle.chunks[bundle.chunk_index[_chunk_id(bundle, searcher, docnum)]]
        if published_only and not chunk.published:
            continue
        if phrase in " ".join(re.findall(r"\w+", fold(f"{chunk.title} {chunk.text}"))):
            return True
    return False


def _dispatch(out: Answer, index: GraphIndex, a: Analysis) -> dict[str, Any]:
    if a.intent in index.mapping.intents:  # an intent the mapping declares: its slots are filled
        return answer_declared(out, index, a)
    needs_person = a.intent in ONE_PERSON or a.intent in ("common_tags", "common_topics", "needs_person")
    if (not a.persons and not a.pages and not a.document_authors
            and a.intent in ("needs_person", "unsupported", "content")
            # without works in the graph, "projekt" names no thesis; "kdo"/"lidí"/"kolik" alone ask about
            # the text's people or numbers, not about the named thing
            and not a.has(*(c for c in _PERSON_CONCEPTS
                            if c not in _GENERIC_CONCEPTS and (c != "work" or index.has_works)))
            and not a.work_types and a.unmatched_names
            and all(_named_in_pages(out.bundle, run, out.request.published_only) for run in a.unmatched_names)):
        # "Co je Jehlomat?", "Proč si Česko.Digital nezaložilo účet na Bluesky?", "Kdo po Česko.Digital
        # převzal Sbírku počítačů?": the names are no persons of the graph and the pages mention them, so
        # the question is about what the pages say, not about "a person nobody has": the text answers
        return out.unsupported("The names in the question are no persons of the graph, but pages mention "
                               "them; try /search.")
    definition = definition_question(out.request.text)
    if (definition is not None and not a.persons and not a.pages and not a.document_authors
            and a.intent in ("needs_person", "unsupported") and not a.work_types
            and not a.has(*(c for c in _PERSON_CONCEPTS if c != "who" and (c != "work" or index.has_works)))
            and (definition.kind == "thing"
                 or all(_named_in_pages(out.bundle, run, out.request.published_only) for run in a.unmatched_names))):
        # "Co je Jehlomat?" asks what a thing is, never who: whether or not the pages mention it, the
        # text answers (with a sentence that defines it) or refuses for lack of evidence.  "Kdo je X?"
        # about a name the pages mention but the graph has no person for is answered the same way.
        return out.unsupported("The question asks what (or who) something is, which the graph does not "
                               "describe; try /search.")
    # a name nobody has: unknown_person only when the name stands where a person does (but a page
    # title is no person): the subject of "Who is X?", a run that looks like a person's name ("Peter
    # Lukáč"; "Ministry of Defence", "Open Data Day", "Česko.Digital Mastodon" do not), or a single word
    # in a question with a person slot ("Aké práce má Eva?").  Any other "who" asks for a person without
    # making the name one: "Who founded Open Data Day?", "Who is responsible for Grafana?" name things
    # the text may know, not "a person nobody has"
    who_is = definition is not None and definition.kind == "person"
    slot = (needs_person and a.intent != "needs_person") or a.has(*(c for c in _PERSON_CONCEPTS
                                                                    if c not in _GENERIC_CONCEPTS))
    # a name the pages use is no "person nobody has" (a thing, or a person the text knows): the text answers
    # or refuses ("Wie viele Urlaubstage gibt es pro Jahr?": a capitalised noun the pages hold)
    unmatched = [run for run in a.unmatched_names if who_is or not _named_in_pages(out.bundle, run,
                                                                                   out.request.published_only)]
    unknown = [run for run in unmatched if len(run) >= 2 and (who_is or looks_like_person_name(run))]
    named = [run for run in unmatched if who_is or looks_like_person_name(run)
             or (slot and looks_like_person_name(run, single=True, lexicon=False))]
    if not a.persons and not a.pages and a.intent not in ("links_unknown_page", "unknown_page", "ambiguous_page") and (
            unknown or (needs_person and (named or a.document_authors))):
        return _unknown_person(out, a)
    if a.intent == "content":
        return out.unsupported("Questions about the content of documents are answered by /search.")
    if a.intent in ("unsupported", "needs_person"):
        return out.unsupported("The question was not understood by the graph (no template covers it); try /search.")
    if a.intent in ("links_unknown_page", "unknown_page"):
        return out.body("no_answer", "unknown_page", message="No page of the graph matches the page in the question.")
    if a.intent == "ambiguous_page":
        return out.body("ambiguous", "ambiguous_page", message="Several pages begin with the title in the question; "
                        "ask again with more of the title.",
                        candidates=[{"title": p.label, "path": p.path, "source_id": out.source(p.path)}
                                    for p in a.ambiguous_pages])
    refused = refuse_values(out, a)
    if refused is not None:
        return refused
    if a.combos:
        combined = answer_combined(out, index, a)
        if combined is not None:
            return combined
    if a.intent in ("tags_of_document", "topics_of_document"):
        return answer_tags_of_document(out, a)
    if a.intent == "persons_with_work":
        return answer_persons_with_work(out, index, a)
    if a.intent == "persons_started":
        return answer_persons_started(out, a)
    if a.intent in ("persons_with_tag", "documents_with_tag"):
        return answer_with_tag(out, index, a)
    if a.intent == "author_of_document":
        return answer_authors_of_document(out, a)
    if a.intent == "links" and a.pages:
        return answer_links(out, index, a, [])
    if a.intent == "supervised_by":
        return answer_supervised_by(out, index, a)
    if a.intent == "documents_of_author" and not a.persons:
        return answer_documents_of_author(out, index, [], a.document_authors, a.tags, a.work_years, a.combos.get("tag"))
    persons = _resolve_persons(out, index, a)
    if isinstance(persons, dict):
        return persons
    if a.intent == "links":
        return answer_links(out, index, a, persons)
    if a.intent in ("common_tags", "common_topics"):
        if len(persons) < 2:
            return out.unsupported("A question about shared tags or topics needs two or more persons.")
        return answer_common(out, persons, "tags" if a.intent == "common_tags" else "topics", _person_combo(a, persons))
    if len(persons) > 1 and a.intent in ONE_PERSON and "person" in a.combos:
        return _per_person(out, index, a, persons)  # "Aké sú názvy prác X a Y?": each person's own answer
    if a.intent in ("tags_of_person", "topics_of_person") and len(persons) != 1:
        return out.unsupported("Tags or topics of several persons: ask for their common tags, or one at a time.")
    if a.intent == "documents_of_author":
        return answer_documents_of_author(out, index, persons, [], a.tags, a.work_years, a.combos.get("tag"))
    if len(persons) != 1:
        return out.unsupported("The question names several persons; ask about one at a time.")
    return _one_person(out, index, a, persons[0])


def _one_person(out: Answer, index: GraphIndex, a: Analysis, person: Person) -> dict[str, Any]:
    if a.intent == "supervisor_of_work":
        body = answer_supervisor(out, index, a, person)
    elif a.intent == "start_year_of_person":
        body = answer_start_year(out, person)
    elif a.intent in ("tags_of_person", "topics_of_person"):
        body = answer_common(out, [person], "tags" if a.intent == "tags_of_person" else "topics")
    else:
        body = answer_person_works(out, index, a, person)
    if a.has("premise") and body["status"] == "ok" and isinstance(body.get("answer"), dict):
        premise = _premise(a, body["answer"])
        if premise is not None:
            body["answer"]["premise"] = premise
    return body


def _premise(a: Analysis, answer: dict[str, Any]) -> dict[str, Any] | None:
    """``{stated, holds}`` of a question that states a fact ("Je pravda, že X obhájil diplomovú prácu v
    roku 2020?"): the value the question states and whether the graph's fact has it; ``None`` when the
    question states no value of the fact (then it is an ordinary question)."""
    if a.intent == "year_of_work" and a.stated_years:
        return {"stated": {"year": a.stated_years[0]}, "holds": a.stated_years[0] in (answer.get("years") or [])}
    if a.intent == "start_year_of_person" and a.stated_years:
        return {"stated": {"start_year": a.stated_years[0]}, "holds": answer.get("start_year") == a.stated_years[0]}
    if a.intent == "supervisor_of_work" and a.document_authors:
        stated = [e.name for m in a.document_authors for e in m.entries[:1]]
        have = {fold(n) for n in answer.get("supervisors") or []}
        return {"stated": {"supervisors": stated}, "holds": all(fold(n) in have for n in stated)}
    if a.intent == "tags_of_person" and a.tags:
        return {"stated": {"tags": list(a.tags)}, "holds": set(a.tags) <= set(answer.get("tags") or [])}
    return None


def _person_combo(a: Analysis, persons: list[Person]) -> Combination | None:
    """The operators between the persons of the question, by resolved person (``None``: all "and")."""
    combo = a.combos.get("person")
    if combo is None or len(combo.values) != len(persons) or set(combo.ops) == {"and"}:
        return None
    return Combination("person", tuple(p.id for p in persons), combo.ops)


def _per_person(out: Answer, index: GraphIndex, a: Analysis, persons: list[Person]) -> dict[str, Any]:
    """A fact question about several persons joined by "and", answered for each person on its own: the
    facts of all; ``answer.persons`` holds each person's answer with its status.  The body is ``ok`` when
    every person's answer is; else it takes the status and reason of the first that is not."""
    parts = []
    for person in persons:
        part = _one_person(out, index, a, person)
        parts.append({"person": person.name, "person_id": person.id, "status": part["status"],
                      "reason": part["reason"], "answer": part.get("answer")})
    answer = {"persons": parts}
    failed = next((p for p in parts if p["status"] != "ok"), None)
    if failed is not None:
        return out.body(failed["status"], failed["reason"], complete=True, answer=answer,
                        message=f"No answer for {failed['person']}; the answers for each person are in answer.persons.")
    return out.body("ok", complete=not out.truncation, answer=answer)

def _unknown_person(out: Answer, a: Analysis) -> dict[str, Any]:
    message = "No person of the graph matches the name in the question."
    if a.document_authors:
        message += " The name is a document author (for example a supervisor), not a person the pages describe."
    return out.body("no_answer", "unknown_person", message=message)


def _resolve_persons(out: Answer, index: GraphIndex, a: Analysis) -> list[Person] | dict[str, Any]:
    """Persons of the question, or the ``no_answer`` / ``ambiguous`` body.

    A name the graph does not know makes a question about several persons unanswerable; in a
    question about one person it only matters when no person was recognised at all.
    """
    several = a.intent in ("common_tags", "common_topics")
    if not a.persons or (several and a.unmatched_names):
        return _unknown_person(out, a)
    resolved: list[Person] = []
    for match in a.persons:
        entries = _narrow_by_years(index, match.entries, a.years if a.has("start") else [])
        if len(entries) == 1:
            resolved.append(index.persons[entries[0].ref])
            continue
        candidates = [person_candidate(out, index, index.persons[e.ref]) for e in match.entries]
        return out.body("ambiguous", "ambiguous_person", candidates=candidates,
                        message="Several persons match the name; ask again with the full name or the start year.")
    return list({p.id: p for p in resolved}.values())


def _narrow_by_years(index: GraphIndex, entries: list[NameEntry], years: list[int]) -> list[NameEntry]:
    """Of several same-named persons, those whose start year is named in the question (if exactly one)."""
    if len(entries) < 2 or not years:
        return entries
    chosen = [e for e in entries if index.persons[e.ref].start_year in years]
    return chosen if len(chosen) == 1 else entries
