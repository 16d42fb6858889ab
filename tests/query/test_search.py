"""Hybrid search over a real bundle (Whoosh + hnswlib on disk, hash embedder for speed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.build import build_bundle
from query.bundle import open_bundle
from query.errors import InvalidQueryError, InvalidRequestError
from query.hybrid import SearchOptions, parse_search_request, search
from tests.conftest import RepoBuilder

FILLER = "\n\n".join(f"## Oddiel {i}\n\nBežný text o sieťach, protokoloch a smerovaní číslo {i}." for i in range(6))


@pytest.fixture
def bundle(repo: RepoBuilder, tmp_path: Path, hash_embedder):  # type: ignore[no-untyped-def]
    repo.write("pages/students/2016/jan_holp/README.md",
               "---\ntitle: Ján Holp\ntaxonomy:\n  category: [dp2016]\n---\n# Ján Holp\n\n"
               "## Diplomová práca\n\nNázov: Zebraplanktón v horských jazerách.\n")
    for i in range(8):
        repo.write(f"pages/other/p{i}.md", f"---\ntitle: Stránka {i}\n---\n# Stránka {i}\n\n{FILLER}\n")
    repo.write("pages/long.md", "---\ntitle: Dlhá\n---\n# Dlhá\n\n" + FILLER * 4)
    repo.write("pages/draft.md", "---\npublished: false\ntitle: Koncept\n---\n# Koncept\n\nZebraplanktón tajný.\n")
    repo.commit()
    result = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    return open_bundle(result.bundle_path, embedder=hash_embedder)


def _search(bundle, **kwargs):  # type: ignore[no-untyped-def]
    return search(bundle, parse_search_request(kwargs), SearchOptions(base_url="https://wiki.example.org/"))


def test_planted_document_is_found_first_with_or_without_diacritics(bundle) -> None:  # type: ignore[no-untyped-def]
    for query in ("zebraplanktón Ján Holp", "zebraplankton jan holp", "ZEBRAPLANKTON"):
        body = _search(bundle, query=query)
        assert body["status"] == "ok" and body["reason"] is None
        assert body["results"][0]["document_path"] == "pages/students/2016/jan_holp/README.md", query


def test_response_carries_the_contract_fields(bundle) -> None:  # type: ignore[no-untyped-def]
    body = _search(bundle, query="Ján Holp diplomová práca", limit=3)
    assert set(body) >= {"status", "reason", "sources", "index_version", "complete", "truncated",
                         "truncation_reasons", "results"}
    assert body["index_version"] == {"commit": bundle.manifest.commit, "bundle_id": bundle.bundle_id,
                                     "content_digest": bundle.manifest.content_digest}
    assert body["complete"] is None
    first = body["results"][0]
    assert first["source_url"] == "https://wiki.example.org/pages/students/2016/jan_holp/README.md"
    assert first["heading_path"] and first["text"] and first["title"] == "Ján Holp"
    assert {s["source_id"] for s in body["sources"]} == {r["source_id"] for r in body["results"]}
    assert body["sources"][0] == {"source_id": "S1", "document_path": first["document_path"],
                                  "source_url": first["source_url"], "title": "Ján Holp"}
    assert len(body["results"]) == 3 and body["truncated"] and "result_limit" in body["truncation_reasons"]


def test_unpublished_documents_are_filtered_unless_asked(bundle) -> None:  # type: ignore[no-untyped-def]
    paths = {r["document_path"] for r in _search(bundle, query="tajný koncept zebraplanktón", limit=20)["results"]}
    assert "pages/draft.md" not in paths
    paths = {r["document_path"] for r in
             _search(bundle, query="tajný koncept", limit=20, published_only=False)["results"]}
    assert "pages/draft.md" in paths


def test_max_per_document_caps_results_of_one_document(bundle) -> None:  # type: ignore[no-untyped-def]
    body = _search(bundle, query="smerovaní protokoloch", limit=20, max_per_document=1)
    paths = [r["document_path"] for r in body["results"]]
    assert len(paths) == len(set(paths))
    assert "per_document_limit" in body["truncation_reasons"]
    body = _search(bundle, query="smerovaní protokoloch dlhá", limit=20, max_per_document=4)
    paths = [r["document_path"] for r in body["results"]]
    assert max(paths.count(p) for p in paths) <= 4


def test_debug_shows_per_arm_ranks(bundle) -> None:  # type: ignore[no-untyped-def]
    body = _search(bundle, query="zebraplankton", debug=True)
    debug = body["results"][0]["debug"]
    assert debug["bm25_rank"] == 1 and set(debug) == {"bm25_rank", "bm25_score", "vector_rank", "vector_score",
                                                      "vector_weight", "fused_score", "anchor"}
    assert debug["fused_score"] == body["results"][0]["score"]
    assert "debug" not in _search(bundle, query="zebraplankton")["results"][0]


@pytest.mark.parametrize("payload", [{"query": ""}, {"query": "   "}, {"query": "x" * 1001}, {"query": 5}, {}])
def test_bad_queries_are_invalid_query(payload) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidQueryError):
        parse_search_request(payload)


@pytest.mark.parametrize("payload", [[1, 2], {"query": "ok", "limit": 0}, {"query": "ok", "limit": "many"},
                                     {"query": "ok", "unknown": 1}])
def test_bad_requests_are_invalid_request(payload) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidRequestError):
        parse_search_request(payload)


def test_query_of_only_punctuation_is_answered_by_the_vector_arm_alone(bundle) -> None:  # type: ignore[no-untyped-def]
    body = _search(bundle, query="?!", debug=True)
    assert body["status"] == "ok" and body["results"]
    assert all(r["debug"]["bm25_rank"] is None and r["debug"]["vector_rank"] for r in body["results"])


@pytest.mark.parametrize("payload", [{"query": "ok", "limit": "5"}, {"query": "ok", "limit": 5.0},
                                     {"query": "ok", "limit": True}, {"query": "ok", "published_only": "false"}])
def test_no_silent_type_coercion(payload) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidRequestError) as info:
        parse_search_request(payload)
    field = next(k for k in payload if k != "query")
    assert [f["field"] for f in info.value.fields] == [field]
    assert all(str(v) not in f["problem"] for f in info.value.fields for v in payload.values() if v != "ok")


def test_out_of_range_names_the_field_and_the_bound() -> None:
    with pytest.raises(InvalidRequestError) as info:
        parse_search_request({"query": "ok", "limit": 0})
    assert info.value.fields == [{"field": "limit", "problem": "Input should be greater than or equal to 1"}]


def test_lone_surrogate_is_an_invalid_query() -> None:
    with pytest.raises(InvalidQueryError):
        parse_search_request({"query": "\ud800 twin"})
