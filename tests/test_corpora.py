"""Builds and searches on the real corpora in ../shared (cloned into tmp_path, read-only source)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from artifacts.store import verify_bundle
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.bm25 import bm25_ranking
from query.search.request import parse_search_request
from query.search.response import search
from tests.conftest import MINILM, require_shared

HOLP = "pages/students/2016/jan_holp/README.md"


@pytest.fixture(scope="module")
def thesis_wiki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bundle = require_shared("corpora/thesis-wiki.bundle")
    target = tmp_path_factory.mktemp("corpora") / "thesis-wiki"
    subprocess.run(["git", "clone", "-q", str(bundle), str(target)], check=True)
    return target


def _top_paths(bundle, query: str) -> list[str]:  # type: ignore[no-untyped-def]
    body = search(bundle, parse_search_request({"query": query, "limit": 5}))
    return [r["document_path"] for r in body["results"]]


def test_thesis_wiki_builds_with_recorded_skips(thesis_wiki: Path, tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    result = build_bundle(thesis_wiki, tmp_path / "store", embedder=hash_embedder)
    m = result.manifest
    assert {(s.path, s.reason) for s in m.skipped} == {
        ("pages/students/2014/erik_sopko/priloha.md", "binary"),
        ("pages/students/2017/andrej_fabian/README.md", "invalid_front_matter"),
    }
    md_files = subprocess.run(["git", "ls-tree", "-r", "--name-only", "HEAD"], cwd=thesis_wiki, check=True,
                              capture_output=True, text=True).stdout.split()
    assert m.counts.documents == len([p for p in md_files if p.endswith(".md")]) - 2
    assert verify_bundle(result.bundle_path).content_digest == m.content_digest
    # The hashing embedder is not semantic, so check the BM25 arm here; the fused ranking with the
    # real model is checked by the slow test below.
    bundle = open_bundle(result.bundle_path, embedder=hash_embedder)
    for query in ("diplomová práca Ján Holp", "diplomova praca Jan Holp"):
        hits, _ = bm25_ranking(bundle, query, depth=10, published_only=True, any_term_weight=0.5)
        assert bundle.chunks[bundle.chunk_index[hits[0][0]]].path == HOLP


@pytest.mark.slow
@pytest.mark.model
def test_thesis_wiki_hybrid_search_with_the_real_model(thesis_wiki: Path, tmp_path: Path) -> None:
    result = build_bundle(thesis_wiki, tmp_path / "store", embedder=MINILM)
    bundle = open_bundle(result.bundle_path)
    assert bundle.manifest.config.embedder.model_id == MINILM
    assert _top_paths(bundle, "diplomová práca Ján Holp")[0] == HOLP
    assert _top_paths(bundle, "diplomova praca Jan Holp")[0] == HOLP


@pytest.mark.slow
def test_thesis_wiki_backfill_all_commits_and_scratch_digests_agree(thesis_wiki: Path, tmp_path: Path,
                                                                    hash_embedder) -> None:  # type: ignore[no-untyped-def]
    """`build --all` over the 400 commits, then 20 random commits rebuilt from scratch: digests agree."""
    import random
    import time

    from indexer.backfill import backfill

    start = time.perf_counter()
    results = backfill(thesis_wiki, tmp_path / "store", None, embedder=hash_embedder)
    backfill_seconds = time.perf_counter() - start
    commits = subprocess.run(["git", "rev-list", "HEAD"], cwd=thesis_wiki, check=True, capture_output=True,
                             text=True).stdout.split()
    assert len(results) == len(commits) == 400
    assert sum(r.manifest.built_from is None for r in results) == 1
    sample = random.Random(2026).sample(results, 20)
    scratch_seconds = 0.0
    for result in sample:
        start = time.perf_counter()
        scratch = build_bundle(thesis_wiki, tmp_path / "scratch", result.manifest.commit, embedder=hash_embedder,
                               scratch=True, update_current=False)
        scratch_seconds += time.perf_counter() - start
        assert scratch.manifest.content_digest == result.manifest.content_digest, result.manifest.commit
    computed = sum(r.manifest.stats.embeddings_computed for r in results)
    reused = sum(r.manifest.stats.embeddings_reused for r in results)
    print(f"\nbackfill 400 commits: {backfill_seconds:.1f} s ({backfill_seconds / 400:.2f} s/commit), "
          f"embeddings computed {computed}, reused {reused}; 20 scratch builds {scratch_seconds:.1f} s "
          f"({scratch_seconds / 20:.2f} s each); 20/20 content digests equal")
