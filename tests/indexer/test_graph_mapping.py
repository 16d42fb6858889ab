"""Graph mapping presets and the extraction of sections, student persons, works and topics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artifacts.graphmap import (
    PRESETS,
    GraphMappingError,
    mapping_from_config,
    parse_mapping,
    path_matches,
    preset,
    select_mapping,
)
from artifacts.graphschema import fetch_rows, open_graph
from artifacts.records import Chunk, Document, Link
from indexer.graph import write_graph
from indexer.graph_extract import parse_headings

STUDENT = """# Ján Holp

Vedúci práce: Ing. Daniel Hládek, PhD.

## Bakalárska práca 2019

*Názov*: Prepis súdnych nahrávok

Pôvodný názov: Niečo staré

### Stretnutie 1.2.2019

Názov: nie je to názov práce, je v podsekcii až po názve

## Diplomová práca

Pôvodný názov: Iba pôvodný

```
## Bakalárska práca 2030
```
"""


def _docs() -> list[Document]:
    student = Document(
        path="pages/students/2016/jan_holp/README.md", blob_id="1", size=1, title="Ján Holp",
        title_source="front_matter", authors=["Daniel Hládek"], tags=["asr", "nlp"],
        categories=["dp2021", "bp2019", "st2016", "xx2000"], body=STUDENT,
        links=[Link(kind="markdown", target="../../../topics/asr/README.md", resolved="pages/topics/asr/README.md")],
    )
    heading_only = Document(
        path="pages/students/2017/no_title/README.md", blob_id="2", size=1, title="no_title",
        title_source="heading", categories=["bp2020"], body="# no_title\n",
    )
    topic = Document(
        path="pages/topics/asr/README.md", blob_id="3", size=1, title="Rozpoznávanie reči",
        title_source="front_matter", tags=["asr"], authors=["Daniel Hládek"], body="# Rozpoznávanie reči\n",
    )
    return [student, heading_only, topic]


def _chunks() -> list[Chunk]:
    path = "pages/students/2016/jan_holp/README.md"
    return [
        Chunk(chunk_id=f"{path}#0", path=path, ordinal=0, title="Ján Holp", heading_path=["Ján Holp"],
              text="x", tokens=1, sha256="0"),
        Chunk(chunk_id=f"{path}#1", path=path, ordinal=1, title="Ján Holp",
              heading_path=["Ján Holp", "Bakalárska práca 2019"], text="x", tokens=1, sha256="0"),
    ]


@pytest.fixture(scope="module")
def thesis_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("thesis")
    chunk_ids = {"pages/students/2016/jan_holp/README.md": [c.chunk_id for c in _chunks()]}
    write_graph(_docs(), chunk_ids, tmp / "graph", work_dir=tmp / "work", mapping=preset("thesis-wiki"),
                chunks=_chunks())
    return tmp / "graph"


def _rows(graph_dir: Path, cypher: str) -> list[list[object]]:
    db, conn = open_graph(graph_dir)
    try:
        return fetch_rows(conn, cypher)
    finally:
        conn.close()
        db.close()


def test_headings_skip_fences_and_keep_paths() -> None:
    headings = parse_headings(STUDENT)
    assert [h.text for h in headings] == ["Ján Holp", "Bakalárska práca 2019", "Stretnutie 1.2.2019", "Diplomová práca"]
    assert headings[2].path == ("Ján Holp", "Bakalárska práca 2019", "Stretnutie 1.2.2019")


def test_student_person_works_and_titles(thesis_graph: Path) -> None:
    persons = _rows(thesis_graph, "MATCH (p:Person) RETURN p.id, p.name, p.kind, p.start_year, p.published")
    # The heading-titled page is not a person page; the supervisor is never a Person.
    assert persons == [["pages/students/2016/jan_holp/README.md", "Ján Holp", "page", 2016, True]]
    works = _rows(thesis_graph, "MATCH (p:Person)-[:HAS_WORK]->(w:Work) RETURN w.type, w.year, w.title, w.section_id "
                                "ORDER BY w.year")
    path = "pages/students/2016/jan_holp/README.md"
    assert works == [["bp", 2019, "Prepis súdnych nahrávok", f"{path}#s1"], ["dp", 2021, None, f"{path}#s3"]]
    evidence = _rows(thesis_graph, "MATCH (w:Work {type: 'bp'}) RETURN w.chunk_ids")
    assert json.loads(str(evidence[0][0])) == [f"{path}#1"]


def test_document_author_topics_and_sections(thesis_graph: Path) -> None:
    assert _rows(thesis_graph, "MATCH (d:Document)-[:HAS_DOCUMENT_AUTHOR]->(a:DocumentAuthor) RETURN DISTINCT a.name") \
        == [["Daniel Hládek"]]
    assert _rows(thesis_graph, "MATCH ()-[r:AUTHORED_BY]->() RETURN count(r)") == [[0]]
    topics = _rows(thesis_graph, "MATCH (d:Document)-[r:HAS_TOPIC]->(t:Topic) RETURN d.path, r.via, t.id, t.name "
                                 "ORDER BY d.path, r.via")
    assert [r[:3] for r in topics] == [
        ["pages/students/2016/jan_holp/README.md", "link", "asr"],
        ["pages/students/2016/jan_holp/README.md", "tag", "asr"],
        ["pages/topics/asr/README.md", "page", "asr"],
        ["pages/topics/asr/README.md", "tag", "asr"],
    ]
    assert _rows(thesis_graph, "MATCH (:Section)-[r:NEXT_SECTION]->(:Section) RETURN count(r)") == [[3]]
    nested = _rows(thesis_graph, "MATCH (a:Section)-[:SUBSECTION_OF]->(b:Section) WHERE a.level = 3 RETURN b.heading")
    assert nested == [["Bakalárska práca 2019"]]


def test_presets_and_selection(tmp_path: Path) -> None:
    assert set(PRESETS) == {"generic", "obsidian", "thesis-wiki"}
    assert select_mapping(None, None).name == "generic"
    assert select_mapping(None, PRESETS["thesis-wiki"]).name == "thesis-wiki"
    assert select_mapping("obsidian", PRESETS["thesis-wiki"]).name == "obsidian"
    custom = tmp_path / "m.yaml"
    custom.write_text("name: mine\nauthors: document_author\n", encoding="utf-8")
    assert select_mapping(str(custom), None).authors == "document_author"
    assert mapping_from_config(None) == preset("generic")
    assert mapping_from_config(preset("thesis-wiki").canonical()) == preset("thesis-wiki")
    with pytest.raises(GraphMappingError, match="preset"):
        select_mapping("nope", None)
    with pytest.raises(GraphMappingError, match="works"):
        parse_mapping("name: x\nworks: {category: '^(?P<type>bp)$', types: {}}\n")
    with pytest.raises(GraphMappingError, match="YAML"):
        parse_mapping("name: [")
    with pytest.raises(GraphMappingError):
        parse_mapping("name: x\nunknown_key: 1\n")


def test_path_globs() -> None:
    assert path_matches("pages/students/2016/x/README.md", ["pages/students/*/*/README.md"])
    assert not path_matches("pages/students/2016/x/y/README.md", ["pages/students/*/*/README.md"])
    assert path_matches("a/b/c/README.md", ["**/README.md"])
    assert path_matches("README.md", ["**/README.md"])
