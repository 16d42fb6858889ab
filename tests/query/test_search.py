"""Hybrid search over a real bundle (Whoosh + hnswlib on disk, hash embedder for speed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.build import build_bundle
from query.bundle import open_bundle
from query.errors import InvalidQueryError, InvalidRequestError
from query.search.request import SearchOptions, parse_search_request
from query.search.response import search
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


# -- bounded cost per request (issue 12 "Serving", issue 15 item 1) ----------------------------------


@pytest.mark.parametrize("flt, field", [
    ({"tags": ["t"] * 65}, "filter.tags"),
    ({"categories": ["c"] * 65}, "filter.categories"),
    ({"tags": ["x" * 201]}, "filter.tags.0"),
    ({"year": list(range(65))}, "filter.year.list[int]"),
    ({"path_prefix": "p" * 1001}, "filter.path_prefix"),
])
def test_filter_lists_and_values_are_bounded(flt, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidRequestError) as info:
        parse_search_request({"query": "ok", "filter": flt})
    assert field in [f["field"] for f in info.value.fields]


def test_filter_bounds_are_in_the_openapi_schema() -> None:
    from query.search.request import SearchFilter

    props = SearchFilter.model_json_schema()["properties"]
    tags = next(s for s in props["tags"]["anyOf"] if s.get("type") == "array")
    assert tags["maxItems"] == 64 and tags["items"]["maxLength"] == 200
    assert props["path_prefix"]["anyOf"][0]["maxLength"] == 1000


def test_filter_index_gives_the_same_paths_as_checking_every_document(bundle) -> None:  # type: ignore[no-untyped-def]
    from query.search.filters import _doc_matches, allowed_paths
    from query.search.request import SearchFilter

    filters = [{"categories": ["DP2016"]}, {"categories": ["dp2016", "nothing"]}, {"path_prefix": "pages/other/"},
               {"path_prefix": "pages/other/p1"}, {"path_prefix": "zzz"}, {"year": [2016, 2017]}, {"year": 1999},
               {"categories": ["dp2016"], "path_prefix": "pages/other/"}, {"tags": ["žiadny"]}]
    for raw in filters:
        flt = SearchFilter.model_validate(raw)
        for published_only in (True, False):
            expected = {p for p, d in bundle.docs.items()
                        if (d.published or not published_only) and _doc_matches(d, flt)}
            assert allowed_paths(bundle, flt, published_only) == expected, (raw, published_only)
    assert allowed_paths(bundle, None, True) is None and allowed_paths(bundle, SearchFilter(), True) is None


def test_published_filter_is_a_cached_set_and_absent_when_nothing_is_unpublished(bundle, repo, tmp_path,  # type: ignore[no-untyped-def]
                                                                                 hash_embedder) -> None:
    from query.search.filters import allowed_docnums
    from query.search.weighting import ranking_searcher

    searcher = ranking_searcher(bundle)
    allow = allowed_docnums(bundle, searcher, None, True)
    draft = {n for n in range(searcher.doc_count_all()) if searcher.stored_fields(n)["path"] == "pages/draft.md"}
    assert draft and allow is not None and not allow & draft
    assert len(allow) == searcher.doc_count_all() - len(draft)
    assert allowed_docnums(bundle, searcher, None, True) is allow  # computed once per bundle
    assert allowed_docnums(bundle, searcher, None, False) is None

    repo.remove("pages/draft.md")
    repo.commit("all published")
    result = build_bundle(repo.path, tmp_path / "store2", embedder=hash_embedder)
    clean = open_bundle(result.bundle_path, embedder=hash_embedder)
    assert allowed_docnums(clean, ranking_searcher(clean), None, True) is None


def test_typo_expansion_once_per_word_and_only_where_a_word_could_be_near(bundle) -> None:  # type: ignore[no-untyped-def]
    from query.search.terms import MAX_TYPO_WORDS, expand_words, query_terms
    from query.search.weighting import ranking_searcher

    searcher = ranking_searcher(bundle)
    words = expand_words(bundle, searcher, query_terms("zebraplankon holp " + "q" * 1000))
    assert any("zebraplankton" in forms for _, forms in words[0].fuzzy) and words[1].fuzzy == () == words[1].swaps
    assert words[2].fuzzy == () == words[2].swaps  # longer than any indexed word by more than 2
    many = " ".join(f"zebraplankto{chr(97 + i)}" for i in range(MAX_TYPO_WORDS + 2))  # each 1 edit away
    expanded = [w for w in expand_words(bundle, searcher, query_terms(many)) if w.fuzzy or w.swaps]
    assert len(expanded) == MAX_TYPO_WORDS
    body = _search(bundle, query="zebraplankon")  # a typo still finds its page
    assert body["results"][0]["document_path"] == "pages/students/2016/jan_holp/README.md"
    assert _search(bundle, query="q" * 1000)["status"] in {"ok", "no_answer"}


def test_concurrent_searches_use_one_searcher_per_thread_and_agree(bundle) -> None:  # type: ignore[no-untyped-def]
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from query.search.weighting import ranking_searcher

    queries = ["zebraplanktón Ján Holp", "smerovaní protokoloch", "stránka 3", "dlhá sieťach", "koncept"] * 4
    expected = [[r["chunk_id"] for r in _search(bundle, query=q)["results"]] for q in queries]
    seen: dict[int, int] = {}

    def run(q: str) -> list[str]:
        seen[threading.get_ident()] = id(ranking_searcher(bundle))
        return [r["chunk_id"] for r in _search(bundle, query=q)["results"]]

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(run, queries)) == expected
    assert len(set(seen.values())) == len(seen)  # each thread had its own searcher
    bundle.close()
    with pytest.raises(Exception):  # noqa: B017, PT011 - closed bundles give no new searchers
        bundle.thread_searcher(None)


def test_open_bundle_keeps_no_document_bodies_and_reads_one_on_demand(bundle) -> None:  # type: ignore[no-untyped-def]
    assert all(d.body == "" for d in bundle.docs.values())
    assert "Zebraplanktón v horských jazerách" in bundle.document_body("pages/students/2016/jan_holp/README.md")
    assert bundle.document_body("nope.md") is None


def test_a_wrong_model_is_reported_when_the_vector_arm_needs_it(bundle, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import query.bundle
    from artifacts.embedding import load_embedder
    from artifacts.errors import EmbedderError

    other = load_embedder("hash-32")
    with pytest.raises(EmbedderError):
        open_bundle(bundle.path, embedder=other)
    monkeypatch.setattr(query.bundle, "load_embedder", lambda name: other)
    with pytest.raises(EmbedderError):
        open_bundle(bundle.path)
    lazy = open_bundle(bundle.path, wait_model=False)  # the model loads in the background
    with pytest.raises(EmbedderError):
        _search(lazy, query="zebraplankton")
