"""RRF fusion of the BM25 and vector chunk rankings, at chunk and at document level."""

from __future__ import annotations

from pathlib import Path

import pytest

from artifacts.config import ChunkConfig
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.fusion import fuse_rankings
from query.search.request import SearchOptions
from tests.conftest import RepoBuilder


@pytest.fixture
def bundle(repo: RepoBuilder, tmp_path: Path, hash_embedder):  # type: ignore[no-untyped-def]
    repo.write("a.md", "# A\n\n## Prvá\n\n" + "Text prvej časti. " * 30 + "\n\n## Druhá\n\n" + "Iný text. " * 30)
    repo.write("b.md", "# B\n\nKrátky dokument B.\n")
    repo.write("c.md", "# C\n\nKrátky dokument C.\n")
    repo.commit()
    result = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder,
                          chunking=ChunkConfig(max_tokens=120, overlap_tokens=0, min_tokens=0))
    opened = open_bundle(result.bundle_path, embedder=hash_embedder)
    yield opened
    opened.close()


def _ids(bundle, path: str) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted({c.chunk_id for c in bundle.chunks if c.path == path})


def test_document_level_fusion_lets_arms_agree_on_a_document_through_different_chunks(bundle) -> None:  # type: ignore[no-untyped-def]
    a1, a2 = _ids(bundle, "a.md")[:2]
    (b1,), (c1,) = _ids(bundle, "b.md"), _ids(bundle, "c.md")
    bm25 = [(a1, 9.0), (b1, 5.0), (c1, 4.0)]
    dense = [(a2, 0.9), (c1, 0.8), (b1, 0.7)]
    k = 60
    chunk_opts = SearchOptions(rrf_k=k, vector_weight=1.0, fusion_level="chunk")
    chunk_order, chunk_scores, _ = fuse_rankings(bundle, bm25, dense, chunk_opts)
    # Chunk level: b1 and c1 collect two contributions, a1 and a2 one each.
    assert chunk_scores[b1] == pytest.approx(1 / (k + 2) + 1 / (k + 3))
    assert chunk_scores[a1] == pytest.approx(1 / (k + 1))
    assert chunk_order[:2] == [b1, c1] and set(chunk_order[2:]) == {a1, a2}

    doc_order, doc_scores, info = fuse_rankings(bundle, bm25, dense, SearchOptions(rrf_k=k, vector_weight=1.0,
                                                                                  fusion_level="document"))
    # Document level: A is first in both arms, so both of its chunks lead, best chunk score first.
    assert doc_scores[a1] == doc_scores[a2] == pytest.approx(2 / (k + 1))
    assert doc_order[:2] == sorted([a1, a2]) and doc_order[2:] == [b1, c1]
    assert info[a1]["bm25_rank"] == 1 and info[a1]["vector_rank"] is None and info[a2]["vector_rank"] == 1


def test_arm_weights_scale_each_contribution(bundle) -> None:  # type: ignore[no-untyped-def]
    (b1,), (c1,) = _ids(bundle, "b.md"), _ids(bundle, "c.md")
    opts = SearchOptions(rrf_k=10, bm25_weight=1.0, vector_weight=0.25, fusion_level="document")
    order, scores, _ = fuse_rankings(bundle, [(b1, 3.0), (c1, 2.0)], [(c1, 0.9), (b1, 0.1)], opts)
    assert scores[b1] == pytest.approx(1 / 11 + 0.25 / 12)
    assert scores[c1] == pytest.approx(1 / 12 + 0.25 / 11)
    assert order == [b1, c1]
