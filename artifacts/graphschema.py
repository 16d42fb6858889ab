"""The generic graph schema of a bundle's ``graph/`` database, shared by writer and reader.

The database is an embedded ladybug (the maintained fork of Kùzu) file
``graph/graph.lbug``, written once by ``indexer.graph.write_graph``, checkpointed and closed so
that no ``.wal`` file remains, and opened read-only by the query side.

Schema (version :data:`artifacts.config.GRAPH_SCHEMA_VERSION`; any change below is a bump)::

    Document(path PK, title, title_source, blob_id, published BOOL, date, year INT64,
             chunk_ids, chunk_count INT64)
    Person(name PK, key)        one per distinct author name (NFC) in ``Document.authors``
    Tag(name PK, key)           one per distinct tag
    Category(name PK, key)      one per distinct category
    Year(year INT64 PK)         one per distinct ``Document.year``

    AUTHORED_BY(Document -> Person)
    TAGGED(Document -> Tag)
    IN_CATEGORY(Document -> Category)
    IN_YEAR(Document -> Year)
    LINKS_TO(Document -> Document, kind, heading, alias)

Property notes:

* Strings are stored exactly as parsed (NFC); person, tag and category names are also stripped
  of surrounding whitespace, and empty names are dropped.  ``date``, ``year``, ``heading`` and
  ``alias`` are NULL when absent (``""`` stays ``""``); every other property is never NULL.
* ``key`` is the lookup form of a name: lowercased, diacritics folded, punctuation dropped,
  words joined by one space (:func:`name_key`, the same folding as the text index), so
  ``"Ján Novák"`` and ``"jan  novak"`` share the key ``"jan novak"``.  Keys are not unique,
  and change with :data:`artifacts.config.ANALYZER_VERSION` as well as with the schema version.
* ``chunk_ids`` is a JSON array (string) of the document's chunk ids in ordinal order,
  ``chunk_count`` its length.  It is JSON rather than ``STRING[]`` because the CSV list syntax
  cannot carry elements containing ``,``, ``[`` or ``"`` (paths may contain them).
* ``LINKS_TO.kind`` is ``"wikilink"`` or ``"markdown"``; one edge per distinct
  ``(from, to, kind, heading, alias)``.

Provenance: every relationship starts at the ``Document`` it was read from, so a relationship's
provenance is its FROM node's ``path`` (and that document's ``chunk_ids``).  ``Person``,
``Tag``, ``Category`` and ``Year`` nodes carry no provenance of their own: each exists only
because at least one relationship points at it, and the documents it came from are the FROM
nodes of its incoming relationships.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ladybug

from artifacts.analysis import fold
from artifacts.errors import BundleIntegrityError

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
        ),
    ),
    NodeTable("Person", "name", _NAMED),
    NodeTable("Tag", "name", _NAMED),
    NodeTable("Category", "name", _NAMED),
    NodeTable("Year", "year", (("year", "INT64"),)),
)
"""Node tables in creation (and bulk-load) order."""

REL_TABLES: tuple[RelTable, ...] = (
    RelTable("AUTHORED_BY", "Document", "Person"),
    RelTable("TAGGED", "Document", "Tag"),
    RelTable("IN_CATEGORY", "Document", "Category"),
    RelTable("IN_YEAR", "Document", "Year"),
    RelTable(
        "LINKS_TO",
        "Document",
        "Document",
        (("kind", "STRING"), ("heading", "STRING"), ("alias", "STRING")),
    ),
)
"""Relationship tables in creation (and bulk-load) order; all node tables come first."""

_NODE_BY_NAME = {table.name: table for table in NODE_TABLES}


def _node_ddl(table: NodeTable) -> str:
    columns = ", ".join(f"{name} {type_}" for name, type_ in table.properties)
    return f"CREATE NODE TABLE {table.name}({columns}, PRIMARY KEY ({table.primary_key}))"


def _rel_ddl(table: RelTable) -> str:
    columns = "".join(f", {name} {type_}" for name, type_ in table.properties)
    return f"CREATE REL TABLE {table.name}(FROM {table.source} TO {table.target}{columns})"


SCHEMA_DDL: list[str] = [_node_ddl(t) for t in NODE_TABLES] + [_rel_ddl(t) for t in REL_TABLES]
"""``CREATE NODE TABLE`` / ``CREATE REL TABLE`` statements, run in order on an empty database."""


def name_key(name: str) -> str:
    """Return the lookup key of a person, tag or category name.

    :param name: the name as written in the document, any normalisation form.
    :returns: NFC, lowercased, diacritics folded, punctuation dropped, words joined by one
        space (``"Ing. Ján Novák, PhD."`` -> ``"ing jan novak phd"``); ``""`` for a name with
        no word characters.
    """
    return fold(name)


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


def count_graph(conn: ladybug.Connection) -> tuple[dict[str, int], dict[str, int]]:
    """Return ``(nodes, relationships)``: row counts per node table and per relationship table."""
    nodes = {
        t.name: int(fetch_rows(conn, f"MATCH (n:{t.name}) RETURN count(n)")[0][0])
        for t in NODE_TABLES
    }
    rels = {
        t.name: int(fetch_rows(conn, f"MATCH ()-[r:{t.name}]->() RETURN count(r)")[0][0])
        for t in REL_TABLES
    }
    return nodes, rels


_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _canonical(value: Any) -> str:
    return _CANONICAL.encode(value)


def graph_digest(conn: ladybug.Connection) -> str:
    """Return sha256 (hex) over the graph's logical content read back from ``conn``.

    One canonical JSON line per node (``["N", table, {property: value}]``) and per
    relationship (``["R", table, from_key, to_key, {property: value}]``); the lines are sorted
    by code point and joined with ``\\n``.  The digest depends only on the stored values, never
    on insertion order or physical layout, so two builds of the same documents agree even though
    their database files differ byte for byte.  Duplicate relationships count once per copy.

    :param conn: an open connection (read-only or not) to a database with :data:`SCHEMA_DDL`.
    :returns: 64 lowercase hex characters.
    :raises RuntimeError: a table of the schema is missing from the database.
    """
    lines: list[str] = []
    for node in NODE_TABLES:
        names = [name for name, _ in node.properties]
        returns = ", ".join(f"n.{name}" for name in names)
        for row in fetch_rows(conn, f"MATCH (n:{node.name}) RETURN {returns}"):
            lines.append(_canonical(["N", node.name, dict(zip(names, row, strict=True))]))
    for rel in REL_TABLES:
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
