"""Questions that state a fact ("Je pravda, že X obhájil diplomovú prácu v roku 2020?"): when the graph
holds the fact, it is answered with the fact and its source, marked as a correction (or a confirmation)
in ``answer_coverage``; never refused.  A small thesis wiki is written and built here."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from artifacts.graphmap import PRESETS
from tests.conftest import RepoBuilder

PAGE = ("---\ntitle: {name}\npublished: true\ntaxonomy:\n    category: [{cats}]\n    tag: [{tags}]\n"
        "    author: {supervisor}\n---\n\n# {name}\n\nVedúci práce: {supervisor}\n\n## Diplomová práca\n\n"
        "*Názov*: {title}\n")
STUDENTS = {
    "Ján Holp": ("2016/jan_holp", "dp2021, bp2019, st2016", "asr, whisper", "Daniel Hládek", "Detekcia slov"),
    "Eva Malá": ("2018/eva_mala", "dp2023, st2018", "nlp", "Eva Kolárová", "Sumarizácia textov"),
}


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> Any:
    from indexer.build import build_bundle
    from query.bundle import open_bundle

    root = tmp_path_factory.mktemp("premise")
    repo = RepoBuilder(root / "repo")
    repo.write("graph-schema.yaml", PRESETS["thesis-wiki"])
    for name, (folder, cats, tags, supervisor, title) in STUDENTS.items():
        repo.write(f"pages/students/{folder}/README.md",
                   PAGE.format(name=name, cats=cats, tags=tags, supervisor=supervisor, title=title))
    result = build_bundle(repo.path, root / "store", repo.commit("wiki"), embedder=hash_embedder)
    bundle = open_bundle(result.bundle_path, verify=False, embedder=hash_embedder)
    yield bundle
    bundle.close()


def _answer(bundle: Any, question: str) -> dict[str, Any]:
    from query.answer.generators import make_generator
    from query.answer.pipeline import answer, parse_answer_request
    from query.search.request import SearchOptions

    return asyncio.run(answer(bundle, parse_answer_request({"query": question}), SearchOptions(),
                              make_generator("extractive", {})))


@pytest.mark.parametrize(("question", "stated", "holds", "fact"), [
    ("Je pravda, že Ján Holp obhájil diplomovú prácu v roku 2020?", {"year": 2020}, False, "2021"),
    ("Je pravda, že Ján Holp obhájil diplomovú prácu v roku 2021?", {"year": 2021}, True, "2021"),
    ("Is it true that Ján Holp defended his master thesis in 2020?", {"year": 2020}, False, "2021"),
    ("Je pravda, že Eva Malá začala študovať v roku 2017?", {"start_year": 2017}, False, "2018"),
    ("Je pravda, že Jána Holpa viedla Eva Kolárová?", {"supervisors": ["Eva Kolárová"]}, False, "Daniel Hládek"),
    ("Je pravda, že Eva Malá má tag asr?", {"tags": ["asr"]}, False, "nlp"),
])
def test_a_stated_fact_is_corrected_or_confirmed(wiki: Any, question: str, stated: dict[str, Any], holds: bool,
                                                 fact: str) -> None:
    from query.graph.dispatch import answer_graph

    body = answer_graph(wiki, {"query": question})
    assert body["status"] == "ok", (body["reason"], body.get("message"))
    assert body["answer"]["premise"] == {"stated": stated, "holds": holds}
    reply = _answer(wiki, question)
    assert reply["status"] == "ok" and reply["engine"] == "graph"
    assert reply["answer_coverage"]["correction"] is (not holds)
    assert reply["answer_coverage"]["premise"]["stated"] == stated
    assert fact in reply["answer"] and reply["sources"], reply["answer"]
    if not holds:  # the stated value is not delivered as a fact
        assert all(str(v) not in c["text"] for v in stated.values() if not isinstance(v, list) for c in reply["claims"])
