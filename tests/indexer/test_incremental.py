"""Event-sourced builds: incremental equals scratch, reuse counts, backfill, rollback, gc, crash safety."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from artifacts.store import Store, gc_bundles, pin, resolve_bundle_ref, verify_bundle
from indexer.backfill import backfill
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.bm25 import bm25_ranking
from query.search.request import parse_search_request
from query.search.response import search
from tests.conftest import RepoBuilder, git

GITRAG = str(Path(sys.executable).with_name("gitrag"))


def _doc(title: str, body: str, extra: str = "") -> str:
    return f"---\ntitle: {title}\n{extra}---\n# {title}\n\n{body}\n"


def _paths_everywhere(bundle_path: Path) -> dict[str, set[str]]:
    """Document paths seen by each engine of a bundle: docs, chunks, vectors, BM25 and graph."""
    from whoosh import index as whoosh_index

    from artifacts.graphschema import fetch_rows, open_graph

    docs = {json.loads(line)["path"] for line in (bundle_path / "docs.jsonl").read_text().splitlines()}
    chunks = {json.loads(line)["path"] for line in (bundle_path / "chunks.jsonl").read_text().splitlines()}
    ids = json.loads((bundle_path / "vectors/ids.json").read_text())
    vectors = {i.rsplit("#", 1)[0] for i in ids}
    ix = whoosh_index.open_dir(str(bundle_path / "text"), readonly=True)
    with ix.searcher() as searcher:
        bm25 = {fields["path"] for fields in searcher.all_stored_fields()}
    db, conn = open_graph(bundle_path / "graph")
    graph = {row[0] for row in fetch_rows(conn, "MATCH (d:Document) RETURN d.path")}
    conn.close()
    db.close()
    return {"docs": docs, "chunks": chunks, "vectors": vectors, "bm25": bm25, "graph": graph}


def _vectors_by_chunk(bundle_path: Path) -> dict[str, np.ndarray]:
    """Chunk id -> its vector rows (segment order) of a bundle."""
    ids = json.loads((bundle_path / "vectors/ids.json").read_text())
    vectors = np.load(bundle_path / "vectors/vectors.npy")
    rows: dict[str, list[int]] = {}
    for row, cid in enumerate(ids):
        rows.setdefault(cid, []).append(row)
    return {cid: vectors[r] for cid, r in rows.items()}


def _assert_index_finds_every_row(bundle_path: Path) -> None:
    """Each row's own vector finds that row (label = row) as its nearest neighbour, deleted labels never."""
    import hnswlib

    vectors = np.load(bundle_path / "vectors/vectors.npy")
    index = hnswlib.Index(space="ip", dim=vectors.shape[1])
    index.load_index(str(bundle_path / "vectors/index.hnsw"))
    index.set_ef(max(50, len(vectors)))
    labels, distances = index.knn_query(vectors, k=1)
    assert np.all(distances[:, 0] < 1e-4)  # the nearest is a row with this very vector
    same = np.all(np.isclose(vectors[labels[:, 0]], vectors, atol=1e-6), axis=1)
    assert same.all()
    assert labels.max() < len(vectors)


def _md_paths(repo: RepoBuilder) -> set[str]:
    return {p for p in git(repo.path, "ls-tree", "-r", "--name-only", "HEAD").split("\n") if p.endswith(".md")}


def test_incremental_build_reuses_and_matches_scratch(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    for i in range(6):
        repo.write(f"docs/page{i}.md", _doc(f"Page {i}", f"Shared text {i}.\n\n## Part\n\nMore about topic {i}."))
    repo.commit("base")
    store = tmp_path / "inc"
    first = build_bundle(repo.path, store, embedder=hash_embedder)
    assert first.manifest.built_from is None

    repo.write("docs/page1.md", _doc("Page 1", "Edited text.\n\n## Part\n\nMore about topic 1."))
    repo.move("docs/page2.md", "moved/page2.md")
    repo.remove("docs/page3.md")
    repo.write("docs/new.md", _doc("New", "Brand new [[page0]] link."))
    repo.write("docs/page4.md",
               _doc("Page 4", "Shared text 4.\n\n## Part\n\nMore about topic 4.", "published: false\n"))
    repo.write("docs/broken.md", b"\x00\x01binary")
    commit = repo.commit("edit, rename, delete, add, unpublish, binary")

    inc = build_bundle(repo.path, store, embedder=hash_embedder)
    m = inc.manifest
    assert m.built_from == first.bundle_id and m.commit == commit
    assert m.stats.embeddings_reused > 0 and m.stats.embeddings_computed > 0
    assert m.stats.embeddings_reused + m.stats.embeddings_computed == m.counts.chunks
    changes = m.model_extra["changes"]
    assert changes == {"added": 1, "deleted": 1, "renamed": 1, "modified": 2}

    scratch = build_bundle(repo.path, tmp_path / "scratch", embedder=hash_embedder, scratch=True)
    assert scratch.manifest.built_from is None
    assert scratch.manifest.content_digest == m.content_digest
    assert scratch.manifest.digests == m.digests
    # The updated vector index keeps the parent's labels (rows in label order, not chunk order):
    # the same vectors per chunk, and every row is found by its own vector.
    inc_rows, scratch_rows = _vectors_by_chunk(inc.bundle_path), _vectors_by_chunk(scratch.bundle_path)
    assert inc_rows.keys() == scratch_rows.keys()
    assert all(np.array_equal(inc_rows[cid], scratch_rows[cid]) for cid in inc_rows)
    assert m.model_extra["index_reuse"]["vectors"]["from"] == first.bundle_id
    assert m.model_extra["index_reuse"]["vectors"]["kept"] > 0
    _assert_index_finds_every_row(inc.bundle_path)
    assert (inc.bundle_path / "chunks.jsonl").read_bytes() == (scratch.bundle_path / "chunks.jsonl").read_bytes()
    assert (inc.bundle_path / "docs.jsonl").read_bytes() == (scratch.bundle_path / "docs.jsonl").read_bytes()
    expected = _md_paths(repo) - {"docs/broken.md"}
    for engine, paths in _paths_everywhere(inc.bundle_path).items():
        assert paths == expected, engine
    # The previous bundle is untouched and still verifies.
    assert verify_bundle(first.bundle_path).content_digest == first.manifest.content_digest


def test_incremental_text_index_scores_exactly_like_a_scratch_one(repo: RepoBuilder, tmp_path: Path,
                                                              hash_embedder) -> None:
    for i in range(12):
        repo.write(f"p{i}.md", _doc(f"Strana {i}", f"Horské jazerá a plankton {i}. " * (i + 1)))
    repo.commit()
    build_bundle(repo.path, tmp_path / "inc", embedder=hash_embedder)
    repo.write("p3.md", _doc("Strana 3", "Úplne nový text o planktóne."))
    repo.commit()
    inc = build_bundle(repo.path, tmp_path / "inc", embedder=hash_embedder)
    assert inc.manifest.built_from is not None
    scratch = build_bundle(repo.path, tmp_path / "scratch", embedder=hash_embedder, scratch=True)
    a = open_bundle(inc.bundle_path, embedder=hash_embedder)
    b = open_bundle(scratch.bundle_path, embedder=hash_embedder)
    for query in ("plankton", "horske jazera", "nový text"):
        hits_a, _ = bm25_ranking(a, query, depth=20, published_only=True, any_term_weight=0.5)
        hits_b, _ = bm25_ranking(b, query, depth=20, published_only=True, any_term_weight=0.5)
        assert hits_a == hits_b and hits_a


OPS = st.lists(st.tuples(st.sampled_from(["add", "edit", "rename", "delete", "revert", "unpublish", "dup",
                                          "binary", "badyaml", "samebase"]), st.integers(0, 7)),
               min_size=1, max_size=6)


@settings(max_examples=int(os.environ.get("GITRAG_PROPERTY_EXAMPLES", "6")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=OPS)
def test_property_incremental_equals_scratch_over_random_histories(tmp_path_factory, hash_embedder, ops) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("prop")
    repo = RepoBuilder(root / "repo")
    repo.write("a/start.md", _doc("Start", "Initial page."))
    repo.commit("init")
    store = root / "store"
    build_bundle(repo.path, store, embedder=hash_embedder)
    for step, (op, n) in enumerate(ops):
        existing = sorted(_md_paths(repo))
        target = existing[n % len(existing)] if existing else None
        if op == "add" or target is None:
            repo.write(f"a/new{step}-{n}.md", _doc(f"New {n}", f"Text {n} step {step}."))
        elif op == "edit":
            repo.write(target, _doc("Edited", f"Edited at {step}."))
        elif op == "rename":
            repo.move(target, f"b/renamed{step}.md")
        elif op == "delete":
            repo.remove(target)
        elif op == "revert":
            git(repo.path, "revert", "--no-commit", "HEAD")  # an empty HEAD commit reverts to nothing
        elif op == "unpublish":
            repo.write(target, _doc("Hidden", "Now unpublished.", "published: false\n"))
        elif op == "dup":
            content = (repo.path / target).read_bytes()
            repo.write(f"c/dup{step}/{Path(target).name}", content)
        elif op == "binary":
            repo.write(target, b"\x00binary\x01")
        elif op == "badyaml":
            repo.write(target, "---\ntitle: [broken\nkey: : :\n---\nbody\n")
        elif op == "samebase":
            repo.write(f"d{step}/{Path(target).name}", _doc("Same base", f"Other folder {step}."))
        repo.commit(f"{op} {step}")
        inc = build_bundle(repo.path, store, embedder=hash_embedder)
        scratch = build_bundle(repo.path, root / f"scratch{step}", embedder=hash_embedder, scratch=True)
        assert inc.manifest.content_digest == scratch.manifest.content_digest, (op, step)
        skipped = {s.path for s in inc.manifest.skipped}
        expected = _md_paths(repo) - skipped
        for engine, paths in _paths_everywhere(inc.bundle_path).items():
            assert paths == expected, (engine, op, step)


def test_backfill_builds_every_commit_from_its_parent_and_resumes(repo: RepoBuilder, tmp_path: Path,
                                                                   hash_embedder) -> None:
    commits = []
    for i in range(5):
        repo.write(f"p{i}.md", _doc(f"P{i}", f"text {i}"))
        commits.append(repo.commit(f"c{i}"))
    store = tmp_path / "store"
    first = backfill(repo.path, store, f"{commits[0]}..{commits[2]}", embedder=hash_embedder)
    assert [r.manifest.commit for r in first] == commits[1:3]
    assert first[0].manifest.built_from is None and first[1].manifest.built_from == first[0].bundle_id
    everything = backfill(repo.path, store, None, embedder=hash_embedder)
    assert [r.manifest.commit for r in everything] == commits
    assert [r.reused for r in everything] == [False, True, True, False, False]
    assert everything[3].manifest.built_from == first[1].bundle_id
    assert Store(store).current_id() == everything[-1].bundle_id


def test_use_rolls_back_and_forward_and_search_follows(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    repo.write("old.md", _doc("Old", "Page about the glacier expedition."))
    old = repo.commit("old page")
    repo.remove("old.md")
    repo.write("new.md", _doc("New", "Page about the volcano expedition."))
    new = repo.commit("replace page")
    store_dir = tmp_path / "store"
    backfill(repo.path, store_dir, None, embedder=hash_embedder)
    store = Store(store_dir)

    def top(query: str) -> list[str]:
        bundle = open_bundle(store.current_path(), embedder=hash_embedder)
        body = search(bundle, parse_search_request({"query": query}))
        hits, _ = bm25_ranking(bundle, query, depth=5, published_only=True, any_term_weight=0.5)
        return [r["document_path"] for r in body["results"]] if hits else []

    assert top("glacier") == [] and top("volcano") == ["new.md"]
    store.set_current(resolve_bundle_ref(store, old[:8]).bundle_id)
    assert top("glacier") == ["old.md"] and top("volcano") == []
    store.set_current(resolve_bundle_ref(store, "main", repo.path).bundle_id)
    assert store.current_id().startswith(new)


def test_cli_use_bundles_verify_gc_and_diff(repo: RepoBuilder, tmp_path: Path) -> None:
    env = {**os.environ, "GITRAG_EMBEDDER": "hash-64"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([GITRAG, *args], capture_output=True, text=True, env=env, timeout=120)

    commits = []
    for i in range(4):
        repo.write(f"p{i}.md", _doc(f"P{i}", f"text {i}"))
        if i == 2:
            repo.move("p0.md", "renamed.md")
        commits.append(repo.commit(f"c{i}"))
    store = str(tmp_path / "store")
    assert run("build", "--repo", str(repo.path), "--store", store, "--all").returncode == 0
    listed = json.loads(run("bundles", "--store", store, "--json").stdout)
    assert [b["commit"] for b in listed] == commits[::-1]
    assert sum(b["current"] for b in listed) == 1 and next(b for b in listed if b["current"])["commit"] == commits[-1]

    used = run("use", commits[1][:10], "--store", store)
    assert used.returncode == 0, used.stderr
    assert Store(store).current_path().name.startswith(commits[1])
    assert run("use", "main", "--store", store, "--repo", str(repo.path)).returncode == 0
    assert Store(store).current_path().name.startswith(commits[3])
    bad = run("use", "../../etc/passwd", "--store", store)
    assert bad.returncode == 1 and "invalid revision" in bad.stderr

    diff = json.loads(run("diff", commits[1][:10], commits[2][:10], "--store", store, "--json").stdout)
    assert diff["renamed"] == [{"from": "p0.md", "to": "renamed.md"}] and diff["added"] == ["p2.md"]

    pin(Store(store))
    gc = run("gc", "--keep", "1", "--store", store)
    assert gc.returncode == 0, gc.stderr
    remaining = [b["commit"] for b in json.loads(run("bundles", "--store", store, "--json").stdout)]
    assert remaining == [commits[3]]

    target = Store(store).current_path()
    tampered = target / "chunks.jsonl"
    os.chmod(target, 0o755)
    os.chmod(tampered, 0o644)
    tampered.write_text(tampered.read_text().replace("text", "TEXT"))
    verify = run("verify", "--store", store)
    assert verify.returncode == 1 and "chunks.jsonl: sha256/size mismatch" in verify.stderr


def test_gc_never_deletes_current_or_pinned(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    commits = []
    for i in range(4):
        repo.write(f"p{i}.md", _doc(f"P{i}", f"text {i}"))
        commits.append(repo.commit(f"c{i}"))
    store = Store(tmp_path / "store")
    results = backfill(repo.path, store.root, None, embedder=hash_embedder)
    store.set_current(results[0].bundle_id)  # roll back to the oldest
    pin(store)
    removed = gc_bundles(store, keep=0)
    assert results[0].bundle_id not in removed and len(removed) == 3
    assert store.current_path() == results[0].bundle_path


@pytest.mark.e2e
@pytest.mark.parametrize("stage", ["find_base", "parse", "embed", "text_index", "vector_index", "graph",
                                   "digest", "before_rename", "publish", "after_current"])
def test_kill_9_at_any_stage_leaves_no_half_state(repo: RepoBuilder, tmp_path: Path, hash_embedder, stage: str) -> None:
    repo.write("a.md", _doc("A", "first"))
    repo.commit()
    store = Store(tmp_path / "store")
    good = build_bundle(repo.path, store.root, embedder=hash_embedder)
    repo.write("b.md", _doc("B", "second"))
    new_commit = repo.commit()
    env = {**os.environ, "GITRAG_EMBEDDER": "hash-64", "GITRAG_CRASH_AT": stage}
    proc = subprocess.run([GITRAG, "build", "--repo", str(repo.path), "--store", str(store.root)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == -9, (stage, proc.stderr)
    bundles = {b.bundle_id: b for b in store.list_bundles()}
    new_ids = [i for i in bundles if i.startswith(new_commit)]
    # Either no new bundle, or a complete one that verifies.
    for bundle_id in new_ids:
        verify_bundle(bundles[bundle_id].path)
    assert store.current_id() in {good.bundle_id, *new_ids}
    if stage in ("publish", "after_current"):
        assert new_ids
    if stage == "after_current":
        assert store.current_id() == new_ids[0]
    if not new_ids:
        assert store.current_id() == good.bundle_id
    # The next build cleans stale staging and completes.
    again = build_bundle(repo.path, store.root, embedder=hash_embedder)
    assert store.current_id() == again.bundle_id and list(store.staging_dir.iterdir()) == []
    assert verify_bundle(again.bundle_path)


@pytest.mark.e2e
def test_second_build_exits_with_a_clear_message_while_locked(repo: RepoBuilder, tmp_path: Path) -> None:
    repo.write("a.md", _doc("A", "x"))
    repo.commit()
    store = Store(tmp_path / "store")
    with store.writer_lock():
        assert Store(store.root).writer_busy() is True  # what /health and `search` tell a user while building
        # the lock is checked before the model loads: the message comes at once and names --wait
        proc = subprocess.run([GITRAG, "build", "--repo", str(repo.path), "--store", str(store.root),
                               "--embedder", "sentence-transformers/all-MiniLM-L6-v2"],
                              capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120)
    assert proc.returncode == 1 and "holds the store lock" in proc.stderr and "--wait" in proc.stderr
    assert "load_model" not in proc.stderr, proc.stderr
    assert store.current_id() is None
    assert Store(store.root).writer_busy() is False
