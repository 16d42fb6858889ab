"""Link questions: which pages link to a page, or from it, and in which direction a question asks."""

from __future__ import annotations

from typing import Any

from artifacts.graphschema import fetch_rows
from query.graph.analysis import Analysis
from query.graph.assembly import Answer
from query.graph.index import GraphIndex, Person


def _direction(a: Analysis, index: GraphIndex, span: tuple[int, int]) -> str | None:
    """``incoming`` / ``outgoing`` from the words around the page's name (see graphwords.yaml)."""
    vocab, tokens = index.vocabulary, a.tokens
    every = set(range(len(tokens)))
    if vocab.find(tokens, vocab.links["incoming_words"], every):
        return "incoming"
    # 2. a preposition right before the title, fillers skipped ("odkazy na stránku X")
    link_positions = sorted({p for s, e, _ in a.concepts.get("link", []) for p in range(s, e)})
    pos = span[0] - 1
    while pos >= 0:
        for name in ("outgoing", "incoming"):
            for entry in sorted(vocab.links[name], key=lambda e: -len(e.words)):
                start = pos - len(entry.words) + 1
                if start >= 0 and vocab.match_at(tokens, start, entry, every):
                    return name
        if any(vocab.match_at(tokens, pos, e, every) for e in vocab.links["fillers"]):
            pos -= 1
            continue
        break
    link_right_before = pos >= 0 and pos in link_positions
    if vocab.find(tokens, vocab.links["outgoing_words"], every):
        return "outgoing"
    after = [p for p in link_positions if p >= span[1]]
    if after:  # 3. the page is the subject: "X odkazuje na ...", "What does X link to?"
        following = after[-1] + 1
        passive = following < len(tokens) and any(
            vocab.match_at(tokens, following, e, every) for e in vocab.links["outgoing"])
        return "incoming" if passive else "outgoing"
    if link_right_before:  # 4. "Na ktoré stránky odkazuje X", "pages citing X"
        return vocab.verb_before_title.get(a.language or vocab.languages[0])
    return None


def _asks_for_persons(a: Analysis) -> bool:
    """Whether the first noun of the question that says what is asked for is a word for persons
    ("Ktorí študenti ...") rather than for pages or topics ("Which topic pages does X's student page
    link to?"); words of the page's title do not count."""
    span = range(*a.page_span) if a.page_span else range(0)
    first: tuple[int, str] | None = None
    for concept in ("person", "document", "topic"):
        for s, _, _ in a.concepts.get(concept, []):
            if s not in span and (first is None or s < first[0]):
                first = (s, concept)
    return first is not None and first[1] == "person"


def answer_links(out: Answer, index: GraphIndex, a: Analysis, persons: list[Person]) -> dict[str, Any]:
    if a.pages:
        page = a.pages[0]
        path, title, span = page.path, page.label, a.page_span
    elif len(persons) == 1 and persons[0].path:
        path, title = persons[0].path, persons[0].name
        match = a.persons[0]
        span = (min(match.positions), max(match.positions) + 1)
    else:
        return out.unsupported("A link question needs exactly one page (its title, or a person's page).")
    assert path is not None and span is not None
    known = index.by_published[out.request.published_only]
    if path not in known.pages:
        return out.body("no_answer", "unknown_page", message="No page of the graph matches the page in the question.")
    direction = _direction(a, index, span)
    if direction is None:
        return out.unsupported("The direction of the link question (to or from the page) was not recognised.")
    incoming = direction == "incoming"
    cypher = (
        "MATCH (a:Document)-[:LINKS_TO]->(b:Document {path: $path}) WHERE a.published OR NOT $published_only "
        "RETURN DISTINCT a.path, a.title ORDER BY a.path LIMIT $n"
        if incoming else
        "MATCH (b:Document {path: $path})-[:LINKS_TO]->(a:Document) WHERE a.published OR NOT $published_only "
        "RETURN DISTINCT a.path, a.title ORDER BY a.path LIMIT $n"
    )
    persons_only = _asks_for_persons(a)  # "Ktorí študenti sú uvedení na stránke X?": the pages of persons only
    # filtered to persons before the limit cuts the rows (else a cut list would look complete)
    limit = 2 ** 31 - 1 if persons_only else out.request.limit + 1
    params = {"path": path, "published_only": out.request.published_only, "n": limit}
    rows = fetch_rows(out.bundle.graph_connection(), cypher, params)
    if persons_only:
        person_pages = {p.path for p in index.persons.values() if p.kind == "page" and p.path}
        rows = [r for r in rows if r[0] in person_pages]
    rows = out.cut(rows, "result_limit")
    out.source(path)
    for other, _ in rows:
        src, dst = (other, path) if incoming else (path, other)
        out.fact(src, "links_to", dst, src)
    a.intent = "links_to" if incoming else "links_from"
    answer: dict[str, Any] = {"page": path, "document": path, "title": title, "direction": direction,
              "documents": [r[0] for r in rows], "titles": [r[1] for r in rows]}
    if a.has("count") and not out.truncation:  # "Koľko študentov je uvedených na stránke X?": an exact count
        answer["count"] = len(rows)
    return out.body("ok", complete=not out.truncation, answer=answer,
                    aggregation={"count": len(rows), "complete": not out.truncation})
