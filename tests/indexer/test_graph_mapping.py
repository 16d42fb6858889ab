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
from indexer.markdown import headings as parse_headings

STUDENT = """# Ján Holp

Vedúci práce: Ing. Daniel Hládek, PhD.

Téma: [Rozpoznávanie reči](../../../topics/asr/README.md)

Pozri aj [[nlp]].

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
        links=[Link(kind="markdown", target="../../../topics/asr/README.md", resolved="pages/topics/asr/README.md"),
               Link(kind="wikilink", target="nlp", resolved="pages/topics/nlp/README.md")],
    )
    heading_only = Document(
        path="pages/students/2017/no_title/README.md", blob_id="2", size=1, title="no_title",
        title_source="heading", categories=["bp2020"], body="# no_title\n",
    )
    topic = Document(
        path="pages/topics/asr/README.md", blob_id="3", size=1, title="Rozpoznávanie reči",
        title_source="front_matter", tags=["asr"], authors=["Daniel Hládek"], body="# Rozpoznávanie reči\n",
    )
    see_also = Document(
        path="pages/topics/nlp/README.md", blob_id="4", size=1, title="Spracovanie jazyka",
        title_source="front_matter", body="# Spracovanie jazyka\n",
    )
    return [student, heading_only, topic, see_also]


def _chunks() -> list[Chunk]:
    path = "pages/students/2016/jan_holp/README.md"
    return [
        Chunk(chunk_id=f"{path}#0", path=path, ordinal=0, title="Ján Holp", heading_path=["Ján Holp"],
              text="x", tokens=1, sha256="0"),
        Chunk(chunk_id=f"{path}#1", path=path, ordinal=1, title="Ján Holp",
              heading_path=["Ján Holp", "Bakalárska práca 2019"],
              text="## Bakalárska práca 2019\n\n*Názov*: Prepis súdnych nahrávok", tokens=12, sha256="0"),
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


def test_recorded_outline_equals_a_fresh_parse_so_the_graph_never_parses_again() -> None:
    from indexer.markdown import document_outline, outline, parse_markdown

    body = STUDENT + "\n\nSee [site](https://example.org/a/b) and [x](/2019/12/post?q=1#top), [m](other.md).\n"
    doc = parse_markdown("pages/holp/README.md", body.encode(), blob_id="0" * 40, max_bytes=1 << 20)
    assert doc.outline is not None
    recorded = document_outline(doc)
    assert recorded[0] == list(outline(doc.body).headings) and recorded[0][2].path[-1] == "Stretnutie 1.2.2019"
    assert recorded[1] == ["https://example.org/a/b", "/2019/12/post?q=1#top"]
    # a record read back from docs.jsonl of an older bundle (no outline): parsed on demand, same answer
    assert document_outline(doc.model_copy(update={"outline": None})) == recorded


def test_student_person_works_and_titles(thesis_graph: Path) -> None:
    persons = _rows(thesis_graph, "MATCH (p:Person) RETURN p.id, p.name, p.kind, p.start_year, p.published")
    # The heading-titled page is not a person page; the supervisor is never a Person.
    assert persons == [["pages/students/2016/jan_holp/README.md", "Ján Holp", "page", 2016, True]]
    works = _rows(thesis_graph, "MATCH (p:Person)-[:HAS_WORK]->(w:Work) RETURN w.type, w.year, w.title, w.section_id "
                                "ORDER BY w.year")
    path = "pages/students/2016/jan_holp/README.md"
    assert works == [["bp", 2019, "Prepis súdnych nahrávok", f"{path}#s1"], ["dp", 2021, None, f"{path}#s3"]]
    # a work cites the chunks whose text states its title and year; the untitled dp of the heading
    # without a year is stated by no chunk (its year is only the front matter's "dp2021")
    evidence = _rows(thesis_graph, "MATCH (w:Work) RETURN w.type, w.chunk_ids ORDER BY w.type")
    assert [(t, json.loads(str(ids))) for t, ids in evidence] == [("bp", [f"{path}#1"]), ("dp", [])]


def test_document_author_topics_and_sections(thesis_graph: Path) -> None:
    assert _rows(thesis_graph, "MATCH (d:Document)-[:HAS_DOCUMENT_AUTHOR]->(a:DocumentAuthor) RETURN DISTINCT a.name") \
        == [["Daniel Hládek"]]
    assert _rows(thesis_graph, "MATCH ()-[r:AUTHORED_BY]->() RETURN count(r)") == [[0]]
    topics = _rows(thesis_graph, "MATCH (d:Document)-[r:HAS_TOPIC]->(t:Topic) RETURN d.path, r.via, t.id, t.name "
                                 "ORDER BY d.path, r.via")
    # thesis-wiki: a topic comes from the link on the "Téma:" line only -- not from tags (the tag
    # nlp names a topic page here) and not from the "Pozri aj [[nlp]]" see-also link
    assert [r[:3] for r in topics] == [
        ["pages/students/2016/jan_holp/README.md", "link", "asr"],
        ["pages/topics/asr/README.md", "page", "asr"],
        ["pages/topics/nlp/README.md", "page", "nlp"],
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


# -- choosing a preset without flags -------------------------------------------------------------------


def _post(title: str, author: str, slug: str, body: str, tags: str = "python") -> str:
    return (f"---\ntitle: {title}\nauthor: {author}\nslug: {slug}\ndate: 2021-02-15-10-00\n"
            f"tags:\n  - {tags}\n---\n\n{body}\n")


def test_generic_preset_is_completed_from_a_blog(tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from indexer.cli import build_command
    from query.bundle import open_bundle
    from query.graph.dispatch import answer_graph
    from tests.conftest import RepoBuilder

    repo = RepoBuilder(tmp_path / "blog")
    repo.write("content/authors.yaml", "- id: petra\n  name: Petra Nováková\n  email: p@example.org\n"
                                       "- id: mh\n  name: Martin Hrbek\n")
    repo.write("content/posts/2021/2021-02-15-mapa.md", _post("Mapa knihoven", "petra", "mapa-knihoven", "Text."))
    repo.write("content/posts/2021/2021-03-01-data.md", _post(
        "Data obcí", "mh", "data-obci",
        "Viz [mapu](/2021/02/mapa-knihoven) a [znovu](https://blog.example.org/2021/02/mapa-knihoven)."))
    repo.write("content/posts/2021/2021-04-01-dalsi.md", _post(
        "Další", "mh", "dalsi", "[Data](https://blog.example.org/2021/03/data-obci), "
        "[cizí web](https://elsewhere.example.com/x/mapa-knihoven)", tags="design"))
    repo.commit("blog")
    store = tmp_path / "store"
    result = CliRunner().invoke(build_command, ["--repo", str(repo.path), "--store", str(store),
                                                "--embedder", "hash-64"])
    assert result.exit_code == 0, result.output
    assert "graph schema: generic (detected: " in result.output
    assert "author ids resolved through content/authors.yaml (2 of 2 authors)" in result.output
    bundle_path = next((store / "bundles").iterdir())
    bundle = open_bundle(bundle_path, verify=False, load_model=False)
    try:
        mapping = bundle.manifest.config.graph_mapping
        assert mapping["author_names"] == {"file": "content/authors.yaml", "id_field": "id", "name_field": "name"}
        assert mapping["permalinks"] == {"field": "slug", "hosts": ["blog.example.org"]}
        db, conn = open_graph(bundle_path / "graph", read_only=True)
        try:
            persons = fetch_rows(conn, "MATCH (p:Person) RETURN p.id, p.name ORDER BY p.id")
            links = fetch_rows(conn, "MATCH (a:Document)-[r:LINKS_TO]->(b:Document) RETURN a.path, b.path, r.kind "
                                     "ORDER BY a.path")
        finally:
            conn.close()
            db.close()
        assert persons == [["mh", "Martin Hrbek"], ["petra", "Petra Nováková"]]
        # the site path and the absolute URL on the site resolve; the foreign host does not
        assert links == [["content/posts/2021/2021-03-01-data.md", "content/posts/2021/2021-02-15-mapa.md", "url"],
                         ["content/posts/2021/2021-04-01-dalsi.md", "content/posts/2021/2021-03-01-data.md", "url"]]
        author = answer_graph(bundle, {"query": "Kdo napsal článek Mapa knihoven?"})
        assert (author["intent"], author["answer"]["authors"]) == ("author_of_document", ["Petra Nováková"])
        posts = answer_graph(bundle, {"query": "Jaké články napsal Martin Hrbek?"})
        assert posts["answer"]["documents"] == ["content/posts/2021/2021-03-01-data.md",
                                                "content/posts/2021/2021-04-01-dalsi.md"]
        shared = answer_graph(bundle, {"query": "Jaké společné štítky mají Petra Nováková a Martin Hrbek?"})
        assert (shared["status"], shared["answer"]["tags"]) == ("ok", ["python"])
        incoming = answer_graph(bundle, {"query": "Které články odkazují na článek Mapa knihoven?"})
        assert incoming["answer"]["documents"] == ["content/posts/2021/2021-03-01-data.md"]
    finally:
        bundle.close()


def test_obsidian_and_thesis_wiki_are_detected(tmp_path: Path) -> None:
    from artifacts.graphmap import detect_mapping
    from indexer.markdown import parse_markdown, resolve_links

    def doc(path: str, text: str) -> Document:
        return parse_markdown(path, text.encode(), blob_id="0" * 40, max_bytes=10**6)

    vault = [doc(f"n{i}.md", f"# N{i}\n\nSee [[n{(i + 1) % 5}]].\n") for i in range(5)]
    resolve_links(vault)
    mapping, choice = detect_mapping(vault, {}, {})
    assert (mapping.name, choice.name, choice.source) == ("obsidian", "obsidian", "detected")
    assert "5 of 5 sampled pages use [[wikilinks]] or aliases" in choice.reason
    wiki = [doc(f"pages/students/2020/s{i}/README.md",
                f"---\ntitle: Student {i}\ntaxonomy:\n  category: [bp202{i}, st2020]\n---\n# S\n") for i in range(3)]
    mapping, choice = detect_mapping(wiki + vault, {}, {})
    assert mapping.name == "thesis-wiki" and "bp2020" in choice.reason
    plain = [doc("a.md", "# A\n\ntext\n"), doc("b.md", "# B\n\n[a](a.md)\n")]
    mapping, choice = detect_mapping(plain, {}, {})
    assert (mapping, choice.name) == (preset("generic"), "generic")


def test_preset_files_keep_the_canonical_forms_of_the_python_strings() -> None:
    """The thesis-wiki and obsidian presets moved from Python strings to artifacts/graphpresets/*.yaml with
    the same canonical form, so bundles built with them keep their config fingerprint; a mapping without
    relations or intents has neither key in its canonical form."""
    from artifacts.graphmap import preset

    assert preset("thesis-wiki").digest() == "64ddd26b187ac70d02e88af9fe07775c3187bed3fc25d76c86b84b305dc2a849"
    assert preset("obsidian").digest() == "d5305543de6db2681765b8cd75f7395450fda9dc38eec30630b6d95e98061b14"
    assert not {"relations", "intents"} & set(preset("thesis-wiki").canonical())
    assert set(preset("generic").intents) >= {"owner_of_page", "pages_of_team", "maintainer_of_page"}
