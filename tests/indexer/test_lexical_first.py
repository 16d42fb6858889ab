"""Lexical first, vectors after: a build publishes a BM25-and-graph bundle before it embeds, the server
answers from it (saying so), and the complete bundle of the same commit follows and is swapped in.

Real Git repositories, Whoosh, hnswlib, ladybug and a real aiohttp server on 127.0.0.1; the vectors
come from the deterministic hash embedder, behind a gate so that a test can look at the store and
the server while the embedding is provably still running.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import aiohttp
import numpy as np
import pytest
from aiohttp.test_utils import TestServer
from click.testing import CliRunner

from artifacts.embedcache import checkpoint_path
from artifacts.store import LEXICAL_SUFFIX, Store, resolve_bundle_ref, verify_bundle
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.request import parse_search_request
from query.search.response import LEXICAL_WARNING, search
from query.server.app import create_app
from tests.conftest import RepoBuilder


class GatedEmbedder:
    """The hash embedder, whose passage batches wait for ``gate`` (set it to let embedding go on).

    ``batches`` counts the batches embedded; ``release`` makes a build treat it like a model in a
    child process (``lexical_first=None`` then applies).
    """

    def __init__(self, inner, gate: threading.Event | None = None) -> None:  # type: ignore[no-untyped-def]
        self.inner = inner
        self.spec = inner.spec
        self.gate = gate or threading.Event()
        self.batches = 0
        self.on_batch = None

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not self.gate.wait(timeout=60):
            raise TimeoutError("the test never opened the gate")
        self.batches += 1
        if self.on_batch is not None:
            self.on_batch(self.batches)
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)

    def release(self) -> None:
        """Nothing to end (the real one ends its child process)."""


def _pages(repo: RepoBuilder, n: int = 24) -> str:
    for i in range(n):
        repo.write(f"wiki/p{i:02d}.md", f"# Strana {i}\n\nZebraplanktón číslo {i} a [[p{(i + 1) % n:02d}]].\n\n"
                                        f"## Ďalej\n\nPakety protokolu TCP, téma {i * 7}.\n")
    return repo.commit("pages")


def test_lexical_bundle_is_current_before_any_vector_then_the_complete_bundle_follows(
        repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    _pages(repo)
    store = Store(tmp_path / "store")
    model = GatedEmbedder(hash_embedder)
    seen: dict[str, object] = {}

    def on_lexical(result) -> None:  # type: ignore[no-untyped-def]
        # nothing is embedded yet, and the lexical bundle is already published, verified and CURRENT
        seen.update(batches=model.batches, current=store.current_id(), bundle_id=result.bundle_id,
                    stage=verify_bundle(result.bundle_path).stage)
        lexical = open_bundle(result.bundle_path)
        body = search(lexical, parse_search_request({"query": "zebraplankton tcp"}))
        seen.update(engines=body["engines"], warnings=body["warnings"], results=len(body["results"]),
                    matches={r["match"] for r in body["results"]}, hnsw=lexical.hnsw)
        lexical.close()
        model.gate.set()

    result = build_bundle(repo.path, store.root, embedder=model, lexical_first=True, on_lexical=on_lexical)
    assert seen["batches"] == 0 and seen["stage"] == "lexical" and seen["hnsw"] is None
    assert seen["bundle_id"] == result.bundle_id + LEXICAL_SUFFIX == seen["current"]
    assert seen["engines"] == ["bm25"] and seen["warnings"] == [LEXICAL_WARNING]
    assert seen["results"] > 0 and seen["matches"] == {"lexical"}
    # the complete bundle: CURRENT, verified, hybrid, and the same content as a single-pass build
    assert model.batches > 0 and result.manifest.stage == "complete" and result.current
    assert store.current_id() == result.bundle_id and result.lexical is not None
    verify_bundle(result.bundle_path)
    single = build_bundle(repo.path, tmp_path / "single", embedder=hash_embedder)
    assert result.manifest.content_digest == single.manifest.content_digest
    assert result.manifest.digests == single.manifest.digests
    assert "vectors" not in result.lexical.manifest.digests and result.lexical.manifest.counts.vectors == 0
    full = open_bundle(result.bundle_path, embedder=hash_embedder)
    body = search(full, parse_search_request({"query": "zebraplankton tcp"}))
    assert body["engines"] == ["bm25", "vector"] and body["warnings"] == []
    assert np.allclose(np.load(result.bundle_path / "vectors" / "vectors.npy"),
                       np.load(single.bundle_path / "vectors" / "vectors.npy"))
    # the one resolver prefers the complete bundle of a commit; the lexical one stays addressable
    assert resolve_bundle_ref(store, result.manifest.commit[:12]).bundle_id == result.bundle_id
    assert resolve_bundle_ref(store, result.lexical.bundle_id).manifest.stage == "lexical"
    assert not checkpoint_path(store.root, hash_embedder.spec).exists()


def test_bundles_command_shows_which_bundle_is_which(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    from artifacts.cli import main

    _pages(repo, 6)
    model = GatedEmbedder(hash_embedder)
    model.gate.set()
    result = build_bundle(repo.path, tmp_path / "store", embedder=model, lexical_first=True)
    out = CliRunner().invoke(main, ["bundles", "--store", str(tmp_path / "store"), "--json"])
    rows = {row["bundle_id"]: row for row in json.loads(out.output)}
    assert rows[result.bundle_id]["stage"] == "complete" and rows[result.bundle_id]["current"]
    lexical = rows[result.bundle_id + LEXICAL_SUFFIX]
    assert lexical["stage"] == "lexical" and lexical["engines"] == ["bm25", "graph"]
    assert lexical["completed_by"] == result.bundle_id and not lexical["current"]
    text = CliRunner().invoke(main, ["bundles", "--store", str(tmp_path / "store")]).output
    assert "[lexical: BM25 + graph; complete bundle published]" in text


def test_a_waiting_job_supersedes_the_rest_of_the_embedding_which_the_next_build_resumes(
        repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    from indexer.build import batch_sizes

    _pages(repo, 40)
    store = Store(tmp_path / "store")
    model = GatedEmbedder(hash_embedder)
    model.gate.set()
    result = build_bundle(repo.path, store.root, embedder=model, lexical_first=True,
                          should_stop=lambda: model.batches >= 2)  # "a push arrived" after two batches
    assert result.stopped == "superseded" and result.manifest.stage == "lexical"
    assert store.current_id() == result.bundle_id  # BM25 + graph stays served
    assert not (store.bundles_dir / result.bundle_id.removesuffix(LEXICAL_SUFFIX)).exists()
    assert checkpoint_path(store.root, hash_embedder.spec).is_file()  # the two batches are kept
    events: list[tuple[str, int, int]] = []
    again = build_bundle(repo.path, store.root, embedder=hash_embedder, lexical_first=True,
                         progress=lambda *e: events.append(e))
    n = result.manifest.counts.chunks
    kept = sum(batch_sizes(n)[:2])
    assert again.manifest.stage == "complete" and again.manifest.model_extra["embeddings_resumed"] == kept
    assert ("embed", 0, n - kept) in events and store.current_id() == again.bundle_id


def test_the_server_answers_from_bm25_during_embedding_and_swaps_to_hybrid(
        repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    _pages(repo)
    store = Store(tmp_path / "store")
    model = GatedEmbedder(hash_embedder)
    lexical_up = threading.Event()

    async def scenario() -> None:
        server = TestServer(create_app(store.root, embedder=hash_embedder, poll_interval=0.05), host="127.0.0.1")
        await server.start_server()
        base = f"http://127.0.0.1:{server.port}"
        failures: list[int] = []
        engines: list[tuple[str, ...]] = []
        try:
            building = asyncio.get_running_loop().run_in_executor(None, lambda: build_bundle(
                repo.path, store.root, embedder=model, lexical_first=True, on_lexical=lambda r: lexical_up.set()))
            await asyncio.to_thread(lexical_up.wait, 60)
            async with aiohttp.ClientSession() as http:
                body: dict = {}
                for _ in range(200):  # the server picks the lexical bundle up by polling CURRENT
                    async with http.post(base + "/search", json={"query": "zebraplankton"}) as resp:
                        if resp.status == 200:
                            body = await resp.json()
                            break
                    await asyncio.sleep(0.05)
                assert body["engines"] == ["bm25"] and body["warnings"] == [LEXICAL_WARNING]
                assert body["index_version"]["bundle_id"].endswith(LEXICAL_SUFFIX) and body["results"]
                async with http.post(base + "/answer", json={"query": "zebraplankton", "mode": "retrieve"}) as resp:
                    answered = await resp.json()
                assert resp.status == 200 and answered["engines"] == ["bm25"]
                assert answered["warnings"] == [LEXICAL_WARNING]
                model.gate.set()  # let the embedding finish while requests keep coming
                for _ in range(400):
                    async with http.post(base + "/search", json={"query": "zebraplankton"}) as resp:
                        if resp.status != 200:
                            failures.append(resp.status)
                            continue
                        body = await resp.json()
                        engines.append(tuple(body["engines"]))
                        if body["engines"] == ["bm25", "vector"]:
                            break
                    await asyncio.sleep(0.02)
            result = await building
            assert body["index_version"]["bundle_id"] == result.bundle_id and body["warnings"] == []
            assert failures == [] and ("bm25",) in engines
        finally:
            model.gate.set()
            await server.close()

    asyncio.run(scenario())


def test_the_worker_serves_the_lexical_bundle_and_a_newer_push_supersedes_the_embedding(
        repo: RepoBuilder, tmp_path: Path, hash_embedder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import indexer.build as build_module
    from artifacts.jobs import JobQueue
    from indexer.worker import run_worker

    monkeypatch.setattr(build_module, "LEXICAL_FIRST_MIN", 8)
    first = _pages(repo)
    store = Store(tmp_path / "store")
    queue = JobQueue(store.root)
    queue.enqueue(kind="push", repo=str(repo.path), branch="main", commit=first)
    model = GatedEmbedder(hash_embedder)
    model.gate.set()
    pushed: list[str] = []

    def push_during_embedding(batch: int) -> None:
        if batch == 1 and not pushed:  # a push lands while the first commit is being embedded
            assert store.current_id() == f"{first}.{store.current_id().split('.')[1]}"  # the lexical bundle
            repo.write("wiki/new.md", "# Nová\n\nKvantová kryptografia.\n")
            pushed.append(repo.commit("new page"))
            queue.enqueue(kind="push", repo=str(repo.path), branch="main", commit=pushed[0])

    model.on_batch = push_during_embedding
    assert run_worker(store.root, embedder=model, idle_exit=0.1, max_jobs=2) == 2
    jobs = {j.commit: j for j in queue.list_jobs()}
    assert jobs[first].phase == "superseded" and jobs[first].bundle_id.endswith(LEXICAL_SUFFIX)
    assert jobs[pushed[0]].phase == "done" and store.current_id() == jobs[pushed[0]].bundle_id
    assert Store(store.root).find_bundles_for_commit(first)[0].manifest.stage == "lexical"
    served = open_bundle(store.current_path(), embedder=hash_embedder)
    assert served.manifest.stage == "complete" and served.manifest.model_extra["embeddings_resumed"] > 0


@pytest.mark.parametrize("wait", [False, True])
def test_build_command_is_lexical_first_unless_wait(repo: RepoBuilder, tmp_path: Path, wait: bool,
                                                    monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import indexer.build as build_module
    from indexer.cli import build_command

    monkeypatch.setattr(build_module, "LEXICAL_FIRST_MIN", 8)
    monkeypatch.setattr(build_module, "open_build_embedder", lambda name: GatedEmbedder(
        __import__("artifacts.embedding", fromlist=["load_embedder"]).load_embedder("hash-64"), _open_gate()))
    _pages(repo, 12)
    args = ["--repo", str(repo.path), "--store", str(tmp_path / "store"), "--embedder", "hash-64"]
    out = CliRunner().invoke(build_command, args + (["--wait"] if wait else []))
    assert out.exit_code == 0, out.output
    names = sorted(p.name for p in (tmp_path / "store" / "bundles").iterdir())
    if wait:
        assert len(names) == 1 and "searchable now" not in out.output
    else:
        assert len(names) == 2 and names[1].endswith(LEXICAL_SUFFIX)
        assert "searchable now" in out.output and "vectors added in" in out.output


def _open_gate() -> threading.Event:
    gate = threading.Event()
    gate.set()
    return gate


def test_a_cli_build_yields_to_a_job_queued_or_claimed_after_it_started(tmp_path: Path) -> None:
    import time

    from artifacts.jobs import JobQueue, jobs_queued_since

    store = tmp_path / "store"
    store.mkdir()
    assert jobs_queued_since(store, 0.0) == 0 and not (store / "jobs.sqlite").exists()  # no queue: none made
    queue = JobQueue(store)
    queue.enqueue(kind="push", repo="/r", branch="main", commit="a" * 40)
    started = time.time()
    assert jobs_queued_since(store, started) == 0  # queued before the build started
    time.sleep(0.01)
    queue.enqueue(kind="push", repo="/r", branch="main", commit="b" * 40)  # coalesced: updated now
    assert jobs_queued_since(store, started) == 1
    queue.claim()  # a worker took it at once and waits for the build's writer lock
    assert jobs_queued_since(store, started) == 1
