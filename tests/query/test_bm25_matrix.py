"""The BM25 matrix (``bm25/``) scores exactly as Whoosh does, on a real bundle built in tmp_path."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from whoosh import index as whoosh_index
from whoosh import query as wq

from artifacts.bm25matrix import BM25Matrix, UnsupportedQuery, quantised_lengths
from artifacts.layout import BM25_DIR, TEXT_DIR
from artifacts.manifest import FEATURE_VERSION
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.anchor import lexical_anchor
from query.search.bm25 import bm25_ranking
from query.search.filters import allowed_paths
from query.search.fusion import rank_chunks
from query.search.request import SearchFilter, SearchOptions
from query.search.terms import build_text_queries, expand_words, query_terms
from query.search.weighting import _PARAMS, bm25_matrix, ranking_searcher
from tests.conftest import RepoBuilder

PAGES = {
    "sk/siete.md": "---\ntitle: Počítačové siete\ntags: [siete, tcp]\nauthor: Ján Holp\nyear: 2019\n---\n"
                   "# Počítačové siete\n\nSmerovanie paketov a protokol TCP v sieťach.\n\n## Vrstvy\n\n"
                   "Fyzická, linková a sieťová vrstva. Smerovač posiela pakety ďalej.\n",
    "sk/protokoly.md": "---\ntitle: Protokoly\ntags: [tcp]\nyear: 2020\n---\n# Protokoly\n\nTCP, UDP a QUIC. "
                       "Protokol TCP zaručuje doručenie, protokol UDP nie. Smerovanie nie je protokol.\n",
    "sk/holp.md": "---\ntitle: Ján Holp\ncategories: [dp2016]\n---\n# Ján Holp\n\n## Diplomová práca\n\n"
                  "Zebraplanktón v horských jazerách. Práca študentky Petry Strakovej o planktóne.\n",
    "de/strasse.md": "# Überblick\n\nDie Größe der Straßenbahn in Zürich. Straßenbahnen fahren oft.\n",
    "de/bahn.md": "# Bahnhof\n\nDer Bahnhof Zürich hat viele Gleise; die Straßenbahn hält davor.\n",
    "en/sync.md": "---\ntitle: Sync settings\ntags: [sync]\n---\n# Sync settings\n\nObsidian Sync keeps "
                  "settings in sync. Sync your vault across devices.\n\n## Conflicts\n\nSync resolves "
                  "conflicts by keeping both versions.\n",
    "en/publish.md": "---\ntitle: Publish\ntags: [publish]\n---\n# Publish\n\nPublish your notes as a website. "
                     "Obsidian Publish syncs pages.\n",
    "draft.md": "---\ntitle: Koncept\npublished: false\n---\n# Koncept\n\nNezverejnený text o zebraplanktóne "
                "a protokoloch TCP.\n",
}
LONG = "\n\n".join(f"## Oddiel {i}\n\nBežný text o sieťach, protokoloch a smerovaní číslo {i}. "
                   + "Obsidian sync " * (i % 3) for i in range(12))

QUERIES = [
    "tcp", "protokol", "Protokoly TCP", "zebraplanktón", "zebraplankton jan holp", "ZEBRAPLANKTON",
    "smerovanie paketov", "sieťová vrstva", "sietova vrstva", "Straßenbahn Zürich", "strassenbahn",
    "obsidian sync", "sync settings conflicts", "publish notes website", "Petry Strakovej",
    "protokolov", "smerovania", "Zebraplanktn", "Ján Hlop", "snyc", "pubilsh", "vrstvy siete protokoly tcp udp",
    "the a of", "xyzzy", "Obsidian Sync keeps settings in sync across devices and conflicts",
]
"""Single and multi-word, with and without diacritics, inflected (stem prefix), typos (edit distance
and swapped letters), words absent from the index, and a long query (no prefix strategy)."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from artifacts.embedding import load_embedder

    tmp = tmp_path_factory.mktemp("bm25mat")
    repo = RepoBuilder(tmp / "repo")
    for path, text in PAGES.items():
        repo.write(path, text)
    repo.write("sk/dlha.md", "---\ntitle: Dlhá stránka\n---\n# Dlhá stránka\n\n" + LONG)
    for i in range(6):
        repo.write(f"en/p{i}.md", f"# Page {i}\n\nObsidian notes {i}. " + "Sync. " * i + "Protokol.\n")
    repo.commit()
    embedder = load_embedder("hash-64")
    result = build_bundle(repo.path, tmp / "store", embedder=embedder)
    bundle = open_bundle(result.bundle_path, embedder=embedder)
    yield bundle
    bundle.close()


def _whoosh_strategy_scores(bundle, q) -> dict[str, float]:  # type: ignore[no-untyped-def]
    searcher = ranking_searcher(bundle)
    results = searcher.search(q, limit=None, scored=True)
    return {searcher.stored_fields(n)["chunk_id"]: float(score) for score, n in results.top_n}


def test_bundle_has_a_matrix_listed_in_the_manifest(built) -> None:  # type: ignore[no-untyped-def]
    listed = {f.path for f in built.manifest.files}
    assert {f"{BM25_DIR}/meta.json", f"{BM25_DIR}/chunk_ids.json", f"{BM25_DIR}/body.terms",
            f"{BM25_DIR}/lengths.npy", f"{BM25_DIR}/body.rows.npy"} <= listed
    assert built.manifest.feature_version == FEATURE_VERSION >= 2
    assert bm25_matrix(built) is bm25_matrix(built) is not None  # loaded once per bundle


def test_matrix_holds_whooshs_postings_and_lengths(built) -> None:  # type: ignore[no-untyped-def]
    """Every posting and every quantised length equals what Whoosh's reader gives for the written index."""
    matrix = bm25_matrix(built)
    ix = whoosh_index.open_dir(str(built.path / TEXT_DIR), readonly=True)
    with ix.reader() as reader:
        assert matrix.n_rows == reader.doc_count_all()
        for docnum in range(matrix.n_rows):
            assert reader.stored_fields(docnum)["chunk_id"] == matrix.chunk_ids[docnum]
        for i, name in enumerate(matrix.fields):
            assert [t.decode() for t in reader.lexicon(name)] == matrix.terms[name], name
            for j, term in enumerate(matrix.terms[name]):
                postings = reader.postings(name, term)
                ids, weights = [], []
                while postings.is_active():
                    ids.append(postings.id())
                    weights.append(postings.weight())
                    postings.next()
                indptr, rows, tf = matrix.columns[name]
                assert list(rows[indptr[j]:indptr[j + 1]]) == ids, (name, term)
                assert list(tf[indptr[j]:indptr[j + 1]]) == weights, (name, term)
            assert int(matrix.lengths[i].sum()) == reader.field_length(name)
            quantised = quantised_lengths(matrix.lengths[i])
            for docnum in range(matrix.n_rows):
                if matrix.lengths[i, docnum]:
                    assert quantised[docnum] == reader.doc_field_length(docnum, name), (name, docnum)
    ix.close()


def test_quantised_lengths_equal_whooshs_length_bytes() -> None:
    from whoosh.util.numeric import byte_to_length, length_to_byte

    lengths = np.array([1, 2, 3, 7, 8, 9, 26, 27, 28, 100, 101, 999, 1000, 5000, 65535, 106373, 106374, 10**7])
    assert quantised_lengths(lengths).tolist() == [byte_to_length(length_to_byte(int(n))) for n in lengths]


def test_every_strategy_tree_scores_as_whoosh(built) -> None:  # type: ignore[no-untyped-def]
    """Each strategy's query tree (terms with boosts, stem prefixes, typo forms, And, Or) gives the same
    chunks and scores on the matrix as in Whoosh, to 1e-9 relative."""
    matrix = bm25_matrix(built)
    searcher = ranking_searcher(built)
    kinds = set()
    for query in QUERIES:
        words = expand_words(built, searcher, query_terms(query))
        for name, q in build_text_queries(words):
            kinds.add(name)
            expected = _whoosh_strategy_scores(built, q)
            rows, scores = matrix.evaluate(q, _PARAMS)
            got = {matrix.chunk_ids[r]: float(s) for r, s in zip(rows, scores, strict=True)}
            assert got.keys() == expected.keys(), (query, name)
            for cid, score in expected.items():
                assert math.isclose(got[cid], score, rel_tol=1e-9), (query, name, cid, got[cid], score)
    assert kinds == {"all_terms", "prefix_terms", "any_term"}
    typo = expand_words(built, searcher, query_terms("Zebraplanktn snyc"))
    assert typo[0].fuzzy and typo[1].swaps  # the typo paths really were exercised


def test_weights_sliced_per_term_equal_the_prepared_ones_bit_for_bit(built) -> None:  # type: ignore[no-untyped-def]
    """A one-shot search weighs only the postings it scores; a warmed bundle slices weights computed once."""
    from artifacts.bm25matrix import BM25Matrix

    lazy = BM25Matrix.load(built.path / "bm25")
    warm = BM25Matrix.load(built.path / "bm25").prepare(_PARAMS)
    assert not lazy._scoring and warm._scoring
    searcher = ranking_searcher(built)
    for query in QUERIES:
        for _, q in build_text_queries(expand_words(built, searcher, query_terms(query))):
            (rows_a, scores_a), (rows_b, scores_b) = lazy.evaluate(q, _PARAMS), warm.evaluate(q, _PARAMS)
            assert rows_a.tolist() == rows_b.tolist() and scores_a.tobytes() == scores_b.tobytes(), query
    assert not lazy._scoring  # nothing was weighed in full


@pytest.mark.parametrize("published_only", [True, False])
@pytest.mark.parametrize("flt", [None, {"tags": ["tcp"]}, {"path_prefix": "en/"}, {"year": [2019, 2020]},
                                 {"categories": ["dp2016"]}, {"tags": ["nothing"]}])
def test_bm25_ranking_is_the_same_with_matrix_and_whoosh(built, flt, published_only) -> None:  # type: ignore[no-untyped-def]
    search_filter = SearchFilter(**flt) if flt else None
    for query in QUERIES:
        for depth in (3, 10, 100):
            a, full_a = bm25_ranking(built, query, depth, published_only, flt=search_filter, engine="whoosh")
            b, full_b = bm25_ranking(built, query, depth, published_only, flt=search_filter, engine="matrix")
            assert [c for c, _ in a] == [c for c, _ in b], (query, flt, depth)
            assert full_a == full_b
            for (_, sa), (_, sb) in zip(a, b, strict=True):
                assert math.isclose(sa, sb, rel_tol=1e-9)
    hits, _ = bm25_ranking(built, "zebraplanktón", 10, published_only, flt=search_filter, engine="matrix")
    assert any(c.startswith("draft.md") for c, _ in hits) == (not published_only and flt is None)


def test_anchor_and_fused_ranking_are_the_same_with_and_without_the_matrix(built) -> None:  # type: ignore[no-untyped-def]
    for query in QUERIES + ['"sieťová vrstva"', 'zebraplanktón "horských jazerách"']:
        for published_only in (True, False):
            with_matrix = rank_chunks(built, query, depth=20, published_only=published_only)
            built.derived["bm25_matrix"] = False  # as a bundle without bm25/
            try:
                without = rank_chunks(built, query, depth=20, published_only=published_only)
                whoosh_anchor = lexical_anchor(built, query, None, published_only, SearchOptions().anchor_max_chunks)
            finally:
                del built.derived["bm25_matrix"]
            assert with_matrix.fused == without.fused, query
            assert with_matrix.anchor == without.anchor, query
            assert lexical_anchor(built, query, None, published_only, SearchOptions().anchor_max_chunks,
                                  engine="matrix") == whoosh_anchor
            for flt in ({"tags": ["tcp"]}, {"path_prefix": "sk/"}):
                paths = allowed_paths(built, SearchFilter(**flt), published_only)
                assert lexical_anchor(built, query, paths, published_only, 8, engine="matrix") == \
                    lexical_anchor(built, query, paths, published_only, 8, engine="whoosh"), (query, flt)


def test_nodes_the_matrix_does_not_evaluate_fall_back_to_whoosh(built) -> None:  # type: ignore[no-untyped-def]
    matrix = bm25_matrix(built)
    for q in (wq.FuzzyTerm("body", "protokol"), wq.Prefix("body", "prot"), wq.Or([wq.Term("body", "tcp")], scale=0.5),
              wq.Term("path", "sk/siete.md"), wq.Phrase("body", ["sietova", "vrstva"])):
        with pytest.raises(UnsupportedQuery):
            matrix.evaluate(wq.Or([wq.Term("body", "tcp"), q]), _PARAMS)


def test_bundle_without_matrix_searches_through_whoosh(built, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import shutil
    import stat

    copy = tmp_path / built.path.name
    shutil.copytree(built.path, copy)
    for path in [copy, *copy.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    shutil.rmtree(copy / BM25_DIR)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"] = [f for f in manifest["files"] if not f["path"].startswith(BM25_DIR + "/")]
    manifest["feature_version"] = 1
    (copy / "manifest.json").write_text(json.dumps(manifest))
    old = open_bundle(copy, embedder=built.embedder)
    try:
        assert bm25_matrix(old) is None
        for query in QUERIES[:8]:
            assert bm25_ranking(old, query, 10, True) == bm25_ranking(built, query, 10, True, engine="whoosh")
        with pytest.raises(Exception, match="no BM25 matrix"):
            bm25_ranking(old, "tcp", 10, True, engine="matrix")
    finally:
        old.close()


def test_matrix_round_trips_through_its_files(built, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    matrix = bm25_matrix(built)
    matrix.save(tmp_path / "m")
    again = BM25Matrix.load(tmp_path / "m", mmap=False)
    assert again.chunk_ids == matrix.chunk_ids and again.terms == matrix.terms
    assert np.array_equal(again.lengths, matrix.lengths)
    for name in matrix.fields:
        for a, b in zip(again.columns[name], matrix.columns[name], strict=True):
            assert np.array_equal(a, b)
    names = sorted(p.name for p in (tmp_path / "m").iterdir())
    assert names == sorted(p.name for p in (built.path / BM25_DIR).iterdir())
    for p in (tmp_path / "m").iterdir():  # the same bytes: stable output
        assert p.read_bytes() == (built.path / BM25_DIR / p.name).read_bytes(), p.name


def test_a_matrix_that_differs_from_the_index_is_refused(built) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    from artifacts.bm25matrix import MatrixFormatError, check_against_index

    matrix = bm25_matrix(built)
    lengths = matrix.lengths.copy()
    lengths[matrix.fields.index("body"), 0] += 1
    ix = whoosh_index.open_dir(str(built.path / TEXT_DIR), readonly=True)
    with ix.reader() as reader:
        check_against_index(matrix, reader)
        for bad in (replace(matrix, lengths=lengths, _norms={}, _dfs={}),
                    replace(matrix, chunk_ids=list(reversed(matrix.chunk_ids)), _norms={}, _dfs={}),
                    replace(matrix, chunk_ids=matrix.chunk_ids[:-1], lengths=matrix.lengths[:, :-1], _norms={},
                            _dfs={})):
            with pytest.raises(MatrixFormatError):
                check_against_index(bad, reader)
    ix.close()


def test_assembled_from_a_parent_and_the_changed_chunks_equals_a_scratch_matrix(tmp_path: Path) -> None:
    """What an incremental build needs: parent rows of unchanged chunks + rows recorded for the changed
    chunks only give exactly the scratch build's matrix (terms of deleted chunks dropped, statistics of
    the live rows)."""
    from artifacts.bm25matrix import PostingRecorder
    from artifacts.embedding import load_embedder
    from indexer.textindex import scored_fields, write_text_index

    embedder = load_embedder("hash-64")
    repo = RepoBuilder(tmp_path / "repo")
    for path, text in PAGES.items():
        repo.write(path, text)
    repo.commit()
    first = open_bundle(build_bundle(repo.path, tmp_path / "s1", embedder=embedder).bundle_path, embedder=embedder)
    repo.write("sk/protokoly.md", PAGES["sk/protokoly.md"].replace("QUIC", "QUIC a SCTP") + "\n## Nové\n\nSCTP.\n")
    repo.write("sk/novy.md", "---\ntitle: Nový\ntags: [tcp]\n---\n# Nový\n\nÚplne nové slovo kvazar.\n")
    repo.remove("de/bahn.md")  # "bahnhof" and "gleise" occur nowhere else: they must leave the vocabulary
    repo.commit()
    second = open_bundle(build_bundle(repo.path, tmp_path / "s2", embedder=embedder, scratch=True).bundle_path,
                         embedder=embedder)
    try:
        old_docs = {p: d.blob_id for p, d in first.docs.items()}
        changed = [c for c in second.chunks if old_docs.get(c.path) != second.docs[c.path].blob_id]
        assert changed and len(changed) < len(second.chunks)
        recorder = PostingRecorder(scored_fields())
        write_text_index(changed, second.docs, tmp_path / "new-text", recorder)
        fresh = recorder.matrix([c.chunk_id for c in changed])
        scratch = bm25_matrix(second)
        assembled = BM25Matrix.assemble(scratch.chunk_ids, [fresh, bm25_matrix(first)])
        assert "bahnhof" in bm25_matrix(first).terms["body"] and "bahnhof" not in assembled.terms["body"]
        assembled.save(tmp_path / "assembled")
        for path in (second.path / BM25_DIR).iterdir():
            assert (tmp_path / "assembled" / path.name).read_bytes() == path.read_bytes(), path.name
    finally:
        first.close()
        second.close()
