"""Fusion profiles: chosen per embedder at build time, recorded in the manifest, ranked with by readers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artifacts.config import ChunkConfig, EmbedderSpec
from artifacts.fusion import FUSION_FIELDS, ProfileTable, load_profiles, profile_for
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.fusion import rank_chunks
from query.search.request import SearchOptions
from tests.conftest import RepoBuilder


def _spec(model_id: str, fingerprint: str = "f" * 64) -> EmbedderSpec:
    return EmbedderSpec(model_id=model_id, dim=384, fingerprint=fingerprint)


def test_the_default_profile_is_the_readers_built_in_settings() -> None:
    """Bundles without ``manifest.fusion`` rank with SearchOptions' defaults: the two must be the same settings."""
    default = load_profiles().default
    assert set(default.settings) == set(FUSION_FIELDS)
    assert default.settings == {f: getattr(SearchOptions(), f) for f in FUSION_FIELDS}


def test_profiles_are_found_by_fingerprint_then_model_id_else_default() -> None:
    table = ProfileTable.model_validate({
        "default": {"name": "default", "settings": {"rrf_k": 5}},
        "profiles": [{"name": "by-id", "model_ids": ["m"], "settings": {"rrf_k": 20}},
                     {"name": "by-fp", "fingerprints": ["a" * 64], "settings": {"rrf_k": 30}}]})
    assert profile_for(_spec("m"), table).name == "by-id"
    assert profile_for(_spec("m", "a" * 64), table).name == "by-fp"
    assert profile_for(_spec("other"), table).name == "default"
    assert profile_for(None, table).name == "default"


def test_a_profile_may_set_ranking_fields_only(tmp_path: Path) -> None:
    path = tmp_path / "profiles.json"
    path.write_text(json.dumps({"default": {"name": "default", "settings": {"base_url": "http://x/"}}}))
    with pytest.raises(ValueError, match="unknown fields"):
        load_profiles(path)


def test_explicit_options_override_the_bundle_profile() -> None:
    fusion = {"profile": "p", "rrf_k": 20, "vector_weight": 1.0, "vector_confidence": False}
    opts = SearchOptions(rrf_k=60, base_url="http://x/").for_bundle(fusion)
    assert (opts.rrf_k, opts.vector_weight, opts.vector_confidence, opts.base_url) == (60, 1.0, False, "http://x/")
    assert opts.for_bundle({"rrf_k": 7}).rrf_k == 60  # every field is explicit after one application
    assert SearchOptions().for_bundle(None) == SearchOptions()
    assert SearchOptions().model_copy(update={"vector_weight": 0.0}).for_bundle(fusion).vector_weight == 0.0


def test_build_records_the_profile_and_search_ranks_with_it(repo: RepoBuilder, tmp_path: Path,
                                                             hash_embedder) -> None:  # type: ignore[no-untyped-def]
    for i in range(6):
        repo.write(f"d{i}.md", f"# Page {i}\n\n" + " ".join(f"word{i}{j} common" for j in range(40)) + "\n")
    repo.commit()
    result = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder,
                          chunking=ChunkConfig(max_tokens=120, overlap_tokens=0, min_tokens=0))
    bundle = open_bundle(result.bundle_path, embedder=hash_embedder)
    try:
        assert bundle.manifest.fusion == {"profile": "default", **load_profiles().default.settings}
        query = "common word03 word41"
        # A profile that gives the dense arm no weight and no anchor: hybrid is BM25's order.
        bundle.manifest.fusion = {"profile": "test", "vector_weight": 0.0, "anchor": False,
                                  "vector_confidence": False}
        ranking = rank_chunks(bundle, query, depth=50)
        assert ranking.fused[:len(ranking.bm25)] == [c for c, _ in ranking.bm25]
        # An explicit option still wins over the bundle's profile.
        explicit = rank_chunks(bundle, query, depth=50, options=SearchOptions(vector_weight=5.0))
        assert explicit.info[explicit.fused[0]]["vector_weight"] == 5.0
    finally:
        bundle.close()

