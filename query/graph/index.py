"""What a bundle's graph offers for recognition (persons, authors, tags, titles, topics), read once
per bundle and cached on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from artifacts.analysis import fold
from artifacts.graphmap import GraphMapping, mapping_from_config
from artifacts.graphschema import fetch_rows
from query.bundle import OpenedBundle
from query.graph.names import (
    NameEntry,
    NameIndex,
    name_forms,
    name_tokens,
    tokenize,
)
from query.graph.words import Vocabulary

_MIN_TITLE_CHARS = 4

# -- per-bundle index of names ---------------------------------------------------------------------


@dataclass
class Person:
    id: str
    name: str
    kind: str
    path: str | None
    start_year: int | None
    published: bool


@dataclass(frozen=True)
class Named:
    """A page title or topic as a sequence of folded words."""

    words: tuple[str, ...]
    label: str
    path: str | None
    ref: str


@dataclass
class Published:
    """What exists for one value of ``published_only``."""

    names: NameIndex
    authors: NameIndex
    tags: dict[str, str]  # folded form (inflections included) -> tag
    titles: list[Named]  # longest first
    topics: list[Named]
    pages: set[str]
    field_values: dict[str, list[Named]] = field(default_factory=dict)  # relation -> its values, longest first


@dataclass
class GraphIndex:
    """What a bundle's graph offers for recognition, read once per bundle (cached on it)."""

    mapping: GraphMapping
    vocabulary: Vocabulary
    persons: dict[str, Person]
    person_kind: str
    by_published: dict[bool, Published]
    has_works: bool
    work_types: list[str] = field(default_factory=list)


def _named(text: str) -> tuple[str, ...]:
    return tuple(t.folded for t in tokenize(text))


def graph_index(bundle: OpenedBundle) -> GraphIndex:
    """Return the bundle's :class:`GraphIndex`, building it on first use."""
    with bundle.graph_lock:
        cached = bundle.graph_cache.get("index")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        conn = bundle.graph_connection()
        rows = fetch_rows(conn, "MATCH (p:Person) RETURN p.id, p.name, p.kind, p.path, p.start_year, p.published")
        persons = {r[0]: Person(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in rows}
        kind = "page" if any(p.kind == "page" for p in persons.values()) else "author"
        author_rows = fetch_rows(conn, "MATCH (d:Document)-[:HAS_DOCUMENT_AUTHOR]->(a:DocumentAuthor) "
                                       "RETURN DISTINCT a.name, d.published")
        tag_rows = fetch_rows(conn, "MATCH (d:Document)-[:TAGGED]->(t:Tag) RETURN DISTINCT t.name, d.published")
        doc_rows = fetch_rows(conn, "MATCH (d:Document) RETURN d.title, d.path, d.published")
        topic_rows = fetch_rows(conn, "MATCH (t:Topic) RETURN t.id, t.name, t.path")
        # a person of kind "author" exists when one of their documents is published
        author_published = {r[0] for r in fetch_rows(
            conn, "MATCH (d:Document)-[:AUTHORED_BY]->(p:Person) WHERE d.published RETURN DISTINCT p.id")}
        has_works = bool(fetch_rows(conn, "MATCH (w:Work) RETURN w.id LIMIT 1"))
        mapping = mapping_from_config(bundle.manifest.config.model_dump().get("graph_mapping"))
        # the FieldValue tables exist only in a graph whose mapping declares relations
        value_rows = fetch_rows(conn, "MATCH (d:Document)-[:HAS_FIELD]->(v:FieldValue) "
                                      "RETURN DISTINCT v.relation, v.name, d.published") if mapping.relations else []
        vocabulary = Vocabulary.from_mapping(mapping)

        def build(published_only: bool) -> Published:
            def visible(person: Person) -> bool:
                if not published_only:
                    return True
                return person.published if person.kind == "page" else person.id in author_published

            chosen = [p for p in persons.values() if p.kind == kind and visible(p)]
            # an author's id (a slug of the authors file, "zoul") names them too, unless one of its
            # words is a word of some person's name ("jakub" when there are several Jakubs), a
            # stop word or shorter than 3 letters
            name_words = {fold(t) for p in chosen for t in name_tokens(p.name)}
            slugs = [NameEntry(p.id, p.name, name_tokens(p.id), id_form=True) for p in chosen
                     if p.kind == "author" and fold(p.id) != fold(p.name) and name_tokens(p.id)
                     and all(len(t) >= 3 and fold(t) not in name_words and fold(t) not in vocabulary.stopwords
                             for t in name_tokens(p.id))]
            pages = {path for _, path, pub in doc_rows if pub or not published_only}
            tags: dict[str, str] = {}
            for name, pub in tag_rows:
                if pub or not published_only:
                    for form in name_forms(name) | {name.lower()}:
                        tags.setdefault(fold(form).replace(" ", ""), name)
            titles = [Named(_named(t), t, p, p) for t, p, pub in doc_rows
                      if (pub or not published_only) and len(fold(t)) >= _MIN_TITLE_CHARS]
            topics = []
            for tid, tname, tpath in topic_rows:
                if tpath is not None and tpath not in pages:
                    continue
                topics.append(Named(_named(tid), tname, tpath, tid))
                if tname and _named(tname) != _named(tid):
                    topics.append(Named(_named(tname), tname, tpath, tid))
            return Published(
                names=NameIndex.build([NameEntry(p.id, p.name, name_tokens(p.name)) for p in chosen] + slugs),
                authors=NameIndex.build(NameEntry(a, a, name_tokens(a))
                                        for a in sorted({n for n, pub in author_rows if pub or not published_only})),
                tags=tags,
                titles=sorted(titles, key=lambda n: (-len(n.words), n.path or "")),
                topics=sorted(topics, key=lambda n: (-len(n.words), n.ref)),
                pages=pages,
                field_values={
                    relation: sorted({Named(_named(name), name, None, name) for r, name, pub in value_rows
                                      if r == relation and (pub or not published_only) and _named(name)},
                                     key=lambda n: (-len(n.words), n.ref))
                    for relation in mapping.relations
                },
            )

        index = GraphIndex(
            mapping=mapping,
            vocabulary=vocabulary,
            persons=persons,
            person_kind=kind,
            by_published={True: build(True), False: build(False)},
            has_works=has_works,
            work_types=sorted(mapping.works.types) if mapping.works else [],
        )
        bundle.graph_cache["index"] = index
        return index
