"""Typo forms from the BM25 matrix's vocabulary (numpy) are the words Whoosh's automaton finds."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from artifacts.analysis import FOLDED_FIELDS
from artifacts.config import ChunkConfig
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.terms import _indexed
from query.search.typos import levenshtein_within, near_terms
from query.search.weighting import bm25_matrix, ranking_searcher
from tests.conftest import RepoBuilder

WORDS = ["synchronizace", "šifrování", "poznámka", "poznámky", "telefon", "trezor", "nastavení", "nastavit",
         "Straße", "straßenbahn", "größe", "übersicht", "stadion", "stadium", "station", "stanice", "kryptografie"]


def _lev(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, start=1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def test_levenshtein_within_matches_the_textbook_distance() -> None:
    rng = random.Random(7)
    words = ["".join(rng.choice("abcé") for _ in range(rng.randrange(0, 9))) for _ in range(300)]
    lengths = np.array([len(w) for w in words], dtype=np.int32)
    codes = np.zeros((len(words), int(lengths.max())), dtype=np.uint32)
    for r, w in enumerate(words):
        codes[r, :len(w)] = [ord(c) for c in w]
    for query in ("abca", "é", "", "cabbage"):
        for d in (0, 1, 2):
            got = levenshtein_within(query, codes, lengths, d)
            assert got.tolist() == [_lev(query, w) <= d for w in words]


def test_near_terms_equal_whoosh_terms_within_on_an_updated_bundle(repo: RepoBuilder, tmp_path: Path,
                                                                    hash_embedder) -> None:  # type: ignore[no-untyped-def]
    for i, w in enumerate(WORDS):
        repo.write(f"p{i}.md", f"# {w.title()} {i}\n\n{w} {WORDS[(i + 3) % len(WORDS)]} text.\n")
    repo.commit()
    store = tmp_path / "store"
    chunking = ChunkConfig(max_tokens=120, overlap_tokens=0, min_tokens=0)
    build_bundle(repo.path, store, embedder=hash_embedder, chunking=chunking)
    repo.remove("p0.md")  # an updated index keeps the deleted page's words; the matrix does not
    repo.write("extra.md", "# Stadiony\n\nstadiony stanicí šifrovaní\n")
    repo.commit()
    result = build_bundle(repo.path, store, embedder=hash_embedder, chunking=chunking)
    bundle = open_bundle(result.bundle_path, embedder=hash_embedder)
    try:
        matrix, searcher = bm25_matrix(bundle), ranking_searcher(bundle)
        assert matrix is not None
        found = 0
        typos = ["synchronizase", "sifrovani", "poznamkx", "stadiom", "strase", "telefom", "nastaveni", "grose"]
        for word in typos:
            for d in (1, 2):
                for f in FOLDED_FIELDS:
                    whoosh = sorted(w for w in searcher.reader().terms_within(f, word, d, prefix=1)
                                    if _indexed(bundle, searcher, f, w))
                    assert near_terms(bundle, matrix, f, word, d) == whoosh, (word, d, f)
                    found += bool(whoosh)
        assert found >= 10  # the comparison is not between empty lists
    finally:
        bundle.close()
