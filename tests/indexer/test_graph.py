"""Tests of ``indexer.graph.write_graph`` and ``artifacts.graphschema`` on real ladybug files."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from artifacts.errors import BundleIntegrityError
from artifacts.graphmap import preset
from artifacts.graphschema import (
    GRAPH_DB_FILENAME,
    NODE_TABLES,
    REL_TABLES,
    SCHEMA_DDL,
    fetch_rows,
    graph_digest,
    name_key,
    open_graph,
    schema_tables,
)
from artifacts.records import Document, Link
from indexer.graph import GraphStats, write_graph

AWKWARD_PATH = 'práce/Ďalší, "návrh".md'
A_TITLE = 'He said "hi", then\nleft — Žilina, Łódź'


def make_docs() -> list[Document]:
    """Four documents: two authors, shared tags, categories, years, links of both kinds."""
    return [
        Document(
            path="a.md",
            blob_id="a" * 40,
            size=10,
            title=A_TITLE,
            title_source="front_matter",
            authors=["Ján Novák", "Eva Malá"],
            tags=["ml", "nlp"],
            categories=["dp2021"],
            date="2021-06-01",
            year=2021,
            links=[
                Link(kind="wikilink", target="b", resolved="b.md"),
                Link(kind="wikilink", target="b", resolved="b.md"),  # duplicate edge
                Link(kind="wikilink", target="b", heading="Intro", resolved="b.md"),
                Link(kind="markdown", target='práce/Ďalší, "návrh".md', resolved=AWKWARD_PATH),
                Link(kind="wikilink", target="Nowhere"),  # resolves to nothing
                Link(kind="markdown", target="ghost.md", resolved="ghost.md"),  # not a document
            ],
        ),
        Document(
            path="b.md",
            blob_id="b" * 40,
            size=10,
            title="Žltý kôň — ÚVOD",
            title_source="heading",
            authors=["Eva Malá"],
            tags=["ml"],
            categories=["bp2019"],
            published=False,
            date="2019-02-03",
            year=2019,
        ),
        Document(
            path=AWKWARD_PATH,
            blob_id="c" * 40,
            size=10,
            title="Plain",
            title_source="filename",
            tags=["nlp", "ml"],
            links=[
                Link(kind="markdown", target="../a.md", alias='back\\slash, "x"', resolved="a.md"),
                Link(kind="wikilink", target="Ďalší", heading="", resolved=AWKWARD_PATH),
            ],
        ),
        Document(
            path="d.md",
            blob_id="d" * 40,
            size=10,
            title="",
            title_source="filename",
            authors=["jan novak"],
        ),
    ]


CHUNK_IDS = {"a.md": ["a.md#0", "a.md#1"], AWKWARD_PATH: [f"{AWKWARD_PATH}#0"]}

# The generic mapping fills only these tables (the documents have no headings); the rest are empty.
# Persons: "Ján Novák" and "jan novak" fold to one name, so one Person (plus Eva Malá)
# the generic preset (the default mapping) declares relations (owner, team, maintainer): its graphs have
# the FieldValue / HAS_FIELD tables too
GENERIC_NODES, GENERIC_RELS = schema_tables(bool(preset("generic").relations))
EXPECTED_NODES = {t.name: 0 for t in GENERIC_NODES} | {"Document": 4, "Person": 2, "Tag": 2, "Category": 2, "Year": 2}
EXPECTED_RELS = {t.name: 0 for t in GENERIC_RELS} | {
    "AUTHORED_BY": 4, "TAGGED": 5, "IN_CATEGORY": 2, "IN_YEAR": 2, "LINKS_TO": 5,
}


def build(tmp_path: Path, docs: list[Document], name: str = "bundle") -> tuple[Path, GraphStats]:
    graph_dir = tmp_path / name / "graph"
    stats = write_graph(docs, CHUNK_IDS, graph_dir, work_dir=tmp_path / name / "work")
    return graph_dir, stats


def query(graph_dir: Path, cypher: str, **params: object) -> list[list[object]]:
    db, conn = open_graph(graph_dir)
    try:
        return fetch_rows(conn, cypher, params)
    finally:
        conn.close()
        db.close()


@pytest.fixture
def graph(tmp_path: Path) -> tuple[Path, GraphStats]:
    return build(tmp_path, make_docs())


def test_schema_ddl_covers_every_table() -> None:
    assert len(SCHEMA_DDL) == len(NODE_TABLES) + len(REL_TABLES)
    assert SCHEMA_DDL[0].startswith("CREATE NODE TABLE Document(path STRING")
    assert any("LINKS_TO(FROM Document TO Document, kind STRING" in s for s in SCHEMA_DDL)


def test_counts_and_directory_contents(graph: tuple[Path, GraphStats], tmp_path: Path) -> None:
    graph_dir, stats = graph
    assert stats.nodes == EXPECTED_NODES
    assert stats.relationships == EXPECTED_RELS
    assert stats.seconds > 0
    assert [p.name for p in graph_dir.iterdir()] == [GRAPH_DB_FILENAME]
    assert not list(graph_dir.parent.rglob("*.wal"))
    assert not list((tmp_path / "bundle" / "work").iterdir())  # CSV scratch removed


def test_awkward_strings_round_trip(graph: tuple[Path, GraphStats]) -> None:
    graph_dir, _ = graph
    rows = query(
        graph_dir,
        "MATCH (d:Document) RETURN d.path, d.title, d.title_source, d.blob_id, d.published, "
        "d.date, d.year, d.chunk_ids, d.chunk_count ORDER BY d.path",
    )
    by_path = {row[0]: row[1:] for row in rows}
    assert by_path["a.md"] == [
        A_TITLE,
        "front_matter",
        "a" * 40,
        True,
        "2021-06-01",
        2021,
        json.dumps(CHUNK_IDS["a.md"]),
        2,
    ]
    assert by_path["b.md"][3:6] == [False, "2019-02-03", 2019]
    title, _, _, _, date, year, ids, count = by_path[AWKWARD_PATH]
    assert (title, date, year, count) == ("Plain", None, None, 1)
    assert json.loads(str(ids)) == CHUNK_IDS[AWKWARD_PATH]
    assert by_path["d.md"][0] == ""  # a quoted empty string stays a string, not NULL
    assert by_path["d.md"][6:] == ["[]", 0]


AWKWARD_TITLES = [
    " lead and trail ",
    "crlf\r\nline",
    "cr\ronly",
    "\n",
    "back\\",
    'a\\"b',
    'c""d',
    '"',
    ",",
    "[x, y]",
    "NULL",
    "\\N",
    "tab\there",
    "\x1f\x07 control, \x00 nul",
    "emoji 😀 ∑ Ťažký",
    "",
]


def test_csv_dialect_round_trips_awkward_strings(tmp_path: Path) -> None:
    docs = [
        Document(path=f"{i:02}.md", blob_id="0", size=0, title=t, title_source="heading")
        for i, t in enumerate(AWKWARD_TITLES)
    ]
    graph_dir = tmp_path / "graph"
    write_graph(docs, {}, graph_dir, work_dir=tmp_path / "work")
    rows = query(graph_dir, "MATCH (d:Document) RETURN d.path, d.title ORDER BY d.path")
    assert [r[1] for r in rows] == AWKWARD_TITLES


def test_link_properties_keep_null_and_empty_apart(graph: tuple[Path, GraphStats]) -> None:
    graph_dir, _ = graph
    rows = query(
        graph_dir,
        "MATCH (a:Document)-[r:LINKS_TO]->(b:Document) "
        "RETURN a.path, b.path, r.kind, r.heading, r.alias",
    )
    assert sorted(rows, key=repr) == sorted(
        [
            ["a.md", "b.md", "wikilink", None, None],
            ["a.md", "b.md", "wikilink", "Intro", None],
            ["a.md", AWKWARD_PATH, "markdown", None, None],
            [AWKWARD_PATH, "a.md", "markdown", None, 'back\\slash, "x"'],
            [AWKWARD_PATH, AWKWARD_PATH, "wikilink", "", None],
        ],
        key=repr,
    )


def test_cypher_answers(graph: tuple[Path, GraphStats]) -> None:
    graph_dir, _ = graph
    tagged = query(
        graph_dir,
        "MATCH (d:Document)-[:TAGGED]->(t:Tag {name: $tag}) RETURN d.path ORDER BY d.path",
        tag="ml",
    )
    assert [r[0] for r in tagged] == ["a.md", "b.md", AWKWARD_PATH]
    persons = query(
        graph_dir,
        "MATCH (d:Document {path: $p})-[:AUTHORED_BY]->(p:Person) RETURN p.name ORDER BY p.name",
        p="a.md",
    )
    assert [r[0] for r in persons] == ["Eva Malá", "Ján Novák"]
    by_key = query(
        graph_dir, "MATCH (p:Person) WHERE p.key = $k RETURN p.name ORDER BY p.name", k="jan novak"
    )
    # "jan novak" and "Ján Novák" fold to one key: one Person, spelled as most pages spell it (issue 11 review)
    assert [r[0] for r in by_key] == ["Ján Novák"]
    targets = query(
        graph_dir,
        "MATCH (:Document {path: 'a.md'})-[:LINKS_TO]->(b:Document) RETURN DISTINCT b.path",
    )
    assert sorted(r[0] for r in targets) == ["b.md", AWKWARD_PATH]
    assert query(graph_dir, "MATCH (d:Document {path: 'ghost.md'}) RETURN d") == []
    per_year = query(
        graph_dir,
        "MATCH (d:Document)-[:IN_YEAR]->(y:Year) RETURN y.year, count(d) ORDER BY y.year",
    )
    assert per_year == [[2019, 1], [2021, 1]]
    categories = query(
        graph_dir, "MATCH (:Document)-[:IN_CATEGORY]->(c:Category) RETURN c.name ORDER BY c.name"
    )
    assert [r[0] for r in categories] == ["bp2019", "dp2021"]


def test_name_key_folds_case_diacritics_and_punctuation() -> None:
    assert name_key("Ján  Novák") == "jan novak"
    assert name_key("Ing. Ján Novák, PhD.") == "ing jan novak phd"
    assert name_key("Łódź") == "lodz"


def test_digest_is_logical_and_order_independent(
    graph: tuple[Path, GraphStats], tmp_path: Path
) -> None:
    _, stats = graph
    shuffled = []
    rng = random.Random(7)
    for doc in reversed(make_docs()):
        links = list(doc.links)
        rng.shuffle(links)
        shuffled.append(doc.model_copy(update={"links": links, "tags": list(reversed(doc.tags))}))
    other_dir, other = build(tmp_path, shuffled, name="shuffled")
    assert other.digest == stats.digest
    assert len(stats.digest) == 64
    db, conn = open_graph(other_dir)
    try:
        assert graph_digest(conn) == stats.digest
    finally:
        conn.close()
        db.close()


@pytest.mark.parametrize(
    "change",
    [
        {"title": "Žltý kôň — úvod"},
        {"tags": ["ml", "new"]},
        {"published": True},
        {"links": [Link(kind="wikilink", target="a", resolved="a.md")]},
    ],
)
def test_digest_changes_with_content(
    graph: tuple[Path, GraphStats], tmp_path: Path, change: dict[str, object]
) -> None:
    _, stats = graph
    docs = make_docs()
    docs[1] = docs[1].model_copy(update=change)
    _, changed = build(tmp_path, docs, name="changed")
    assert changed.digest != stats.digest


def test_empty_docs_give_a_valid_empty_graph(tmp_path: Path) -> None:
    graph_dir = tmp_path / "graph"
    stats = write_graph([], {}, graph_dir, work_dir=tmp_path / "work")
    assert set(stats.nodes.values()) == {0} and set(stats.nodes) == {t.name for t in GENERIC_NODES}
    assert set(stats.relationships.values()) == {0}
    assert stats.digest == hashlib.sha256(b"").hexdigest()
    assert [p.name for p in graph_dir.iterdir()] == [GRAPH_DB_FILENAME]
    assert query(graph_dir, "MATCH (d:Document) RETURN count(d)") == [[0]]


def test_readable_from_another_process_and_twice_read_only(
    graph: tuple[Path, GraphStats],
) -> None:
    graph_dir, _ = graph
    db1, conn1 = open_graph(graph_dir)
    db2, conn2 = open_graph(graph_dir)
    try:
        script = (
            "import sys, ladybug\n"
            "db = ladybug.Database(sys.argv[1], read_only=True)\n"
            "conn = ladybug.Connection(db)\n"
            "r = conn.execute('MATCH ()-[r:LINKS_TO]->() RETURN count(r)')\n"
            "print(r.get_next()[0])\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", script, str(graph_dir / GRAPH_DB_FILENAME)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert out.stdout.strip() == str(EXPECTED_RELS["LINKS_TO"])
        assert fetch_rows(conn1, "MATCH (t:Tag) RETURN count(t)") == [[2]]
        assert fetch_rows(conn2, "MATCH (y:Year) RETURN count(y)") == [[2]]
        with pytest.raises(RuntimeError):
            conn1.execute("CREATE (:Tag {name: 'x', key: 'x'})")
    finally:
        for closable in (conn1, db1, conn2, db2):
            closable.close()
    assert [p.name for p in graph_dir.iterdir()] == [GRAPH_DB_FILENAME]


def test_csv_path_with_quote_and_diacritics(tmp_path: Path) -> None:
    work = tmp_path / "wo'rk ďir\\x"
    stats = write_graph(make_docs(), CHUNK_IDS, tmp_path / "g", work_dir=work)
    assert stats.relationships == EXPECTED_RELS


def test_rejects_non_empty_graph_dir_and_duplicate_paths(
    graph: tuple[Path, GraphStats], tmp_path: Path
) -> None:
    graph_dir, _ = graph
    with pytest.raises(FileExistsError):
        write_graph(make_docs(), CHUNK_IDS, graph_dir, work_dir=tmp_path / "w")
    docs = make_docs()
    with pytest.raises(ValueError, match="duplicate document paths"):
        write_graph(docs + docs[:1], {}, tmp_path / "g2", work_dir=tmp_path / "w")


def test_open_graph_read_only_missing_raises_typed_error(tmp_path: Path) -> None:
    with pytest.raises(BundleIntegrityError) as info:
        open_graph(tmp_path / "nothing")
    assert info.value.problems == [f"graph/{GRAPH_DB_FILENAME}: missing"]
    assert str(tmp_path) not in str(info.value)


def synthetic_docs(n: int, links_per_doc: int, seed: int = 0) -> list[Document]:
    """``n`` documents with ~``links_per_doc`` resolved links, 3 tags, 1-2 authors each."""
    rng = random.Random(seed)
    paths = [f'dir{i % 50}/doc {i}, "v".md' for i in range(n)]
    docs = []
    for i, path in enumerate(paths):
        year = 2000 + i % 25
        docs.append(
            Document(
                path=path,
                blob_id=f"{i:040x}",
                size=100,
                title=f'Dokument č. {i}, "titul"\nriadok 2',
                title_source="front_matter",
                authors=[f"Autor Ďuro {rng.randrange(300)}" for _ in range(1 + i % 2)],
                tags=[f"tag{rng.randrange(200)}" for _ in range(3)],
                categories=[f"dp{year}"],
                date=f"{year}-01-01",
                year=year,
                links=[
                    Link(kind="wikilink", target="t", resolved=paths[rng.randrange(n)])
                    for _ in range(links_per_doc)
                ],
            )
        )
    return docs


@pytest.mark.slow
def test_bulk_load_of_6000_documents(tmp_path: Path) -> None:
    docs = synthetic_docs(6000, 10)
    chunk_ids = {d.path: [f"{d.path}#{k}" for k in range(3)] for d in docs}
    stats = write_graph(docs, chunk_ids, tmp_path / "graph", work_dir=tmp_path / "work")
    assert stats.nodes["Document"] == 6000
    assert 59_000 < stats.relationships["LINKS_TO"] <= 60_000  # a few random duplicates merge
    assert stats.seconds < 60


def test_field_tables_only_with_relations_and_values_of_front_matter_fields(tmp_path: Path) -> None:
    """A mapping without ``relations`` writes exactly the base schema (its graphs and digests are what
    they were before relations existed); one with relations writes a FieldValue per (relation, value)."""
    plain = write_graph(make_docs(), CHUNK_IDS, tmp_path / "plain", work_dir=tmp_path / "w1",
                        mapping=preset("obsidian"))
    assert set(plain.nodes) == {t.name for t in NODE_TABLES}
    assert set(plain.relationships) == {t.name for t in REL_TABLES}
    docs = [make_docs()[0].model_copy(update={"front_matter": {"owner": ["Alice", " Bob ", "", True], "team": 7}})]
    graph_dir = tmp_path / "fields"
    stats = write_graph(docs, CHUNK_IDS, graph_dir, work_dir=tmp_path / "w2")
    assert (stats.nodes["FieldValue"], stats.relationships["HAS_FIELD"]) == (3, 3)
    assert query(graph_dir, "MATCH (d:Document)-[r:HAS_FIELD]->(v:FieldValue) RETURN v.id, v.relation, r.relation, "
                            "v.name ORDER BY v.id") == [["owner:Alice", "owner", "owner", "Alice"],
                                                        ["owner:Bob", "owner", "owner", "Bob"],
                                                        ["team:7", "team", "team", "7"]]
