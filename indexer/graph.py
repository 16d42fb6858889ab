"""Write a bundle's ``graph/`` database from parsed documents.

The schema and its provenance rules are described in :mod:`artifacts.graphschema`.  Loading is
bulk only: every table is written to a CSV file and loaded with one ``COPY ... FROM`` (row by row
Cypher inserts are two orders of magnitude slower).  Rows are de-duplicated and sorted before they
are written, so the same documents in any order give the same logical graph
(:func:`artifacts.graphschema.graph_digest`), even though database files never compare equal
byte for byte.

CSV dialect, as ladybug 0.22 reads it (pinned by ``tests/indexer/test_graph.py``):

* ``AUTO_DETECT`` (on by default) sniffs delimiter, quote and escape from the file's content.
  On a one-column file of quoted strings it chose "no quote character" and silently stored the
  fields verbatim, quotes included; a NUL byte in a field made the load fail.  It is switched
  off and every option is given explicitly.
* Quoted newlines (``\\n``, ``\\r\\n``, ``\\r``) are rejected by the parallel reader:
  ``PARALLEL=false``.
* ``ESCAPE='"'`` (RFC 4180 doubling, as Python's csv writes) is ladybug's default, unlike the
  ``\\`` that Kùzu's documentation names; it is set explicitly.  Backslashes are then literal.
* With those options a quoted field round-trips ``,``, ``"``, newlines, backslashes, tabs,
  control characters, NUL, leading/trailing spaces, ``NULL``, ``\\N`` and any UTF-8 text.
* An *unquoted* empty field is NULL; a quoted empty field ``""`` is the empty string in a
  ``STRING`` column (but NULL in ``INT64``).  See :class:`_Null` for how NULL is written.
* ``STRING[]`` columns parse ``[a,b]`` and keep quotes inside elements (``["x,y"]`` ->
  ``'"x,y"'``), so lists are stored as JSON strings instead.
* A relationship CSV's first two columns are the FROM and TO primary keys, then properties.
"""

from __future__ import annotations

import csv
import json
import shutil
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ladybug
import pygit2

from artifacts.graphmap import (
    AUTHOR_FILE_NAMES,
    PRESETS,
    REPO_MAPPING_FILE,
    GraphMapping,
    GraphMappingError,
    MappingChoice,
    detect_mapping,
    mapping_from_config,
    read_author_names,
    select_mapping,
)
from artifacts.graphschema import (
    GRAPH_DB_FILENAME,
    count_graph,
    document_fact_chunks,
    graph_digest,
    name_key,
    open_graph,
    schema_ddl,
    schema_tables,
)
from artifacts.records import Chunk, Document

from .graph_extract import Extraction, extract, permalink_links, url_link_targets

COPY_OPTIONS = "HEADER=true, DELIM=',', QUOTE='\"', ESCAPE='\"', PARALLEL=false, AUTO_DETECT=false"
"""Options of every ``COPY ... FROM`` CSV load; they must match :func:`_write_csv`."""


class GraphWriteError(RuntimeError):
    """The graph database was written but does not hold what was loaded into it.

    Raised when a ``.wal`` or other extra file remains after checkpoint and close, or when the
    row counts read back differ from the rows written.
    """


@dataclass
class GraphStats:
    """What :func:`write_graph` wrote.

    ``nodes`` and ``relationships`` map every table of the schema (empty ones included) to its
    row count, read back from the closed and re-opened database; ``digest`` is its
    :func:`~artifacts.graphschema.graph_digest` (sha256 hex); ``seconds`` the wall-clock time of
    the whole call.
    """

    nodes: dict[str, int]
    relationships: dict[str, int]
    digest: str
    seconds: float


class _Null(int):
    """CSV NULL marker: written by ``csv.writer`` as an unquoted empty field.

    With ``QUOTE_NONNUMERIC`` the csv module quotes every field that is not a number, ``None``
    included (written as ``""``, which ladybug reads as the empty string).  Python 3.11 has no
    ``QUOTE_NOTNULL``; a number whose text is empty is the one value it writes bare and empty.
    """

    def __str__(self) -> str:
        return ""


_NULL = _Null()

Row = tuple[Any, ...]


def _nfc_name(value: str) -> str:
    return unicodedata.normalize("NFC", value).strip()


def _or_null(value: Any) -> Any:
    return _NULL if value is None else value


def _collect_rows(
    docs: Sequence[Document],
    chunk_ids: dict[str, list[str]],
    mapping: GraphMapping,
    heading_paths: dict[str, tuple[str, ...]],
    author_names: dict[str, str] | None = None,
    chunk_texts: dict[str, str] | None = None,
) -> dict[str, list[Row]]:
    """Return the de-duplicated, sorted CSV rows of every table, keyed by table name.

    Node rows hold the properties in schema order; relationship rows start with the FROM and TO
    primary keys.  ``None`` becomes ``_NULL``, booleans ``"true"``/``"false"``.

    :raises ValueError: two documents share a path.
    """
    counts = Counter(doc.path for doc in docs)
    duplicates = sorted(path for path, n in counts.items() if n > 1)
    if duplicates:
        raise ValueError(f"duplicate document paths: {duplicates[:5]}")
    known = set(counts)

    node_tables, rel_tables = schema_tables(bool(mapping.relations))
    out = Extraction([t.name for t in node_tables] + [t.name for t in rel_tables])
    ordered = sorted(docs, key=lambda d: d.path)
    texts = chunk_texts or {}
    for doc in ordered:
        ids = list(chunk_ids.get(doc.path, []))
        page_chunks = [(cid, texts[cid]) for cid in ids if cid in texts]
        names = author_names or {}
        authors = [a for author in doc.authors for a in dict.fromkeys((author, names.get(author, author)))]
        fact_chunks = document_fact_chunks(doc.tags, doc.categories, authors, doc.date, doc.year, page_chunks)
        out.add(
            "Document",
            (
                doc.path,
                doc.title,
                doc.title_source,
                doc.blob_id,
                "true" if doc.published else "false",
                doc.date,
                doc.year,
                json.dumps(ids, ensure_ascii=False),
                len(ids),
                json.dumps(fact_chunks, ensure_ascii=False, sort_keys=True),
            ),
        )
        for table, rel, values in (("Tag", "TAGGED", doc.tags), ("Category", "IN_CATEGORY", doc.categories)):
            for name in filter(None, map(_nfc_name, values)):
                out.add(table, (name, name_key(name)))
                out.add(rel, (doc.path, name))
        if doc.year is not None:
            out.add("Year", (doc.year,))
            out.add("IN_YEAR", (doc.path, doc.year))
        for relation, fields in mapping.relation_fields().items():
            for value in _field_values(doc.front_matter, fields):
                out.add("FieldValue", (f"{relation}:{value}", relation, value, name_key(value)))
                out.add("HAS_FIELD", (doc.path, f"{relation}:{value}", relation))
        for link in doc.links:
            if link.resolved is None or link.resolved not in known:
                continue  # unresolved, or resolved to a file that is not an indexed document
            out.add("LINKS_TO", (doc.path, link.resolved, link.kind, link.heading, link.alias))
    for source, target in permalink_links(ordered, mapping):
        out.add("LINKS_TO", (source, target, "url", None, None))
    extract(ordered, chunk_ids, heading_paths, mapping, out, author_names, texts)
    return {
        table: [tuple(_or_null(v) for v in row) for row in sorted(found, key=_row_order)]
        for table, found in out.rows.items()
    }


def _field_values(front_matter: dict[str, Any], fields: list[str]) -> list[str]:
    """The values of ``fields`` in a page's front matter (strings and numbers, alone or in a list), NFC,
    stripped, empty ones dropped, each once in order."""
    values: list[str] = []
    for name in fields:
        value = front_matter.get(name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str | int | float) and not isinstance(item, bool) and (text := _nfc_name(str(item))):
                values.append(text)
    return list(dict.fromkeys(values))


def _row_order(row: Row) -> tuple[Any, ...]:
    """Sort key of a row whose columns may be NULL: NULL before any value, ``""`` included."""
    return tuple(item for value in row for item in (value is not None, value if value is not None else ""))


def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Row]) -> None:
    """Write ``rows`` under ``header`` as UTF-8 CSV: strings quoted, numbers and NULL bare."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def _cypher_string(text: str) -> str:
    """Return ``text`` as a single-quoted Cypher string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def write_graph(
    docs: list[Document],
    chunk_ids: dict[str, list[str]],
    graph_dir: Path,
    *,
    work_dir: Path,
    mapping: GraphMapping | dict[str, Any] | None = None,
    chunks: Sequence[Chunk] | None = None,
    author_names: dict[str, str] | None = None,
) -> GraphStats:
    """Build the graph database ``graph_dir/graph.lbug`` from ``docs``.

    Creates the schema, bulk-loads every non-empty table from CSV files written to a temporary
    directory under ``work_dir`` (removed afterwards), checkpoints and closes the database, checks
    that only ``graph.lbug`` remains in ``graph_dir`` (no ``.wal``), then re-opens it read-only to
    count rows and compute the digest.  An empty ``docs`` list gives a valid, empty graph.  On
    error the partial database is left in ``graph_dir``; callers build inside a staging
    directory that is discarded.

    :param docs: the commit's documents, any order; paths must be unique.
    :param chunk_ids: document path -> its chunk ids in ordinal order (a missing path means no
        chunks); stored as ``Document.chunk_ids``.
    :param graph_dir: the bundle's ``graph/`` directory; created if missing, must be empty.
    :param work_dir: scratch directory for the CSV files (created if missing).
    :param mapping: the graph mapping (:mod:`artifacts.graphmap`), or its canonical form as
        recorded in ``BuildConfig.graph_mapping``; default (``None``) the ``generic`` preset.
    :param chunks: the documents' chunks; their heading paths give sections their chunk ids, their
        texts the chunks that state each fact (``Document.fact_chunks``, ``Work.chunk_ids``; without
        them a section cites no chunk and no fact is stated in a chunk).
    :param author_names: author id -> name (:func:`load_author_names`); front matter authors found
        there become persons with that name (their ``id`` stays the id).
    :returns: row counts per table, logical digest and seconds taken.
    :raises ValueError: two documents share a path.
    :raises FileExistsError: ``graph_dir`` exists and is not empty.
    :raises GraphWriteError: files other than ``graph.lbug`` remain, or counts read back differ.
    :raises RuntimeError: ladybug failed a statement (schema or COPY).
    """
    started = time.perf_counter()
    graph_dir = Path(graph_dir)
    if graph_dir.exists() and any(graph_dir.iterdir()):
        raise FileExistsError(f"graph directory is not empty: {graph_dir}")
    heading_paths = {c.chunk_id: tuple(c.heading_path) for c in chunks or ()}
    chunk_texts = {c.chunk_id: c.text for c in chunks or ()}
    if not isinstance(mapping, GraphMapping):
        mapping = mapping_from_config(mapping)
    rows = _collect_rows(docs, chunk_ids, mapping, heading_paths, author_names, chunk_texts)

    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    csv_dir = Path(tempfile.mkdtemp(prefix="graph-csv-", dir=work_dir))
    try:
        db, conn = open_graph(graph_dir, read_only=False)
        try:
            relations = bool(mapping.relations)
            node_tables, rel_tables = schema_tables(relations)
            for statement in schema_ddl(relations):
                conn.execute(statement)
            for node in node_tables:
                header = [name for name, _ in node.properties]
                _load(conn, node.name, header, rows[node.name], csv_dir)
            for rel in rel_tables:
                header = ["from", "to"] + [name for name, _ in rel.properties]
                _load(conn, rel.name, header, rows[rel.name], csv_dir)
            conn.execute("CHECKPOINT;")
        finally:
            conn.close()
            db.close()
    finally:
        shutil.rmtree(csv_dir, ignore_errors=True)

    leftovers = sorted(p.name for p in graph_dir.iterdir() if p.name != GRAPH_DB_FILENAME)
    if leftovers:
        raise GraphWriteError(f"files left next to the graph database: {leftovers}")

    db, conn = open_graph(graph_dir, read_only=True)
    try:
        nodes, relationships = count_graph(conn, bool(mapping.relations))
        digest = graph_digest(conn, bool(mapping.relations))
    finally:
        conn.close()
        db.close()
    expected = {name: len(table_rows) for name, table_rows in rows.items()}
    found = {**nodes, **relationships}
    if found != expected:
        raise GraphWriteError(f"row counts read back {found} differ from rows written {expected}")
    return GraphStats(nodes, relationships, digest, time.perf_counter() - started)


def _load(
    conn: ladybug.Connection, table: str, header: list[str], rows: list[Row], csv_dir: Path
) -> None:
    """Write ``rows`` to ``csv_dir/<table>.csv`` and ``COPY`` them into ``table``; skip if empty."""
    if not rows:
        return  # COPY of a header-only file is not needed, and an empty table is valid
    path = csv_dir / f"{table}.csv"
    _write_csv(path, header, rows)
    conn.execute(f"COPY {table} FROM {_cypher_string(str(path))} ({COPY_OPTIONS})")


DETECTION_SAMPLE = 200
"""At most this many Markdown files (evenly spread over the sorted paths) are parsed to detect a preset."""

MAX_AUTHOR_FILE_BYTES = 1024 * 1024


def choose_graph_mapping(
    repo: pygit2.Repository, tree: str, option: str | None, include: list[str] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """Choose the graph mapping of a build and say why.

    :param repo: the indexed repository.
    :param tree: sha (hex) of the indexed commit's tree.
    :param option: ``--graph-schema``: a preset name or a YAML file path, or ``None``.
    :param include: the build's ``--include`` patterns (:func:`artifacts.config.path_included`): only
        those pages are sampled (default: every page).
    :returns: ``(canonical mapping, choice)``; ``choice`` is
        :class:`artifacts.graphmap.MappingChoice` as a dict (``name``, ``source``: ``option`` |
        ``repository_file`` | ``detected``, ``reason``).  Without ``option``, the tree's root
        ``graph-schema.yaml`` is used when present, else :func:`artifacts.graphmap.detect_mapping`
        looks at up to :data:`DETECTION_SAMPLE` parsed pages and the tree's authors files.
    :raises artifacts.graphmap.GraphMappingError: unknown preset, missing file, invalid mapping.
    """
    root = repo[tree]
    if option is not None:
        mapping = select_mapping(option, None)
        kind = "preset" if option in PRESETS else "mapping file"
        choice = MappingChoice(name=mapping.name, source="option", reason=f"--graph-schema names the {kind}")
        return mapping.canonical(), choice.model_dump()
    if REPO_MAPPING_FILE in root:  # type: ignore[operator]
        entry = root[REPO_MAPPING_FILE]  # type: ignore[index]
        if entry.type_str == "blob":
            try:
                text = repo[entry.id].data.decode("utf-8")  # type: ignore[attr-defined]
            except UnicodeDecodeError:
                raise GraphMappingError(f"{REPO_MAPPING_FILE} is not UTF-8") from None
            mapping = select_mapping(None, text)
            choice = MappingChoice(name=mapping.name, source="repository_file",
                                   reason=f"{REPO_MAPPING_FILE} at the root of the commit")
            return mapping.canonical(), choice.model_dump()
    mapping, choice = _detect(repo, root, include)
    return mapping.canonical(), choice.model_dump()


def _detect(repo: pygit2.Repository, root: Any, include: list[str] | None = None) -> tuple[GraphMapping, MappingChoice]:
    from artifacts.config import path_included
    from artifacts.gittree import markdown_entries

    entries = [e for e in markdown_entries(repo, root) if path_included(e[0], include or [])]
    step = max(1, -(-len(entries) // DETECTION_SAMPLE))
    docs, url_links = _sample(repo, entries[::step])
    if step > 1 and any("slug" in d.front_matter for d in docs):
        # permalinks are judged by how many URL links end in a page's slug: that needs every slug
        docs, url_links = _sample(repo, entries)
    data_files: dict[str, str] = {}
    for path, entry in _data_files(repo, root, ""):
        if entry.size <= MAX_AUTHOR_FILE_BYTES:
            try:
                data_files[path] = repo[entry.id].data.decode("utf-8")  # type: ignore[attr-defined]
            except UnicodeDecodeError:
                continue
    return detect_mapping(docs, data_files, url_links)


def _sample(repo: pygit2.Repository, entries: list[tuple[str, Any]]) -> tuple[list[Document], dict[str, list[str]]]:
    """Parse ``entries`` (path, tree entry) as the build would; skip what the build would skip."""
    from .markdown import parse_markdown, resolve_links

    docs: list[Document] = []
    url_links: dict[str, list[str]] = {}
    for path, entry in entries:
        if entry.filemode == pygit2.GIT_FILEMODE_LINK or entry.size > MAX_AUTHOR_FILE_BYTES * 2:
            continue
        try:
            doc = parse_markdown(path, repo[entry.id].data, blob_id=str(entry.id),  # type: ignore[attr-defined]
                                 max_bytes=MAX_AUTHOR_FILE_BYTES * 2)
        except Exception:  # noqa: BLE001 - a file the build will skip with a reason
            continue
        docs.append(doc)
        url_links[doc.path] = url_link_targets(doc)
    resolve_links(docs)
    return docs, url_links


def _data_files(repo: pygit2.Repository, tree: Any, prefix: str) -> list[tuple[str, Any]]:
    """``[(path, entry)]`` of blobs named like an authors file (:data:`AUTHOR_FILE_NAMES`), sorted."""
    found: list[tuple[str, Any]] = []
    for entry in tree:
        name = entry.name or ""
        if entry.type_str == "tree":
            found.extend(_data_files(repo, repo[entry.id], f"{prefix}{name}/"))
        elif entry.type_str == "blob" and name.lower() in AUTHOR_FILE_NAMES:
            found.append((prefix + name, entry))
    return sorted(found, key=lambda item: item[0])


def load_author_names(
    repo: pygit2.Repository, tree: str, mapping: GraphMapping | dict[str, Any] | None
) -> dict[str, str]:
    """Return author id -> name from the mapping's ``author_names`` file in ``tree`` ({} when none).

    A missing, oversized, non-UTF-8 or malformed file gives ``{}`` (authors then keep their ids as
    names); the build never fails on it.
    """
    if not isinstance(mapping, GraphMapping):
        mapping = mapping_from_config(mapping)
    spec = mapping.author_names
    if spec is None:
        return {}
    node: Any = repo[tree]
    try:
        for part in spec.file.split("/"):
            node = repo[node[part].id]
        if node.type_str != "blob" or node.size > MAX_AUTHOR_FILE_BYTES:
            return {}
        return read_author_names(node.data.decode("utf-8"), spec)
    except (KeyError, UnicodeDecodeError, AttributeError):
        return {}
