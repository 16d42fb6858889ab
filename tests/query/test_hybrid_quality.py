"""BM25 quality on a tiny multilingual wiki: diacritics both ways, rare identifiers, typos, filters."""

from __future__ import annotations

import pytest

from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.bm25 import bm25_ranking
from query.search.request import SearchOptions, parse_search_request
from query.search.response import search
from tests.conftest import RepoBuilder

COMMON = "Bežný text o sieťach, smerovaní a protokoloch, ktorý sa opakuje na každej stránke."


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, hash_embedder):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("quality")
    repo = RepoBuilder(root / "repo")
    repo.write("sk/studenti/jan_holp.md",
               "---\ntitle: Ján Holp\ntaxonomy:\n  category: [dp2021]\n  tag: [siete]\n---\n# Ján Holp\n\n"
               f"## Diplomová práca\n\nVyhľadávanie v slovenských textoch. {COMMON}\n")
    repo.write("sk/studenti/maria_kovacova.md",
               "---\ntitle: Mária Kováčová\ntaxonomy:\n  category: [bp2019]\n  tag: [nlp]\n---\n"
               f"# Mária Kováčová\n\n## Bakalárska práca\n\nStrojový preklad a morfológia. {COMMON}\n")
    repo.write("sk/navod.md", "---\ntitle: Návod\n---\n# Návod\n\nNastavenie premennej "
                              f"GITRAG_MAX_SEGMENT_BYTES v konfigurácii. {COMMON}\n")
    repo.write("de/strasse.md", "---\ntitle: Überblick\n---\n# Überblick\n\nDie Größe der Straßenbahn "
                                "in Zürich.\n")
    repo.write("cs/prace.md", "---\ntitle: Diplomová práce\ndate: 2020-05-01\n---\n# Diplomová práce\n\n"
                              f"Práce o počítačových sítích. {COMMON}\n")
    for i in range(10):
        repo.write(f"sk/ine/p{i}.md", f"---\ntitle: Stránka {i}\n---\n# Stránka {i}\n\n{COMMON} "
                                      f"Číslo {i}, praca a prací.\n")
    repo.commit()
    result = build_bundle(repo.path, root / "store", embedder=hash_embedder)
    return open_bundle(result.bundle_path, embedder=hash_embedder)


def _top(bundle, query: str, **kwargs) -> list[str]:  # type: ignore[no-untyped-def]
    body = search(bundle, parse_search_request({"query": query, **kwargs}), SearchOptions())
    return [r["document_path"] for r in body["results"]]


def _bm25_top(bundle, query: str) -> str | None:  # type: ignore[no-untyped-def]
    hits, _ = bm25_ranking(bundle, query, depth=20, published_only=True)
    return bundle.chunks[bundle.chunk_index[hits[0][0]]].path if hits else None


@pytest.mark.parametrize("query", ["vyhladavanie slovenskych textoch", "Vyhľadávanie slovenských textoch",
                                   "VYHLADAVANIE"])
def test_diacritics_free_query_finds_diacritics(bundle, query) -> None:  # type: ignore[no-untyped-def]
    assert _bm25_top(bundle, query) == "sk/studenti/jan_holp.md"
    assert _top(bundle, query)[0] == "sk/studenti/jan_holp.md"


def test_query_with_diacritics_finds_text_written_without(bundle) -> None:  # type: ignore[no-untyped-def]
    # The German page is indexed as written; "Straßenbahn" and "Zürich" also match "strasenbahn zurich".
    assert _bm25_top(bundle, "Größe der Straßenbahn") == "de/strasse.md"
    assert _bm25_top(bundle, "grosse strasenbahn zurich") == "de/strasse.md"


def test_exact_diacritics_win_over_folded_homograph(bundle) -> None:  # type: ignore[no-untyped-def]
    # "práce" (Czech page) vs "praca"/"prací" on filler pages: all fold to near forms, exact spelling wins.
    hits, _ = bm25_ranking(bundle, "práce", depth=20, published_only=True)
    assert bundle.chunks[bundle.chunk_index[hits[0][0]]].path == "cs/prace.md"


def test_rare_exact_identifier_ranks_its_document_first(bundle) -> None:  # type: ignore[no-untyped-def]
    paths = _top(bundle, "GITRAG_MAX_SEGMENT_BYTES nastavenie siete protokoly", debug=True)
    assert paths[0] == "sk/navod.md"
    body = search(bundle, parse_search_request({"query": "GITRAG_MAX_SEGMENT_BYTES", "debug": True}))
    assert body["results"][0]["document_path"] == "sk/navod.md" and body["results"][0]["debug"]["anchor"]


@pytest.mark.parametrize("query", ["Ján Hlop", "jan holpp", "Mária Kovácová", "maria kovacovva"])
def test_one_letter_typo_in_a_name_still_finds_the_page(bundle, query) -> None:  # type: ignore[no-untyped-def]
    expected = "sk/studenti/jan_holp.md" if "j" in query.lower()[:2] else "sk/studenti/maria_kovacova.md"
    assert _top(bundle, query)[0] == expected


def test_typo_tolerance_leaves_clean_queries_alone(bundle) -> None:  # type: ignore[no-untyped-def]
    clean, _ = bm25_ranking(bundle, "Ján Holp", depth=20, published_only=True)
    strict, _ = bm25_ranking(bundle, "Ján Holp", depth=20, published_only=True,
                             options=SearchOptions(typo_tolerance=False))
    assert clean == strict


def test_inflected_form_is_found_by_prefix_strategy(bundle) -> None:  # type: ignore[no-untyped-def]
    # "morfológiou" (instrumental) is not in the text; its stem prefix matches "morfológia".
    assert _bm25_top(bundle, "preklad morfológiou") == "sk/studenti/maria_kovacova.md"


def test_filters_restrict_both_arms(bundle) -> None:  # type: ignore[no-untyped-def]
    assert set(_top(bundle, "text o sieťach", limit=50, filter={"path_prefix": "cs/"})) == {"cs/prace.md"}
    assert _top(bundle, "práca", filter={"categories": ["DP2021"]}) == ["sk/studenti/jan_holp.md"]
    assert _top(bundle, "práca", filter={"tags": ["NLP"]}) == ["sk/studenti/maria_kovacova.md"]
    assert _top(bundle, "práca", filter={"year": [2020]}) == ["cs/prace.md"]
    assert _top(bundle, "práca", filter={"path_prefix": "xx/"}) == []
    with pytest.raises(Exception):  # noqa: B017 - unknown filter keys are invalid requests
        parse_search_request({"query": "x", "filter": {"colour": "red"}})


def test_typo_is_found_by_bm25_only_with_typo_tolerance(bundle) -> None:  # type: ignore[no-untyped-def]
    hits, _ = bm25_ranking(bundle, "Hlop", depth=20, published_only=True, options=SearchOptions(typo_tolerance=False))
    assert hits == []
    assert _bm25_top(bundle, "Hlop") == "sk/studenti/jan_holp.md"
