"""Graph evidence: the facts of an ``ok`` ``/graph`` body as evidence items (:func:`graph_context`), each line of
facts rendered in the question's language (:func:`render_fact`, :func:`render_facts`) and citing the chunk
that states it.  The same :class:`query.answer.rag.Context` shape as text evidence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from query.answer.evidence import EvidenceItem
from query.answer.rag import Context, count_tokens
from query.bundle import OpenedBundle
from query.contract import Source, source_url
from query.graph.words import Phrasing, phrasing

_COMMON_INTENTS = {"common_tags": "tagged", "common_topics": "has_topic"}
_OPENING_QUOTES = "„“”\"«»‚'"
_CLOSING_QUOTES = "“”\"»«‘’'"
TitleOf = Callable[[str], "str | None"]
"""A document's title by its path (``None``: not a document, or it has no title)."""


def _shown(value: Any, words: Phrasing, title_of: TitleOf | None) -> str:
    """A fact's subject or object as a reader sees it: a document by its title in quotes, else the value."""
    text = str(value)
    title = title_of(text) if title_of is not None else None
    if title and title[0] in _OPENING_QUOTES and title[-1] in _CLOSING_QUOTES and len(title) > 1:
        return title  # a title that is a quotation already ("„Naším produktem je komunita“")
    return words.title(title) if title else text


def render_fact(fact: dict[str, Any], words: Phrasing | None = None, title_of: TitleOf | None = None) -> str:
    """Return one ``has_work`` graph fact (``/graph``'s ``facts`` item) as one line of evidence text.

    ``"<person>: <type label> (<type>), <year>, „<title>“."`` (``words.untitled`` without a title;
    ``words``: the question language's :class:`~query.graph.words.Phrasing`, default the file's default
    language).  Other predicates are rendered per subject by :func:`render_facts`.  Every value comes
    from the fact.
    """
    words = words or phrasing(None)
    subject, obj = fact.get("subject"), fact.get("object")
    if not isinstance(obj, dict):
        return render_facts([fact], words, title_of)[0]
    label = obj.get("type_label") or obj.get("type")
    kind = f"{label} ({obj['type']})" if obj.get("type_label") and obj.get("type") else str(label)
    title = obj.get("title")
    title_text = words.title(title) if title else words.untitled
    return f"{subject}: {kind}, {obj.get('year')}, {title_text}."


def render_facts(facts: list[dict[str, Any]], words: Phrasing | None = None,
                 title_of: TitleOf | None = None) -> list[str]:
    """Return evidence lines for facts of one document: one per work, one per (subject, predicate) else,
    in the facts' order, phrased with ``words`` (the predicate's template, values joined by ", ":
    ``"Jakub Novák: tagy bm25, ir."``).  ``title_of``: a subject or object that is a document path
    is shown as the document's title in quotes (``„Příručka řízení IT projektů“ (autor: Tomáš
    Znamenáček).``); without it, as the path."""
    return list(dict.fromkeys(line for line, _ in render_fact_lines(facts, words, title_of)))


def render_fact_lines(facts: list[dict[str, Any]], words: Phrasing | None = None,
                      title_of: TitleOf | None = None) -> list[tuple[str, list[dict[str, Any]]]]:
    """:func:`render_facts` with the facts behind each line: ``[(line, facts)]`` in order (a line
    repeated keeps its first place and gathers the facts of every copy)."""
    words = words or phrasing(None)
    lines: list[tuple[str, str] | tuple[str, dict[str, Any]]] = []
    grouped: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    for fact in facts:
        if fact.get("predicate") == "has_work" and isinstance(fact.get("object"), dict):
            lines.append((render_fact(fact, words, title_of), fact))
            continue
        key = (str(fact.get("subject")), str(fact.get("predicate")))
        if key not in grouped:
            grouped[key] = []
            lines.append(key)
        shown = _shown(fact.get("object"), words, title_of)
        if fact.get("as_written"):  # a name the page spells otherwise ("Eva Kolárová (Eva Kolarova)")
            shown += f" ({fact['as_written']})"
        grouped[key].append((shown, fact))
    out: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        if isinstance(line[1], dict):
            out.setdefault(line[0], []).append(line[1])
            continue
        subject, predicate = line
        template = words.predicates.get(predicate, "{subject}: " + predicate + " {object}.")
        parts = grouped[(subject, predicate)]
        text = template.format(subject=_shown(subject, words, title_of), object=", ".join(p for p, _ in parts))
        out.setdefault(text, []).extend(f for _, f in parts)
    return list(out.items())


FRONT_MATTER = ("front matter",)
"""Heading path of a graph fact no chunk of its page states: its value is in the front matter only."""


def _line_citation(bundle: OpenedBundle, path: str, facts: list[dict[str, Any]]) -> tuple[str | None, tuple[str, ...]]:
    """``(chunk id, heading path)`` a graph evidence line cites: the first chunk that states the facts
    of the line (each fact's ``chunk_ids``, :func:`query.graph.provenance.stating_chunks`; a value it does not
    state is in the fact's ``front_matter``), else the page's first chunk under :data:`FRONT_MATTER`;
    facts without provenance (links, topics) cite the first chunk any of them names, or none."""
    with_provenance = [f for f in facts if "front_matter" in f]
    if not with_provenance:
        ids = [c for f in facts for c in f.get("chunk_ids") or []]
        return (ids[0] if ids else None), ()
    common = [c for c in with_provenance[0].get("chunk_ids") or []
              if all(c in (f.get("chunk_ids") or []) for f in with_provenance[1:])]
    if common and len(with_provenance) == len(facts):
        chunk = bundle.chunks[bundle.chunk_index[common[0]]] if common[0] in bundle.chunk_index else None
        return common[0], tuple(chunk.heading_path) if chunk is not None else ()
    first = f"{path}#0"
    return (first if first in bundle.chunk_index else None), FRONT_MATTER


def graph_context(bundle: OpenedBundle, body: dict[str, Any], *, max_tokens: int,
                  base_url: str | None = None) -> Context:
    """Turn an ``ok`` ``/graph`` body into evidence: one item per line of a document's facts, citing the
    chunk that states the line's facts (:func:`_line_citation`: else the page's first chunk under
    ``heading_path`` :data:`FRONT_MATTER`).

    Lines are phrased in the question's language (``entities.language`` of the body,
    :func:`query.graph.words.phrasing`), documents named by their titles (:func:`render_facts`).

    Source ids are the graph body's own (``S1..`` per document); facts without a document are
    dropped (evidence must point at a page).  For ``common_tags`` / ``common_topics`` only the
    shared values are evidence.  The body's exact ``aggregation`` (count) is attached to every
    item's ``facts`` (it is a fact about the whole answer, and each item is part of it), so a count
    claim citing the items is checkable.  A document whose lines do not all fit ``max_tokens`` is left
    out whole, with ``llm_context_budget``.
    """
    facts_all = list(body.get("facts") or [])
    predicate = _COMMON_INTENTS.get(str(body.get("intent")))
    raw_answer = body.get("answer")
    answer: dict[str, Any] = raw_answer if isinstance(raw_answer, dict) else {}
    if predicate is not None:
        shared = {str(v) for v in answer.get("tags" if predicate == "tagged" else "topics") or []}
        facts_all = [f for f in facts_all if f.get("predicate") != predicate or str(f.get("object")) in shared]
    by_path: dict[str, list[dict[str, Any]]] = {}
    for fact in facts_all:
        path = fact.get("document_path")
        if path:
            by_path.setdefault(path, []).append(fact)
    aggregation = body.get("aggregation")
    words = phrasing((body.get("entities") or {}).get("language"))

    def title_of(path: str) -> str | None:
        doc = bundle.docs.get(path)
        return (doc.title or "").strip() or None if doc is not None else None

    # the label is the sentence GraphPhrasing's count claim uses ("Počet: N.")
    extra = ({"label": words.count.format(count=aggregation.get("count")), "count": aggregation.get("count"),
              "complete": aggregation.get("complete")},) if isinstance(aggregation, dict) else ()
    sources = {s["document_path"]: Source(**s) for s in body.get("sources") or []}
    commit = bundle.manifest.commit
    items: list[EvidenceItem] = []
    reasons: set[str] = set(body.get("truncation_reasons") or [])
    used = 0
    for path, facts in by_path.items():
        src = sources.get(path) or Source(source_id=f"S{len(sources) + 1}", document_path=path,
                                          source_url=source_url(base_url, path, commit),
                                          title=bundle.docs[path].title if path in bundle.docs else None)
        sources.setdefault(path, src)
        lines = render_fact_lines(facts, words, title_of)
        counted = [(line, line_facts, count_tokens(line)) for line, line_facts in lines]
        tokens = sum(n for _, _, n in counted)
        if used + tokens > max_tokens:
            reasons.add("llm_context_budget")
            continue
        used += tokens
        doc = bundle.docs.get(path)
        for line, line_facts, n in counted:
            chunk_id, heading_path = _line_citation(bundle, path, line_facts)
            if heading_path == FRONT_MATTER:  # every value of the line is the front matter's
                from query.graph.provenance import fact_values

                line_facts = [{**f, "front_matter": fact_values(str(f.get("predicate")), f.get("subject"),
                                                                f.get("object"))} if "front_matter" in f else f
                              for f in line_facts]
            items.append(EvidenceItem(
                evidence_id=f"E{len(items) + 1}", kind="graph", text=line, document_path=path,
                source_id=src.source_id, commit=commit, chunk_id=chunk_id, title=doc.title if doc else src.title,
                heading_path=heading_path, source_url=src.source_url, facts=tuple(line_facts) + extra, tokens=n,
            ))
    used_paths = {i.document_path for i in items}
    return Context(items=items, sources=[s for p, s in sources.items() if p in used_paths],
                   truncation_reasons=sorted(reasons), tokens=used)
