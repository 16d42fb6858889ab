"""Chunk-level provenance of graph facts (graph schema 3) and bundles of schema 2.

A schema-3 build keeps, per front matter value of a page, the chunks that state it
(``Document.fact_chunks``); a schema-2 bundle (the committed format fixture of
``tests/artifacts/test_format_compat.py``) has no such property, and the query side computes the
same provenance from its chunks: the facts of both cite the same chunks, and the old graph still exports.
"""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.artifacts.test_format_compat import FILES, _fixtures
from tests.conftest import RepoBuilder

QUESTION = "Aké tagy má Ján Holp?"


def _tag_facts(bundle: Any) -> dict[str, tuple[list[str], list[Any]]]:
    from query.graph.dispatch import answer_graph

    body = answer_graph(bundle, {"query": QUESTION})
    assert body["status"] == "ok", body["reason"]
    return {f["object"]: (f["chunk_ids"], f["front_matter"]) for f in body["facts"] if f["predicate"] == "tagged"}


def _old_bundle(tmp_path: Path) -> Path:
    source = next(p for p in _fixtures() if json.loads((p / "manifest.json").read_text())["config"]
                  .get("graph_schema_version") == 2)
    target = tmp_path / source.name
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def test_schema_2_and_schema_3_cite_the_same_chunks(tmp_path: Path, hash_embedder: Any) -> None:
    from indexer.build import build_bundle
    from query.bundle import open_bundle
    from query.graph.export import export_graph

    old = open_bundle(_old_bundle(tmp_path), verify=False, embedder=hash_embedder)
    try:
        assert old.manifest.config.graph_schema_version == 2
        old_facts = _tag_facts(old)
        exported = json.loads(export_graph(old.graph_connection(), "json"))
        assert any(n["label"] == "Document" for n in exported["nodes"])
    finally:
        old.close()
    repo = RepoBuilder(tmp_path / "repo")
    for path, text in FILES.items():
        repo.write(path, text)
    result = build_bundle(repo.path, tmp_path / "store", repo.commit("fixture"), embedder=hash_embedder)
    new = open_bundle(result.bundle_path, verify=False, embedder=hash_embedder)
    try:
        assert new.manifest.config.graph_schema_version >= 3
        new_facts = _tag_facts(new)
    finally:
        new.close()
    # "siete" and "TCP" are both in the first chunk's text ("Smerovanie paketov a protokol TCP.")
    assert new_facts == old_facts == {"siete": (["notes/siete.md#0"], []), "tcp": (["notes/siete.md#0"], [])}


@pytest.mark.parametrize(("text", "expected"), [
    ("---\ntitle: Eva\ntags: [ocr, nlp]\nauthor: Ján Holp\n---\n# Eva\n\nRobí OCR.\n", {"ocr": True, "nlp": False}),
])
def test_a_value_only_in_front_matter_cites_the_front_matter(tmp_path: Path, hash_embedder: Any, text: str,
                                                             expected: dict[str, bool]) -> None:
    import asyncio

    from indexer.build import build_bundle
    from query.answer.generators import make_generator
    from query.answer.pipeline import answer, parse_answer_request
    from query.bundle import open_bundle
    from query.search.request import SearchOptions

    repo = RepoBuilder(tmp_path / "repo")
    repo.write("eva.md", text)
    result = build_bundle(repo.path, tmp_path / "store", repo.commit("one"), embedder=hash_embedder)
    bundle = open_bundle(result.bundle_path, verify=False, embedder=hash_embedder)
    try:
        from query.graph.dispatch import answer_graph

        body = answer_graph(bundle, {"query": "Aké tagy má Ján Holp?"})
        stated = {f["object"]: bool(f["chunk_ids"]) for f in body["facts"] if f["predicate"] == "tagged"}
        assert stated == expected
        reply = asyncio.run(answer(bundle, parse_answer_request({"query": "Aké tagy má Ján Holp?"}), SearchOptions(),
                                   make_generator("extractive", {})))
        evidence = [e for c in reply["claims"] for e in c["evidence"]]
        assert evidence and all(e["heading_path"] == ["front matter"] and e["front_matter"] for e in evidence)
    finally:
        bundle.close()
