"""open_bundle reads records on demand: the same documents, facets and chunks as parsing every line,
whatever a document's front matter, title or body holds; the file hashes still guard every byte."""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
from pathlib import Path

import pytest

from artifacts.errors import BundleIntegrityError
from artifacts.layout import CHUNKS_FILE, DOCS_FILE, IDS_FILE
from artifacts.records import Chunk, Document
from artifacts.store import Store
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.records import ChunkRecords, DocumentRecords
from query.search.request import SearchOptions, parse_search_request
from query.search.response import search
from tests.conftest import RepoBuilder

TRICKY = """---
title: 'Say "path": "x", and "tags": ["no"]'
tags: [real-tag, "quoted \\" tag"]
categories: ["Cat \\"one\\"", Dva]
path: front/matter/path.md
date: 2021-05-04
extra: {"categories": ["inner"], "published": false, "year": 1999}
---
# Body with the markers

A line with ", "categories": [ and ], "date": and , "path": " inside the body.
Backslashes at the end of a line \\\\
"quotes" and \\" escaped ones, emoji 🦉, Slovak ľščťžýáíé.
[[Other page]] and [a link](other.md "title with ], \\"date\\": ").
"""


@pytest.fixture
def opened(repo: RepoBuilder, tmp_path: Path, hash_embedder):  # type: ignore[no-untyped-def]
    repo.write("notes/tricky.md", TRICKY)
    repo.write("notes/other.md", "# Other page\n\nPlain text.\n")
    repo.write("notes/hidden.md", "---\npublished: false\ntags: [secret]\n---\n# Hidden\n\nNot shown.\n")
    for i in range(30):
        repo.write(f"notes/long-{i}.md", f"# Long {i}\n\n" + "\n\n".join(f"## Part {k}\n\n" + f"word{k} " * 120
                                                                          for k in range(6)))
    repo.commit("tricky")
    result = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    return Store(tmp_path / "store").bundle_path(result.bundle_id)


def _parsed(bundle_dir: Path) -> tuple[dict[str, Document], list[Chunk], list[str]]:
    docs = {}
    with open(bundle_dir / DOCS_FILE, encoding="utf-8") as handle:
        for line in handle:
            doc = Document.model_validate_json(line)
            docs[doc.path] = doc
    with open(bundle_dir / CHUNKS_FILE, encoding="utf-8") as handle:
        by_id = {c.chunk_id: c for c in (Chunk.model_validate_json(line) for line in handle)}
    ids = json.loads((bundle_dir / IDS_FILE).read_text(encoding="utf-8"))
    return docs, [by_id[i] for i in ids], ids


def test_records_on_demand_equal_parsing_every_line(opened: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    docs, chunks, ids = _parsed(opened)
    assert len(ids) > len(set(ids)) or len(ids) == len(chunks)  # (segments, if any, are labels of one chunk)
    bundle = open_bundle(opened, embedder=hash_embedder)
    assert isinstance(bundle.docs, DocumentRecords) and isinstance(bundle.chunks, ChunkRecords)
    assert sorted(bundle.docs) == sorted(docs) and len(bundle.docs) == len(docs)
    for path, doc in docs.items():
        facets = bundle.doc_facets()[path]
        assert (facets.tags, facets.categories, facets.year, facets.published) == (
            doc.tags, doc.categories, doc.year, doc.published), path
        assert bundle.docs[path] == doc.model_copy(update={"body": ""})
        assert bundle.document_body(path) == doc.body
    tricky = docs["notes/tricky.md"]
    assert tricky.front_matter["path"] == "front/matter/path.md" and "real-tag" in tricky.tags  # the traps are there
    assert '", "categories": [' in tricky.body and tricky.year == 2021
    assert bundle.document_body("notes/missing.md") is None and "notes/missing.md" not in bundle.docs
    assert list(bundle.chunks) == chunks and bundle.chunks[-1] == chunks[-1] and bundle.chunks[2:5] == chunks[2:5]
    assert bundle.chunk_index == {c.chunk_id: i for i, c in enumerate(chunks)}
    body = search(bundle, parse_search_request({"query": "markers inside the body"}), SearchOptions())
    assert body["results"][0]["document_path"] == "notes/tricky.md"


def test_chunks_written_in_another_order_are_still_found_by_id(opened: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                               hash_embedder) -> None:
    _, chunks, _ = _parsed(opened)
    copy = tmp_path / "copy"
    shutil.copytree(opened, copy)
    for path in copy.rglob("*"):
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    lines = (copy / CHUNKS_FILE).read_text(encoding="utf-8").splitlines(keepends=True)
    random.Random(7).shuffle(lines)
    (copy / CHUNKS_FILE).write_text("".join(lines), encoding="utf-8")
    bundle = open_bundle(copy, verify=False, embedder=hash_embedder)  # the hashes no longer match, on purpose
    assert bundle.chunks[0] == chunks[0] and list(bundle.chunks) == chunks


@pytest.mark.parametrize("target", [DOCS_FILE, CHUNKS_FILE, IDS_FILE])
def test_one_changed_byte_anywhere_fails_the_open(opened: Path, tmp_path: Path, hash_embedder,  # type: ignore[no-untyped-def]
                                                  target: str) -> None:
    """Records are parsed lazily, but every file is hashed at open: a byte changed where nothing is
    parsed at open (the middle of a body or a chunk text) still fails it, naming the file."""
    copy = tmp_path / "copy"
    shutil.copytree(opened, copy)
    path = copy / target
    path.chmod(path.stat().st_mode | stat.S_IWUSR)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    while data[middle] not in b"abcdefghijklmnopqrstuvwxyz":
        middle += 1
    data[middle] = ord("z") if data[middle] != ord("z") else ord("y")
    path.write_bytes(bytes(data))
    os.utime(path, ns=(opened.joinpath(target).stat().st_atime_ns, opened.joinpath(target).stat().st_mtime_ns))
    with pytest.raises(BundleIntegrityError) as caught:
        open_bundle(copy, embedder=hash_embedder)
    assert caught.value.problems == [f"{target}: sha256/size mismatch"]


def test_a_search_of_an_all_published_bundle_reads_no_document_facets_and_no_whoosh_index(  # type: ignore[no-untyped-def]
        repo: RepoBuilder, tmp_path: Path, hash_embedder, opened: Path) -> None:
    """Published is found from chunks.jsonl's bytes; a hidden page (or a tricky "published": false in a
    chunk's text) keeps the full rule; the BM25 matrix answers without opening a Whoosh searcher."""
    hidden = open_bundle(opened, embedder=hash_embedder)
    assert hidden.all_published() is False
    body = search(hidden, parse_search_request({"query": "Not shown hidden"}), SearchOptions())
    assert all(r["document_path"] != "notes/hidden.md" for r in body["results"])

    repo.write("notes/hidden.md", '# Shown now\n\nA chunk quoting "published": false and "published": true.\n')
    repo.commit("all published")
    result = build_bundle(repo.path, tmp_path / "store2", embedder=hash_embedder)
    bundle = open_bundle(Store(tmp_path / "store2").bundle_path(result.bundle_id), embedder=hash_embedder)
    assert bundle.all_published() is True
    body = search(bundle, parse_search_request({"query": "word3 Plain text"}), SearchOptions())
    assert body["results"] and isinstance(bundle.docs, DocumentRecords)
    assert bundle.docs._facets is None and not bundle._searchers  # nothing read that the search did not need
    assert len(bundle.docs) == 33 and "notes/hidden.md" in bundle.docs  # read on demand, and then right
    body = search(bundle, parse_search_request({"query": "Shown now", "filter": {"path_prefix": "notes/h"}}),
                  SearchOptions())
    assert [r["document_path"] for r in body["results"]] == ["notes/hidden.md"]


def test_cli_search_still_fails_on_a_changed_byte_while_hashing_beside_its_imports(opened: Path) -> None:
    """The CLI starts the hash check before it imports the search stack; a changed file still stops it."""
    from click.testing import CliRunner

    from artifacts.cli import main

    store = opened.parent.parent
    path = opened / CHUNKS_FILE
    opened.chmod(opened.stat().st_mode | stat.S_IWUSR)
    path.chmod(path.stat().st_mode | stat.S_IWUSR)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    while data[middle] not in b"abcdefghijklmnopqrstuvwxyz":
        middle += 1
    data[middle] = ord("z") if data[middle] != ord("z") else ord("y")
    path.write_bytes(bytes(data))
    runner = CliRunner()
    env = {"GITRAG_EMBEDDER": ""} if "GITRAG_EMBEDDER" in os.environ else {}
    out = runner.invoke(main, ["search", "word3", "--store", str(store)], env=env)
    assert out.exit_code == 1 and f"{CHUNKS_FILE}: sha256/size mismatch" in out.output, out.output
    out = runner.invoke(main, ["search", "word3", "--store", str(store), "--no-verify"], env=env)
    assert out.exit_code == 0 and "notes/long-" in out.output, out.output
