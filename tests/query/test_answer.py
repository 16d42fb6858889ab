"""The answer router, input gate, retrieve mode and cache (query.answer.pipeline) on a real tiny thesis wiki."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from query.answer.pipeline import AnswerCache, answer, normalise_question, parse_answer_request
from query.bundle import open_bundle
from query.errors import InvalidQueryError, InvalidRequestError
from query.search.request import SearchOptions
from tests.query.answer_wiki import build_wiki


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any):  # type: ignore[no-untyped-def]
    built = build_wiki(tmp_path_factory.mktemp("answerwiki"), hash_embedder)
    bundle = open_bundle(built["result"].bundle_path, verify=False, embedder=hash_embedder)
    yield {**built, "bundle": bundle}
    bundle.close()


def retrieve(bundle: Any, query: str, **extra: Any) -> dict[str, Any]:
    request = parse_answer_request({"query": query, "mode": "retrieve", **extra})
    return asyncio.run(answer(bundle, request, SearchOptions(base_url="https://wiki.example/"), None))


@pytest.mark.parametrize("bad", ["", "   ", "\u200b\u200b", "\ufeff", "?!...", "—", "x" * 1001, "\u200b?\u200d"])
def test_input_gate(bad: str) -> None:
    with pytest.raises(InvalidQueryError):
        parse_answer_request({"query": bad})


def test_normalisation_and_strict_fields() -> None:
    assert normalise_question("  Ako\u200b  sa\tvolá \ufeffJán?  ") == "Ako sa volá Ján?"
    assert normalise_question("Cafe\u0301") == "Café"  # NFC
    with pytest.raises(InvalidRequestError):
        parse_answer_request({"query": "ok", "mode": "chat"})
    with pytest.raises(InvalidRequestError):
        parse_answer_request({"query": "ok", "max_context_tokens": 100})
    with pytest.raises(InvalidRequestError):
        parse_answer_request({"query": "ok", "max_context_tokens": "3000"})
    with pytest.raises(InvalidRequestError):
        parse_answer_request({"query": "ok", "unknown": 1})
    with pytest.raises(InvalidQueryError):
        parse_answer_request({"query": 5})


def test_graph_route_gives_graph_evidence(wiki: dict[str, Any]) -> None:
    body = retrieve(wiki["bundle"], "Aké práce má Ján Holp?")
    assert (body["status"], body["engine"]) == ("ok", "graph")
    items = body["evidence"]  # one item per fact line, each citing its own chunk
    assert {i["kind"] for i in items} == {"graph"}
    assert {i["document_path"] for i in items} == {"pages/students/2016/jan_holp/README.md"}
    assert any("Prepis súdnych nahrávok" in i["text"] and "2019" in i["text"] for i in items)
    assert all(i["facts"] and i["commit"] == wiki["commit"] for i in items)
    assert body["sources"][0]["source_url"] == "https://wiki.example/pages/students/2016/jan_holp/README.md"


def test_unknown_and_ambiguous_persons_are_refused(wiki: dict[str, Any]) -> None:
    unknown = retrieve(wiki["bundle"], "Aké práce má Peter Lukáč?")
    assert (unknown["status"], unknown["reason"], unknown["evidence"] if "evidence" in unknown else []) == (
        "no_answer", "unknown_person", [])
    ambiguous = retrieve(wiki["bundle"], "Aký je názov bakalárskej práce Martina Kováča?")
    assert (ambiguous["status"], ambiguous["reason"]) == ("ambiguous", "ambiguous_person")
    assert {c["path"] for c in ambiguous["candidates"]} == {"pages/students/2015/martin_kovac/README.md",
                                                            "pages/students/2020/martin_kovac/README.md"}


def test_content_question_about_an_unknown_person_is_not_answered_from_another_page(wiki: dict[str, Any]) -> None:
    body = retrieve(wiki["bundle"], "Čo je v zadaní diplomovej práce Petra Lukáča?")
    assert (body["status"], body["reason"]) == ("no_answer", "unknown_person")
    assert not body.get("evidence")


def test_content_question_is_restricted_to_the_persons_page(wiki: dict[str, Any]) -> None:
    body = retrieve(wiki["bundle"], "Čo je v zadaní diplomovej práce Jána Holpa?")
    assert (body["status"], body["engine"]) == ("ok", "graph+text")
    assert {i["document_path"] for i in body["evidence"]} == {"pages/students/2016/jan_holp/README.md"}
    assert any("Natrénujte akustický model" in i["text"] for i in body["evidence"])


def test_text_route_and_refusal_gate(wiki: dict[str, Any]) -> None:
    body = retrieve(wiki["bundle"], "Zapína sa tlačiareň v laboratóriu zeleným tlačidlom?")
    assert (body["status"], body["engine"]) == ("ok", "text")
    assert body["evidence"][0]["document_path"] == "pages/info/sprievodca.md"
    first = body["evidence"][0]
    assert first["chunk_id"].startswith("pages/info/sprievodca.md#") and first["evidence_id"] == "E1"
    off_topic = retrieve(wiki["bundle"], "Kto vyhral majstrovstvá sveta vo futbale?")
    assert (off_topic["status"], off_topic["reason"], off_topic["evidence"]) == (
        "no_answer", "insufficient_evidence", [])


def test_year_without_works_is_no_matching_sources(wiki: dict[str, Any]) -> None:
    body = retrieve(wiki["bundle"], "Koľko študentov má prácu v roku 2012?")
    assert (body["status"], body["reason"], body["engine"]) == ("no_answer", "no_matching_sources", "graph")


def test_cache_key_and_bounds(wiki: dict[str, Any]) -> None:
    request = parse_answer_request({"query": "Aké práce má Ján Holp?", "mode": "retrieve"})
    same = parse_answer_request({"query": "ake prace ma jan holp?", "mode": "retrieve"})
    other = parse_answer_request({"query": "Aké práce má Ján Holp?", "mode": "answer"})
    assert AnswerCache.key("d1", "g", request) == AnswerCache.key("d1", "g", same)
    assert AnswerCache.key("d1", "g", request) != AnswerCache.key("d2", "g", request)
    assert AnswerCache.key("d1", "g", request) != AnswerCache.key("d1", "g", other)
    assert AnswerCache.key("d1", "g", request) != AnswerCache.key("d1", "h", request)
    cache = AnswerCache(max_entries=2, max_bytes=10_000)
    for i in range(3):
        cache.put(("k", str(i)), {"answer": "x" * 100})
    assert cache.get(("k", "0")) is None and cache.get(("k", "2")) == {"answer": "x" * 100}
    assert cache.info()["entries"] == 2
    small = AnswerCache(max_entries=10, max_bytes=300)
    small.put(("a",), {"answer": "y" * 200})
    small.put(("b",), {"answer": "z" * 200})
    assert small.get(("a",)) is None and small.get(("b",)) is not None and small.info()["bytes"] <= 300

    cache = AnswerCache()
    first = asyncio.run(answer(wiki["bundle"], request, SearchOptions(), None, cache=cache))
    second = asyncio.run(answer(wiki["bundle"], request, SearchOptions(), None, cache=cache))
    assert (first["cached"], second["cached"]) == (False, True)
    assert second["evidence"] == first["evidence"]


def test_ask_cli(wiki: dict[str, Any]) -> None:
    from click.testing import CliRunner

    from query.cli.ask import ask_command

    store = str(wiki["store"])
    result = CliRunner().invoke(ask_command, ["Aké práce má Ján Holp?", "--store", store, "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert (body["status"], body["engine"]) == ("ok", "graph") and "Prepis súdnych nahrávok" in body["answer"]
    assert body["claims"][0]["evidence"][0]["document_path"] == "pages/students/2016/jan_holp/README.md"
    text = CliRunner().invoke(ask_command, ["Čo je v zadaní diplomovej práce Jána Holpa?", "--store", store,
                                            "--mode", "retrieve", "--at", wiki["commit"][:12]])
    assert text.exit_code == 0 and "engine=graph+text" in text.output and "[E1]" in text.output
    bad = CliRunner().invoke(ask_command, ["\u200b?", "--store", store, "--json"])
    assert bad.exit_code == 1 and json.loads(bad.output)["reason"] == "invalid_query"
    missing = CliRunner().invoke(ask_command, ["Aké práce má Ján Holp?", "--store", store, "--at", "f" * 12,
                                               "--json"])
    # the same reason as POST /answer with that `at` (one mapping: query.errors.from_artifact_error)
    assert missing.exit_code == 1 and json.loads(missing.output)["reason"] == "unknown_revision"
