"""Fusion notices a dense arm without signal: its weight follows the arm's per-query confidence."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from artifacts.config import EmbedderSpec
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.eval.retrieval import document_ranking
from query.search.confidence import vector_confidence
from query.search.fusion import rank_chunks
from query.search.metrics import ndcg_at
from query.search.request import SearchOptions
from tests.conftest import RepoBuilder

TOPICS = ["planktón v horských jazerách", "smerovanie paketov v sieťach", "kryptografia eliptických kriviek",
          "pečenie kváskového chleba", "história slovenských hradov", "fotosyntéza rias v mori",
          "kompilátory a optimalizácia kódu", "jazda na bicykli v zime", "včelárstvo a med",
          "hudba baroka a Bach", "sopky na Islande", "strojové učenie a dáta"]


def test_confidence_is_agreement_beyond_chance() -> None:
    bm25 = [f"d{i}" for i in range(10)]
    # Two unrelated rankings of 100 documents share one document of their top ten by chance.
    assert vector_confidence(bm25, [f"d{i}" for i in range(9, 19)], 100) == 0.0
    assert vector_confidence(bm25, ["d0", "d1", "d2", "d3", "d4", "y"], 100) == 1.0
    half = vector_confidence(bm25, ["d0", "d1", "d2", "d3", "x4", "x5", "x6", "x7", "x8", "x9"], 100)
    assert 0.0 < half < 1.0
    assert vector_confidence([], bm25, 100) == 1.0  # nothing to compare with: plain RRF


def test_confidence_floor_when_the_dense_favourite_is_among_bm25s_best() -> None:
    bm25 = [f"d{i}" for i in range(10)]
    chance = [f"d{i}" for i in range(9, 19)]  # agreement by chance only: no weight
    assert vector_confidence(bm25, chance, 100, top_floor=0.5, top_depth=3) == 0.0  # d9 is not in its top 3
    assert vector_confidence(bm25, chance, 100, top_floor=0.5, top_depth=10) == 0.5
    assert vector_confidence(bm25, ["d0", "d1", "d2", "d3", "d4", "y"], 100, top_floor=0.5, top_depth=10) == 1.0
    assert vector_confidence(bm25, ["x"] + chance, 100, top_floor=0.5, top_depth=10) == 0.0


@pytest.fixture
def wiki(repo: RepoBuilder, tmp_path: Path) -> RepoBuilder:
    for i, topic in enumerate(TOPICS):
        for j in range(3):
            repo.write(f"t{i}/p{j}.md", f"# {topic.capitalize()} {j}\n\nTáto stránka je o téme {topic}. "
                                        f"Časť {j} opisuje podrobnosti: {topic}.\n")
    repo.commit("wiki")
    return repo


class NoiseEmbedder:
    """A dense arm without signal: each text gets a pseudo-random unit vector seeded by its hash."""

    def __init__(self, dim: int = 32) -> None:
        self.spec = EmbedderSpec(model_id=f"noise-{dim}", dim=dim,
                                 fingerprint=hashlib.sha256(b"noise-v1").hexdigest(), revision="1")

    def _vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        vec = np.random.default_rng(seed).normal(size=self.spec.dim).astype(np.float32)
        return vec / np.linalg.norm(vec)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.spec.dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


def test_an_arm_without_signal_cannot_pull_hybrid_below_bm25(wiki: RepoBuilder, tmp_path: Path) -> None:
    noise = NoiseEmbedder()
    result = build_bundle(wiki.path, tmp_path / "store", embedder=noise)  # real Whoosh + hnswlib on disk
    bundle = open_bundle(result.bundle_path, embedder=noise)
    scores: dict[str, list[float]] = {"bm25": [], "hybrid": [], "blind": []}
    weights: list[float] = []
    for i, topic in enumerate(TOPICS):
        words = topic.split()
        query = f"{words[0]} {words[-1]} téma"
        relevant = {f"t{i}/p{j}.md" for j in range(3)}
        ranking = rank_chunks(bundle, query, depth=100, options=SearchOptions())
        blind = rank_chunks(bundle, query, depth=100, options=SearchOptions(vector_confidence=False))
        weights.append(next(iter(ranking.info.values()))["vector_weight"])
        for name, order in (("bm25", ranking.chunk_ids("bm25")), ("hybrid", ranking.fused), ("blind", blind.fused)):
            scores[name].append(ndcg_at(document_ranking(bundle, order), relevant, 10))
    mean = {name: sum(v) / len(v) for name, v in scores.items()}
    assert mean["hybrid"] >= mean["bm25"] - 0.005, (mean, weights)
    assert mean["blind"] < mean["hybrid"], mean  # blind RRF lets the noise reorder BM25's ranking
    assert sum(weights) / len(weights) < 0.15, weights
    bundle.close()


def test_an_arm_with_signal_keeps_its_weight(wiki: RepoBuilder, tmp_path: Path) -> None:
    result = build_bundle(wiki.path, tmp_path / "store", embedder="hash-256")
    bundle = open_bundle(result.bundle_path)
    # A 36-document corpus cannot show agreement far beyond chance (z < 3 here), so the test uses
    # lower thresholds than the defaults, which were set on real corpora.
    opts = SearchOptions(confidence_z_none=1.0, confidence_z_full=2.5)
    ranking = rank_chunks(bundle, "kváskového chleba pečenie", depth=100, options=opts)
    assert document_ranking(bundle, ranking.chunk_ids("vector"))[0].startswith("t3/")
    assert {i["vector_weight"] for i in ranking.info.values()} == {0.5}
    bundle.close()
