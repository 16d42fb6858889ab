"""Long, description-style queries match inflected forms through narrow stem prefixes (``any_term``).

Scored on the bundle's BM25 matrix (the default engine) and with Whoosh, which must agree.
"""

from __future__ import annotations

import pytest
from whoosh import query as wq

import query.search.terms as search_terms
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.bm25 import bm25_ranking
from query.search.terms import QueryTerm, QueryWord, build_text_queries
from query.search.weighting import bm25_matrix, ranking_searcher
from tests.conftest import RepoBuilder

TARGET = "cs/synchronizace.md"
# 9 words (> MAX_PREFIX_QUERY_TERMS); "synchronizace", "trezor", "nastavit" occur in the target page only
# in other inflected forms, too far for typo tolerance ("synchronizovaných", "trezorech", "nastavování").
LONG_QUERY = "jak nastavit synchronizace trezor a šifrování poznámek na telefonu"


@pytest.fixture(autouse=True)
def stem_forms(monkeypatch):  # type: ignore[no-untyped-def]
    """The bound measured in the longq note (the default, 0, turns the stem prefixes of long queries off)."""
    monkeypatch.setattr(search_terms, "MAX_STEM_FORMS", 64)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, hash_embedder):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("longq")
    repo = RepoBuilder(root / "repo")
    repo.write(TARGET, "---\ntitle: Sdílení mezi zařízeními\n---\n# Sdílení mezi zařízeními\n\n"
                       "Obsah synchronizovaných trezorech. Nastavování služby, šifrování poznámek a příloh.\n")
    # A decoy with more of the query's literal words (but none of the three inflected ones).
    repo.write("cs/telefon.md", "---\ntitle: Mobil\n---\n# Mobil\n\nJak psát poznámek na telefonu a "
                                "poznámek na telefonu, jak na to. Stránky o mobilu.\n")
    for i in range(8):
        repo.write(f"cs/jine/p{i}.md", f"---\ntitle: Stránka {i}\n---\n# Stránka {i}\n\nJak na to a co dál, "
                                       f"stránka číslo {i} o aplikaci na počítači.\n")
    repo.commit()
    result = build_bundle(repo.path, root / "store", embedder=hash_embedder)
    opened = open_bundle(result.bundle_path, embedder=hash_embedder)
    yield opened
    opened.close()


def _ranked_paths(bundle, query: str, engine: str = "auto") -> list[str]:  # type: ignore[no-untyped-def]
    hits, _ = bm25_ranking(bundle, query, depth=20, published_only=True, engine=engine)  # type: ignore[arg-type]
    paths: list[str] = []
    for cid, _score in hits:
        path = bundle.chunks[bundle.chunk_index[cid]].path
        if path not in paths:
            paths.append(path)
    return paths


def test_long_description_finds_the_page_written_in_other_inflected_forms(bundle, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert bm25_matrix(bundle) is not None  # the default engine scores on the matrix
    matrix_order = _ranked_paths(bundle, LONG_QUERY, "matrix")
    assert matrix_order[0] == TARGET
    assert _ranked_paths(bundle, LONG_QUERY, "whoosh") == matrix_order
    # Without the stem prefixes (0, the default: off) the page with more literal words wins.
    monkeypatch.setattr(search_terms, "MAX_STEM_FORMS", 0)
    assert _ranked_paths(bundle, LONG_QUERY, "matrix")[0] == "cs/telefon.md"
    assert _ranked_paths(bundle, LONG_QUERY, "whoosh")[0] == "cs/telefon.md"


def test_only_narrow_stems_are_expanded_and_only_in_long_queries(bundle, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    searcher = ranking_searcher(bundle)
    words = search_terms.expand_words(bundle, searcher, search_terms.query_terms(LONG_QUERY))
    narrow = {w.term.folded for w in words if w.narrow_stem}
    assert {"synchronizace", "trezor", "nastavit"} <= narrow
    assert not {"a", "na", "jak"} & narrow  # too short to have a stem
    # A stem that expands to more indexed words than the bound is not expanded.
    monkeypatch.setattr(search_terms, "MAX_STEM_FORMS", 1)
    # "stránkou": its stem "strank" matches "stranka" and "stranky" (2 forms > 1).
    words = search_terms.expand_words(bundle, searcher, search_terms.query_terms("stránkou " + LONG_QUERY))
    assert not next(w for w in words if w.term.folded == "strankou").narrow_stem
    assert next(w for w in words if w.term.folded == "synchronizace").narrow_stem
    # Short queries are not checked (their prefix_terms strategy is unchanged).
    short = search_terms.expand_words(bundle, searcher, search_terms.query_terms("nastavit synchronizace"))
    assert not any(w.narrow_stem for w in short)


def test_the_matrix_and_whoosh_count_the_same_stem_forms(bundle) -> None:  # type: ignore[no-untyped-def]
    matrix = bm25_matrix(bundle)
    reader = ranking_searcher(bundle).reader()
    for stem in ("strank", "synchroni", "trezo", "telef", "zzzz"):
        for f in search_terms.PREFIX_FIELDS:
            assert matrix.prefix_count(f, stem) == len(list(reader.expand_prefix(f, stem))), (f, stem)
    assert matrix.prefix_count("body", "strank") == 2  # "stranka", "stranky"
    assert matrix.prefix_count("no_such_field", "strank") == 0


def _prefixes(q: wq.Query) -> set[str]:
    if isinstance(q, wq.Prefix):
        return {q.text}
    return set().union(*(_prefixes(c) for c in q.children())) if hasattr(q, "children") else set()


def test_query_shapes() -> None:
    def word(text: str, narrow: bool) -> QueryWord:
        return QueryWord(QueryTerm(folded=text, exact=text), narrow_stem=narrow)

    long_words = [word(f"slovo{i}abc", i % 2 == 0) for i in range(7)]
    strategies = dict(build_text_queries(long_words))
    assert set(strategies) == {"all_terms", "any_term"}
    assert _prefixes(strategies["all_terms"]) == set()
    # Only the narrow words' stems, each over the prefix fields.
    narrow = {search_terms._stem_prefix(w.term.folded) for w in long_words if w.narrow_stem}
    assert _prefixes(strategies["any_term"]) == narrow
    short = dict(build_text_queries([word("nastavit", False), word("synchronizaci", False)]))
    assert set(short) == {"all_terms", "prefix_terms", "any_term"} and _prefixes(short["any_term"]) == set()
