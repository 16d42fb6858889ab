"""The generic graph schema of a bundle's ``graph/`` database, shared by writer and reader.

The database is an embedded ladybug (the maintained fork of Kùzu) file
``graph/graph.lbug``, written once by ``indexer.graph.write_graph``, checkpointed and closed so
that no ``.wal`` file remains, and opened read-only by the query side.

Schema (version :data:`artifacts.config.GRAPH_SCHEMA_VERSION`; any change below is a bump)::

    Document(path PK, title, title_source, blob_id, published BOOL, date, year INT64,
             chunk_ids, chunk_count INT64, fact_chunks)
    Section(id PK, path, ordinal INT64, level INT64, heading, heading_path, chunk_ids)
    Person(id PK, name, key, kind, path, start_year INT64, published BOOL, chunk_ids)
    DocumentAuthor(name PK, key)
    Work(id PK, type, type_label, year INT64, title, path, section_id, published BOOL, chunk_ids)
    Topic(id PK, name, key, path)
    Alias(name PK, key)
    Tag(name PK, key)           one per distinct tag
    Category(name PK, key)      one per distinct category
    Year(year INT64 PK)         one per distinct ``Document.year`` or ``Work.year``

    AUTHORED_BY(Document -> Person)                 front matter author, mapping ``authors: person``
    HAS_DOCUMENT_AUTHOR(Document -> DocumentAuthor) front matter author, ``authors: document_author``
    TAGGED(Document -> Tag)
    IN_CATEGORY(Document -> Category)
    IN_YEAR(Document -> Year)
    LINKS_TO(Document -> Document, kind, heading, alias)
    HAS_SECTION(Document -> Section)                every heading of the body
    NEXT_SECTION(Section -> Section)                document order
    SUBSECTION_OF(Section -> Section)               child -> enclosing heading
    DESCRIBES(Document -> Person, path)             a person page and its person
    HAS_WORK(Person -> Work, path)
    WORK_IN_YEAR(Work -> Year, path)
    DESCRIBED_IN(Work -> Section, path)             the section the work's title was read from
    HAS_TOPIC(Document -> Topic, via, path)         ``via``: ``page``, ``tag`` or ``link``
    HAS_ALIAS(Document -> Alias)

    FieldValue(id PK, relation, name, key)          only with a mapping that declares ``relations``
    HAS_FIELD(Document -> FieldValue, relation)     a front matter field's value (``owner: alice``)

Which of these are filled depends on the graph mapping of the build
(:mod:`artifacts.graphmap`): the ``generic`` preset fills the front-matter tables, sections and
links; ``thesis-wiki`` adds student ``Person`` nodes (one per person page, so two students with
the same name are two nodes), their ``Work`` nodes and ``Topic`` nodes, and keeps the front
matter ``author`` (a supervisor) apart as ``DocumentAuthor``.

Property notes:

* Strings are stored exactly as parsed (NFC); person, tag and category names are also stripped
  of surrounding whitespace, and empty names are dropped.  ``date``, ``year``, ``heading`` and
  ``alias`` are NULL when absent (``""`` stays ``""``); so are ``Person.path``,
  ``Person.start_year``, ``Work.title`` (a work whose section has no title line, or no section),
  ``Work.section_id`` and ``Topic.path``.
* ``Person.id`` is the person page's path for ``kind = "page"`` and the front matter value for
  ``kind = "author"`` (front matter authors of the generic mapping); its ``name`` is that value,
  or the name an ``author_names`` file of the mapping gives that id.  ``Work.id`` is
  ``<path>#<type><year>``; ``Section.id`` is ``<path>#s<ordinal>`` (0-based, document order).
* ``key`` is the lookup form of a name: lowercased, diacritics folded, punctuation dropped,
  words joined by one space (:func:`name_key`, the same folding as the text index), so
  ``"Ján Novák"`` and ``"jan  novak"`` share the key ``"jan novak"``.  Keys are not unique,
  and change with :data:`artifacts.config.ANALYZER_VERSION` as well as with the schema version.
* ``chunk_ids`` is a JSON array (string) of chunk ids in ordinal order, ``chunk_count`` its
  length.  It is JSON rather than ``STRING[]`` because the CSV list syntax cannot carry elements
  containing ``,``, ``[`` or ``"`` (paths may contain them).  ``heading_path`` is JSON too.
* ``LINKS_TO.kind`` is ``"wikilink"``, ``"markdown"`` or ``"url"`` (a web URL or site path resolved
  through the mapping's ``permalinks``); one edge per distinct
  ``(from, to, kind, heading, alias)``.

Provenance: ``Section``, page ``Person``, ``Work`` and page ``Topic`` nodes carry the ``path``
of the document they were read from and the ``chunk_ids`` holding their text (a section's
chunks, a person's page chunks; a work's: the chunks of its section -- else of its page -- whose
text states its title and year, :func:`chunks_stating`; ``[]`` when none does).  Since schema 3,
``Document.fact_chunks`` (JSON object) keeps, per front matter value of the document, the chunks
of that document whose text states it: keys :func:`fact_key` (``"tag:<key>"``, ``"category:<key>"``,
``"author:<key>"``, ``"year:<yyyy>"``, ``"date:<date>"``), values chunk id lists (``[]``: the value
is only in the front matter).  Relationships between entities carry
``path``; the other relationships start at the ``Document`` they were read from, so their
provenance is the FROM node's ``path`` (and that document's ``chunk_ids``).  ``Tag``,
``Category``, ``Year``, ``Alias`` and ``DocumentAuthor`` nodes exist only because at least one
relationship points at them; the documents they came from are that relationship's provenance.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from artifacts.analysis import fold
from artifacts.errors import BundleIntegrityError

if TYPE_CHECKING:  # imported where a graph is opened: a search or a server start needs no ladybug
    import ladybug

GRAPH_DB_FILENAME = "graph.lbug"
"""File name of the ladybug database inside a bundle's ``graph/`` directory."""


@dataclass(frozen=True)
class NodeTable:
    """A node table: ``name``, its primary-key property and ordered ``(property, type)`` pairs."""

    name: str
    primary_key: str
    properties: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class RelTable:
    """A relationship table from ``source`` to ``target`` with ``(property, type)`` pairs."""

    name: str
    source: str
    target: str
    properties: tuple[tuple[str, str], ...] = ()


_NAMED = (("name", "STRING"), ("key", "STRING"))
_PROV = (("path", "STRING"),)

NODE_TABLES: tuple[NodeTable, ...] = (
    NodeTable(
        "Document",
        "path",
        (
            ("path", "STRING"),
            ("title", "STRING"),
            ("title_source", "STRING"),
            ("blob_id", "STRING"),
            ("published", "BOOL"),
            ("date", "STRING"),
            ("year", "INT64"),
            ("chunk_ids", "STRING"),
            ("chunk_count", "INT64"),
            ("fact_chunks", "STRING"),
        ),
    ),
    NodeTable(
        "Section",
        "id",
        (
            ("id", "STRING"),
            ("path", "STRING"),
            ("ordinal", "INT64"),
            ("level", "INT64"),
            ("heading", "STRING"),
            ("heading_path", "STRING"),
            ("chunk_ids", "STRING"),
        ),
    ),
    NodeTable(
        "Person",
        "id",
        (
            ("id", "STRING"),
            ("name", "STRING"),
            ("key", "STRING"),
            ("kind", "STRING"),
            ("path", "STRING"),
            ("start_year", "INT64"),
            ("published", "BOOL"),
            ("chunk_ids", "STRING"),
        ),
    ),
    NodeTable("DocumentAuthor", "name", _NAMED),
    NodeTable(
        "Work",
        "id",
        (
            ("id", "STRING"),
            ("type", "STRING"),
            ("type_label", "STRING"),
            ("year", "INT64"),
            ("title", "STRING"),
            ("path", "STRING"),
            ("section_id", "STRING"),
            ("published", "BOOL"),
            ("chunk_ids", "STRING"),
        ),
    ),
    NodeTable("Topic", "id", (("id", "STRING"), ("name", "STRING"), ("key", "STRING"), ("path", "STRING"))),
    NodeTable("Alias", "name", _NAMED),
    NodeTable("Tag", "name", _NAMED),
    NodeTable("Category", "name", _NAMED),
    NodeTable("Year", "year", (("year", "INT64"),)),
)
"""Node tables in creation (and bulk-load) order."""

REL_TABLES: tuple[RelTable, ...] = (
    RelTable("AUTHORED_BY", "Document", "Person"),
    RelTable("HAS_DOCUMENT_AUTHOR", "Document", "DocumentAuthor"),
    RelTable("TAGGED", "Document", "Tag"),
    RelTable("IN_CATEGORY", "Document", "Category"),
    RelTable("IN_YEAR", "Document", "Year"),
    RelTable(
        "LINKS_TO",
        "Document",
        "Document",
        (("kind", "STRING"), ("heading", "STRING"), ("alias", "STRING")),
    ),
    RelTable("HAS_SECTION", "Document", "Section"),
    RelTable("NEXT_SECTION", "Section", "Section"),
    RelTable("SUBSECTION_OF", "Section", "Section"),
    RelTable("DESCRIBES", "Document", "Person", _PROV),
    RelTable("HAS_WORK", "Person", "Work", _PROV),
    RelTable("WORK_IN_YEAR", "Work", "Year", _PROV),
    RelTable("DESCRIBED_IN", "Work", "Section", _PROV),
    RelTable("HAS_TOPIC", "Document", "Topic", (("via", "STRING"), ("path", "STRING"))),
    RelTable("HAS_ALIAS", "Document", "Alias"),
)
"""Relationship tables in creation (and bulk-load) order; all node tables come first."""

FIELD_NODE_TABLES: tuple[NodeTable, ...] = (
    NodeTable("FieldValue", "id", (("id", "STRING"), ("relation", "STRING"), ("name", "STRING"), ("key", "STRING"))),
)
"""Node tables of a mapping with ``relations`` (:class:`artifacts.graphmap.Relation`): one ``FieldValue``
per (relation, value), ``id`` ``<relation>:<value>``.  A graph of a mapping without relations has none of
these tables, so its schema, digest and counts are what they were before relations existed."""

FIELD_REL_TABLES: tuple[RelTable, ...] = (RelTable("HAS_FIELD", "Document", "FieldValue", (("relation", "STRING"),)),)
"""Relationship tables of a mapping with ``relations``: a document and the value of its front matter field."""

_NODE_BY_NAME = {table.name: table for table in NODE_TABLES + FIELD_NODE_TABLES}


def schema_tables(relations: bool) -> tuple[tuple[NodeTable, ...], tuple[RelTable, ...]]:
    """``(node tables, relationship tables)`` of a graph; ``relations``: the mapping declares relations."""
    if relations:
        return NODE_TABLES + FIELD_NODE_TABLES, REL_TABLES + FIELD_REL_TABLES
    return NODE_TABLES, REL_TABLES


def _node_ddl(table: NodeTable) -> str:
    columns = ", ".join(f"{name} {type_}" for name, type_ in table.properties)
    return f"CREATE NODE TABLE {table.name}({columns}, PRIMARY KEY ({table.primary_key}))"


def _rel_ddl(table: RelTable) -> str:
    columns = "".join(f", {name} {type_}" for name, type_ in table.properties)
    return f"CREATE REL TABLE {table.name}(FROM {table.source} TO {table.target}{columns})"


def schema_ddl(relations: bool = False) -> list[str]:
    """``CREATE NODE TABLE`` / ``CREATE REL TABLE`` statements, run in order on an empty database."""
    nodes, rels = schema_tables(relations)
    return [_node_ddl(t) for t in nodes] + [_rel_ddl(t) for t in rels]


SCHEMA_DDL: list[str] = schema_ddl()
"""The statements of a graph whose mapping declares no relations."""


def name_key(name: str) -> str:
    """Return the lookup key of a person, tag or category name.

    :param name: the name as written in the document, any normalisation form.
    :returns: NFC, lowercased, diacritics folded, punctuation dropped, words joined by one
        space (``"Ing. Ján Novák, PhD."`` -> ``"ing jan novak phd"``); ``""`` for a name with
        no word characters.
    """
    return fold(name)


def value_words(value: Any) -> tuple[str, ...]:
    """The folded words of a fact value (a title, name, tag, year or date), as :func:`chunks_stating`
    compares them."""
    return tuple(fold(str(value)).split())


def _holds(words: list[str], wanted: tuple[str, ...]) -> bool:
    n = len(wanted)
    return any(words[i : i + n] == list(wanted) for i in range(len(words) - n + 1))


def chunks_stating(values: Iterable[Any], chunks: Iterable[tuple[str, str]]) -> list[str]:
    """Ids of the ``(chunk id, text)`` chunks whose text states every one of ``values``: each value's
    folded words occur consecutively among the chunk's folded words (``"Daniel Hládek"`` in "Ing.
    Daniel Hládek, PhD.", the tag ``asr`` in "[[asr]]", ``2021`` in "## Diplomová práca 2021").
    Values without a word (``None``, ``""``) are ignored; no value at all states nothing (``[]``)."""
    wanted = [w for w in (value_words(v) for v in values if v is not None) if w]
    if not wanted:
        return []
    return [chunk_id for chunk_id, words in _folded(chunks) if all(_holds(words, w) for w in wanted)]


def _folded(chunks: Iterable[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    return [(chunk_id, fold(text).split()) for chunk_id, text in chunks]


def fact_key(kind: str, value: Any) -> str:
    """Key of ``Document.fact_chunks``: ``kind`` (tag, category, author, year, date) and the value's
    folded words (``fact_key("author", "Daniel Hládek")`` -> ``"author:daniel hladek"``)."""
    return f"{kind}:{' '.join(value_words(value))}"


_YEAR_IN = re.compile(r"(?<![0-9])(?:19|20)[0-9]{2}(?![0-9])")


def document_fact_chunks(tags: Iterable[str], categories: Iterable[str], authors: Iterable[str],
                         date: str | None, year: int | None, chunks: list[tuple[str, str]]) -> dict[str, list[str]]:
    """``Document.fact_chunks`` of one document: for each front matter tag, category, author name,
    year (of the date, or in a category value: "st2016" -> 2016) and date, the ids of the document's
    ``(chunk id, text)`` chunks that state it (:func:`chunks_stating`)."""
    values: dict[str, Any] = {}
    for kind, items in (("tag", tags), ("category", categories), ("author", authors)):
        for item in items:
            if item and item.strip():
                values.setdefault(fact_key(kind, item), item)
    years = {int(m.group(0)) for c in categories for m in _YEAR_IN.finditer(c)} | ({year} if year else set())
    for y in sorted(years):
        values[fact_key("year", y)] = y
    if date:
        values[fact_key("date", date)] = date
    folded = _folded(chunks)
    return {key: [cid for cid, words in folded if _holds(words, w)] if (w := value_words(value)) else []
            for key, value in sorted(values.items())}


def open_graph(
    graph_dir: Path, read_only: bool = True
) -> tuple[ladybug.Database, ladybug.Connection]:
    """Open the database ``graph_dir/graph.lbug``.

    Read-only opens may happen from several processes at once.  A writable open creates
    ``graph_dir`` and an empty database when missing.  Close with ``conn.close()`` then
    ``db.close()``.

    :param graph_dir: a bundle's ``graph/`` directory.
    :param read_only: open without write access (default); the database must exist.
    :returns: ``(database, connection)``.
    :raises BundleIntegrityError: read-only and the database file is missing or cannot be
        opened (the message names ``graph/graph.lbug``, never an absolute path).
    """
    import ladybug

    db_path = Path(graph_dir) / GRAPH_DB_FILENAME
    if read_only:
        if not db_path.is_file():
            raise BundleIntegrityError(
                "graph database missing", problems=[f"graph/{GRAPH_DB_FILENAME}: missing"]
            )
        try:
            db = ladybug.Database(str(db_path), read_only=True)
        except RuntimeError as exc:
            raise BundleIntegrityError(
                "graph database cannot be opened",
                problems=[f"graph/{GRAPH_DB_FILENAME}: {type(exc).__name__}"],
            ) from exc
    else:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        db = ladybug.Database(str(db_path))
    return db, ladybug.Connection(db)


def fetch_rows(
    conn: ladybug.Connection, cypher: str, parameters: dict[str, Any] | None = None
) -> list[list[Any]]:
    """Run one Cypher statement and return all its rows as lists (column order of ``RETURN``).

    :raises RuntimeError: ladybug rejected or failed the statement.
    """
    result = conn.execute(cypher, parameters or {})
    if isinstance(result, list):  # several statements in one string: keep the last result
        for extra in result[:-1]:
            extra.close()
        result = result[-1]
    try:
        rows: list[list[Any]] = []
        while result.has_next():
            row = result.get_next()
            rows.append(list(row.values()) if isinstance(row, dict) else list(row))
        return rows
    finally:
        result.close()


def stored_properties(conn: ladybug.Connection, table: str) -> set[str]:
    """Names of the properties ``table`` has in the opened database (a graph written by an older
    schema lacks the newer ones, e.g. ``Document.fact_chunks`` before schema 3)."""
    return {str(row[1]) for row in fetch_rows(conn, f"CALL TABLE_INFO('{table}') RETURN *")}


def count_graph(conn: ladybug.Connection, relations: bool = False) -> tuple[dict[str, int], dict[str, int]]:
    """Return ``(nodes, relationships)``: row counts per node table and per relationship table
    (``relations``: the graph has the tables of :data:`FIELD_NODE_TABLES` and :data:`FIELD_REL_TABLES`)."""
    node_tables, rel_tables = schema_tables(relations)
    nodes = {
        t.name: int(fetch_rows(conn, f"MATCH (n:{t.name}) RETURN count(n)")[0][0])
        for t in node_tables
    }
    rels = {
        t.name: int(fetch_rows(conn, f"MATCH ()-[r:{t.name}]->() RETURN count(r)")[0][0])
        for t in rel_tables
    }
    return nodes, rels


_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _canonical(value: Any) -> str:
    return _CANONICAL.encode(value)


def graph_digest(conn: ladybug.Connection, relations: bool = False) -> str:
    """Return sha256 (hex) over the graph's logical content read back from ``conn``.

    One canonical JSON line per node (``["N", table, {property: value}]``) and per
    relationship (``["R", table, from_key, to_key, {property: value}]``); the lines are sorted
    by code point and joined with ``\\n``.  The digest depends only on the stored values, never
    on insertion order or physical layout, so two builds of the same documents agree even though
    their database files differ byte for byte.  Duplicate relationships count once per copy.

    :param conn: an open connection (read-only or not) to a database with :func:`schema_ddl`.
    :param relations: the graph has the tables of a mapping with relations (:func:`schema_tables`).
    :returns: 64 lowercase hex characters.
    :raises RuntimeError: a table of the schema is missing from the database.
    """
    node_tables, rel_tables = schema_tables(relations)
    lines: list[str] = []
    for node in node_tables:
        names = [name for name, _ in node.properties]
        returns = ", ".join(f"n.{name}" for name in names)
        for row in fetch_rows(conn, f"MATCH (n:{node.name}) RETURN {returns}"):
            lines.append(_canonical(["N", node.name, dict(zip(names, row, strict=True))]))
    for rel in rel_tables:
        names = [name for name, _ in rel.properties]
        source_pk = _NODE_BY_NAME[rel.source].primary_key
        target_pk = _NODE_BY_NAME[rel.target].primary_key
        returns = ", ".join([f"a.{source_pk}", f"b.{target_pk}"] + [f"r.{n}" for n in names])
        cypher = f"MATCH (a:{rel.source})-[r:{rel.name}]->(b:{rel.target}) RETURN {returns}"
        for row in fetch_rows(conn, cypher):
            props = dict(zip(names, row[2:], strict=True))
            lines.append(_canonical(["R", rel.name, row[0], row[1], props]))
    lines.sort()
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
