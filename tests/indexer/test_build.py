"""End-to-end bundle builds on real Git repositories (hash embedder for speed)."""

from __future__ import annotations

import json
from pathlib import Path

import hnswlib
import numpy as np
import pytest

from artifacts.errors import StoreLockedError
from artifacts.store import Store, verify_bundle
from indexer.build import build_bundle
from indexer.errors import SourceError
from tests.conftest import RepoBuilder

STUDENT = """---
title: Ján Holp
taxonomy:
  category: [dp2016]
  tag: [siete]
  author: Ing. Peter Školiteľ
---
# Ján Holp

## Diplomová práca

Názov: Smerovanie v počítačových sieťach.
"""


def _sample_repo(repo: RepoBuilder) -> str:
    repo.write("pages/students/jan_holp/README.md", STUDENT)
    repo.write("pages/a/same.md", "# Same\n\nidentical content about zebras\n")
    repo.write("pages/b/same.md", "# Same\n\nidentical content about zebras\n")
    repo.write("pages/draft.md", "---\npublished: false\n---\n# Draft\n\nsecret unicorn text\n")
    repo.write("pages/binary.md", b"\x89PNG\x00\x00\x01garbage")
    repo.write("pages/latin1.md", "# Caf\xe9\n".encode("latin-1"))
    repo.write("pages/badyaml.md", "---\ntitle: [unclosed\nfoo: : :\n---\n# Bad\n")
    repo.write("pages/only-front.md", "---\ntitle: Front matter only\n---\n")
    repo.write("notes.txt", "not markdown")
    return repo.commit("initial")


def test_build_writes_a_verified_bundle_with_every_part(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    commit = _sample_repo(repo)
    result = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    m = result.manifest
    assert m.commit == commit and result.bundle_id.startswith(commit + ".")
    assert Store(tmp_path / "store").current_id() == result.bundle_id
    # Hashes in the manifest re-verify against the files on disk.
    assert verify_bundle(result.bundle_path).content_digest == m.content_digest
    names = {f.path for f in m.files}
    assert {"docs.jsonl", "chunks.jsonl", "vectors/vectors.npy", "vectors/ids.json", "vectors/index.hnsw"} <= names
    assert any(n.startswith("text/") for n in names) and any(n.startswith("graph/") for n in names)
    # Skips carry reasons; the build did not abort.
    assert {(s.path, s.reason) for s in m.skipped} == {
        ("pages/binary.md", "binary"), ("pages/latin1.md", "not_utf8"), ("pages/badyaml.md", "invalid_front_matter"),
    }
    docs = [json.loads(line) for line in (result.bundle_path / "docs.jsonl").read_text().splitlines()]
    assert [d["path"] for d in docs] == sorted([
        "pages/students/jan_holp/README.md", "pages/a/same.md", "pages/b/same.md", "pages/draft.md",
        "pages/only-front.md",
    ])
    assert m.counts.documents == 5 and m.counts.skipped == 3
    # Vectors: one L2-normalised float32 row per chunk, in ids.json order, and a loadable hnsw index.
    chunks = [json.loads(line) for line in (result.bundle_path / "chunks.jsonl").read_text().splitlines()]
    vectors = np.load(result.bundle_path / "vectors/vectors.npy")
    ids = json.loads((result.bundle_path / "vectors/ids.json").read_text())
    assert vectors.dtype == np.float32 and vectors.shape == (len(chunks), 64) == (m.counts.vectors, 64)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert sorted(ids) == sorted(c["chunk_id"] for c in chunks)
    index = hnswlib.Index(space="ip", dim=64)
    index.load_index(str(result.bundle_path / "vectors/index.hnsw"))
    assert index.get_current_count() == len(ids)
    # Both byte-identical files are documents of their own.
    assert {c["path"] for c in chunks} >= {"pages/a/same.md", "pages/b/same.md"}
    assert "only-front.md" in " ".join(c["chunk_id"] for c in chunks)
    assert set(m.stats.timings) >= {"parse", "chunk", "embed", "text_index", "vector_index", "graph", "publish"}


def test_build_reads_the_commit_tree_not_the_work_tree(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    repo.write("a.md", "# First\n\nversion one\n")
    first = repo.commit("one")
    repo.write("a.md", "# First\n\nversion two\n")
    repo.write("b.md", "# Uncommitted\n")
    result = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    assert result.manifest.commit == first
    text = (result.bundle_path / "chunks.jsonl").read_text()
    assert "version one" in text and "version two" not in text and "Uncommitted" not in text


def test_build_of_an_older_revision_and_rebuild_reuse(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    repo.write("a.md", "# A\n\nalpha\n")
    first = repo.commit("one")
    repo.write("b.md", "# B\n\nbeta\n")
    repo.commit("two")
    old = build_bundle(repo.path, tmp_path / "store", rev=first[:10], embedder=hash_embedder)
    assert old.manifest.commit == first and old.manifest.counts.documents == 1
    again = build_bundle(repo.path, tmp_path / "store", rev=first, embedder=hash_embedder)
    assert again.reused and again.bundle_path == old.bundle_path


def test_bad_revision_and_bad_repo_raise_source_error(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    repo.write("a.md", "# A\n")
    repo.commit()
    with pytest.raises(SourceError):
        build_bundle(repo.path, tmp_path / "store", rev="no-such-branch", embedder=hash_embedder)
    with pytest.raises(SourceError):
        build_bundle(tmp_path, tmp_path / "store", embedder=hash_embedder)
    assert Store(tmp_path / "store").current_id() is None


def test_a_second_writer_is_refused_and_current_is_kept(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    repo.write("a.md", "# A\n")
    repo.commit()
    store = Store(tmp_path / "store")
    with store.writer_lock():
        with pytest.raises(StoreLockedError):
            build_bundle(repo.path, store.root, embedder=hash_embedder)
    assert store.current_id() is None


def test_failed_build_leaves_previous_bundle_current(repo: RepoBuilder, tmp_path: Path, hash_embedder,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from indexer import build as build_module
    from indexer.errors import BuildError

    repo.write("a.md", "# A\n")
    repo.commit()
    good = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    repo.write("b.md", "# B\n")
    repo.commit()

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError("disk full")

    monkeypatch.setattr(build_module, "write_vectors", broken)
    monkeypatch.setattr(build_module, "update_vectors", broken)  # the incremental path
    with pytest.raises(BuildError):
        build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    store = Store(tmp_path / "store")
    assert store.current_id() == good.bundle_id
    assert list(store.staging_dir.iterdir()) == []
    assert [b.bundle_id for b in store.list_bundles()] == [good.bundle_id]


def test_symlinked_markdown_is_skipped_with_a_reason(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    repo.write("real.md", "# Real\n\ntext\n")
    (repo.path / "link.md").symlink_to("real.md")
    repo.commit()
    result = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    assert [(s.path, s.reason) for s in result.manifest.skipped] == [("link.md", "symlink")]
    assert result.manifest.counts.documents == 1


def test_a_killed_build_resumes_its_embeddings(repo: RepoBuilder, tmp_path: Path, hash_embedder,  # type: ignore[no-untyped-def]
                                               monkeypatch) -> None:
    """A first build killed while embedding used to lose everything (a new user lost 70 minutes):
    every embedded batch is committed to the store's checkpoint, the rerun embeds only the rest,
    and the published bundle equals an uninterrupted build's."""
    import indexer.build as build_module
    from artifacts.embedcache import checkpoint_path
    from artifacts.errors import ArtifactError

    for i in range(40):
        repo.write(f"p{i:02d}.md", f"# Strana {i}\n\nText číslo {i} o téme {i * 7}.\n")
    repo.commit()
    store = tmp_path / "store"
    real = build_module.embed_passages_segmented
    calls = {"n": 0}

    def dies_after_two_batches(model, bodies, heads):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt  # like Ctrl-C or a kill between batches
        return real(model, bodies, heads)

    monkeypatch.setattr(build_module, "embed_passages_segmented", dies_after_two_batches)
    with pytest.raises((KeyboardInterrupt, ArtifactError)):
        build_bundle(repo.path, store, embedder=hash_embedder)
    assert Store(store).current_id() is None
    saved = checkpoint_path(store, hash_embedder.spec)
    assert saved.is_file()
    monkeypatch.setattr(build_module, "embed_passages_segmented", real)
    events: list[tuple[str, int, int]] = []
    resumed = build_bundle(repo.path, store, embedder=hash_embedder, progress=lambda *e: events.append(e))
    from indexer.build import batch_sizes

    kept = sum(batch_sizes(40)[:2])  # the two batches that finished (small first batches: 2 + 4)
    assert resumed.manifest.model_extra["embeddings_resumed"] == kept
    assert ("resume", kept, kept) in events and ("embed", 0, 40 - kept) in events  # the user sees what was kept
    assert not saved.exists()  # published: the bundle holds the vectors, the checkpoint is gone
    clean = build_bundle(repo.path, tmp_path / "clean", embedder=hash_embedder)
    assert resumed.manifest.content_digest == clean.manifest.content_digest
    from indexer.build import embedding_text
    from indexer.incremental import load_base_bundle

    a = load_base_bundle(Store(store), resumed.bundle_id, embedding_text)
    b = load_base_bundle(Store(tmp_path / "clean"), clean.bundle_id, embedding_text)
    assert set(a.rows_by_chunk) == set(b.rows_by_chunk) and len(a.rows_by_chunk) == 40
    for chunk_id, (key, rows) in a.rows_by_chunk.items():  # resumed and embedded vectors alike
        assert key == b.rows_by_chunk[chunk_id][0]
        assert np.array_equal(a.vectors[rows], b.vectors[b.rows_by_chunk[chunk_id][1]]), chunk_id
