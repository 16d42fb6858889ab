"""Incremental vector index: the parent's hnswlib index updated in place (labels reused, deleted past the rows)."""

from __future__ import annotations

import json
from pathlib import Path

import hnswlib
import numpy as np

from indexer.build import build_bundle
from indexer.vectors import plan_labels
from query.bundle import open_bundle
from query.search.vectors import vector_ranking
from tests.conftest import RepoBuilder


def test_plan_keeps_unchanged_rows_and_leaves_no_hole() -> None:
    # Parent rows: a a b c c d  (chunks a and c have two segments); new chunks: a (same), c (same),
    # e (new, one row); b and d are gone, so 5 rows remain and label 5 is deleted.
    plan = plan_labels(6, ["a", "c", "e"], [2, 2, 1],
                       [np.array([0, 1]), np.array([3, 4]), None])
    assert plan.ids == ["a", "a", "e", "c", "c"]
    assert list(plan.source) == [0, 1, -1, 3, 4] and plan.put == {2: (2, 0)}
    assert plan.delete == [5] and plan.kept == 4 and plan.moved == 0
    # More deletions than additions: a parent row past the end moves down into the hole.
    plan = plan_labels(4, ["x", "z"], [1, 1], [np.array([0]), np.array([3])])
    assert plan.ids == ["x", "z"] and list(plan.source) == [0, 3] and plan.moved == 1
    assert plan.delete == [2, 3]
    # A parent row claimed twice (two chunks with the same embedding input) is kept once.
    plan = plan_labels(1, ["p", "q"], [1, 1], [np.array([0]), np.array([0])])
    assert list(plan.source) == [0, -1] and plan.put == {1: (1, 0)}


def _page(i: int) -> str:
    return f"---\ntitle: Page {i}\n---\n# Page {i}\n\nTopic{i} words about subject {i % 5} and more.\n"


def test_deleted_and_added_pages_update_the_parent_index(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    for i in range(30):
        repo.write(f"p{i:02d}.md", _page(i))
    repo.commit()
    store = tmp_path / "store"
    first = build_bundle(repo.path, store, embedder=hash_embedder)
    repo.remove("p03.md")
    repo.remove("p07.md")
    repo.write("p10.md", _page(110))
    repo.commit()
    inc = build_bundle(repo.path, store, embedder=hash_embedder)
    reuse = inc.manifest.model_extra["index_reuse"]["vectors"]
    # 27 unchanged chunks: 25 stay at their label, the 2 at labels 28-29 move down into the
    # labels of the deleted pages; the edited page is re-inserted at its own label.
    assert reuse == {"from": first.bundle_id, "kept": 25, "written": 3, "deleted": 2}
    ids = json.loads((inc.bundle_path / "vectors/ids.json").read_text())
    assert len(ids) == len(set(ids)) == inc.manifest.counts.vectors == 28
    index = hnswlib.Index(space="ip", dim=64)
    index.load_index(str(inc.bundle_path / "vectors/index.hnsw"))
    assert index.get_current_count() == 30  # two labels past the rows, marked deleted
    assert set(index.get_ids_list()) >= set(range(28))

    bundle = open_bundle(inc.bundle_path, embedder=hash_embedder)
    try:
        # More hits asked for than live vectors: every live chunk once, no deleted label, no error.
        hits = vector_ranking(bundle, "Topic10 words", depth=100, published_only=True)
        assert {cid for cid, _ in hits} == set(ids) and len(hits) == 28
        top = vector_ranking(bundle, "Page 110 Topic110 words about subject 0 and more.", depth=1,
                             published_only=True)
        assert top[0][0].startswith("p10.md")
    finally:
        bundle.close()

    scratch = build_bundle(repo.path, tmp_path / "scratch", embedder=hash_embedder, scratch=True)
    assert scratch.manifest.content_digest == inc.manifest.content_digest
    assert scratch.manifest.model_extra["index_reuse"]["vectors"]["from"] is None


def test_too_many_deletions_rebuild_the_index(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    for i in range(10):
        repo.write(f"p{i}.md", _page(i))
    repo.commit()
    store = tmp_path / "store"
    build_bundle(repo.path, store, embedder=hash_embedder)
    for i in range(5):
        repo.remove(f"p{i}.md")
    repo.commit()
    inc = build_bundle(repo.path, store, embedder=hash_embedder)
    assert inc.manifest.model_extra["index_reuse"]["vectors"]["from"] is None
    index = hnswlib.Index(space="ip", dim=64)
    index.load_index(str(inc.bundle_path / "vectors/index.hnsw"))
    assert index.get_current_count() == 5


def test_scratch_reuses_nothing(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    for i in range(4):
        repo.write(f"p{i}.md", _page(i))
    repo.commit()
    store = tmp_path / "store"
    build_bundle(repo.path, store, embedder=hash_embedder)
    repo.write("p9.md", _page(9))
    repo.commit()
    # Another configuration (--include) makes the first bundle a vector donor, not an ancestor;
    # --scratch must use neither.
    scratch = build_bundle(repo.path, store, embedder=hash_embedder, scratch=True, include=["p*.md"])
    m = scratch.manifest
    assert m.built_from is None and scratch.summary()["vectors_donor"] is None
    assert m.stats.embeddings_reused == 0 and m.stats.embeddings_computed == m.counts.chunks == 5
    assert m.model_extra["index_reuse"]["vectors"]["from"] is None
    donor = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder, include=["p*"])
    assert donor.summary()["vectors_donor"] is not None and donor.manifest.stats.embeddings_computed == 0


def test_chunks_with_the_same_input_keep_their_own_labels(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    for i in range(12):
        repo.write(f"p{i}.md", _page(i))
    repo.write("copy/a.md", _page(99))  # two pages with the same title and text: identical embedding inputs
    repo.write("copy/b.md", _page(99))
    repo.commit()
    store = tmp_path / "store"
    build_bundle(repo.path, store, embedder=hash_embedder)
    repo.write("p1.md", _page(101))
    repo.commit()
    inc = build_bundle(repo.path, store, embedder=hash_embedder)
    reuse = inc.manifest.model_extra["index_reuse"]["vectors"]
    assert reuse["written"] == 1 and reuse["kept"] == 13  # only the edited page is re-inserted
