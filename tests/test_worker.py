"""The SQLite job queue and the worker: coalescing, retries, restart, late jobs, force-push, mirror fetch."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from artifacts.jobs import JobQueue, worker_lock, worker_running
from artifacts.store import Store
from indexer.worker import DivergedError, fetch_mirror, run_worker
from tests.conftest import RepoBuilder, git


def _bare(repo: RepoBuilder, tmp_path: Path) -> Path:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.path), str(bare)], check=True)
    return bare


def _push(repo: RepoBuilder, bare: Path, force: bool = False) -> None:
    git(repo.path, "push", "-q", *(["-f"] if force else []), str(bare), "main")


def test_queue_coalesces_dedupes_and_orders(tmp_path: Path) -> None:
    queue = JobQueue(tmp_path)
    first = queue.enqueue(kind="push", repo="/r", branch="main", commit="a" * 40, old_commit="0" * 40)
    second = queue.enqueue(kind="push", repo="/r", branch="main", commit="b" * 40, old_commit="a" * 40)
    assert second.coalesced and second.job.id == first.job.id and second.job.commit == "b" * 40
    other = queue.enqueue(kind="push", repo="/r", branch="dev", commit="c" * 40)
    assert other.job.id != first.job.id
    hook = queue.enqueue(kind="sync", repo="/m", branch="main", remote="/x", delivery_id="gh:1")
    again = queue.enqueue(kind="sync", repo="/m", branch="main", remote="/x", delivery_id="gh:1")
    assert again.duplicate and again.job.id == hook.job.id
    claimed = queue.claim()
    assert claimed is not None and claimed.id == first.job.id and claimed.status == "running"
    # A running job is never changed: a newer push gets a new job.
    third = queue.enqueue(kind="push", repo="/r", branch="main", commit="d" * 40)
    assert not third.coalesced and third.job.id > hook.job.id
    assert queue.requeue_running() == 1 and queue.get(first.job.id).status == "queued"  # type: ignore[union-attr]
    assert [j.id for j in queue.list_jobs()] == sorted([j.id for j in queue.list_jobs()], reverse=True)


def test_failing_job_is_retried_three_times_then_failed(tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "store"
    queue = JobQueue(store)
    job = queue.enqueue(kind="push", repo=str(tmp_path / "missing.git"), branch="main", commit="a" * 40).job
    run_worker(store, embedder=hash_embedder, idle_exit=0.0, poll=0.01, retry_delay=0.0)
    done = queue.get(job.id)
    assert done is not None and done.status == "failed" and done.attempts == 3 and done.error
    assert not (store / "CURRENT").exists()


def test_worker_builds_pushes_and_never_moves_current_backwards(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                  hash_embedder) -> None:
    repo.write("a.md", "# A\n\nPrvá verzia.\n")
    c1 = repo.commit("one")
    bare = _bare(repo, tmp_path)
    store = tmp_path / "store"
    queue = JobQueue(store)
    j1 = queue.enqueue(kind="push", repo=str(bare), branch="main", commit=c1).job
    assert run_worker(store, embedder=hash_embedder, idle_exit=0.0, poll=0.01) == 1
    assert queue.get(j1.id).status == "succeeded" and Store(store).current_id().startswith(c1)  # type: ignore[union-attr]

    repo.write("a.md", "# A\n\nDruhá verzia.\n")
    c2 = repo.commit("two")
    _push(repo, bare)
    j2 = queue.enqueue(kind="push", repo=str(bare), branch="main", commit=c2, old_commit=c1).job
    run_worker(store, embedder=hash_embedder, idle_exit=0.0, poll=0.01)
    assert queue.get(j2.id).bundle_id.startswith(c2) and Store(store).current_id().startswith(c2)  # type: ignore[union-attr]

    # A late job for c1 (e.g. a redelivery) must not move CURRENT back to c1.
    late = queue.enqueue(kind="push", repo=str(bare), branch="main", commit=c1).job
    run_worker(store, embedder=hash_embedder, idle_exit=0.0, poll=0.01)
    assert queue.get(late.id).phase == "built_not_current" and Store(store).current_id().startswith(c2)  # type: ignore[union-attr]

    # Another late job for a commit never built: its bundle is published (queryable with `at`), not current.
    repo.write("a.md", "# A\n\nTretia verzia.\n")
    c2b = repo.commit("three")
    _push(repo, bare)
    repo.write("a.md", "# A\n\nŠtvrtá verzia.\n")
    c2c = repo.commit("four")
    _push(repo, bare)
    queue.enqueue(kind="push", repo=str(bare), branch="main", commit=c2c)
    run_worker(store, embedder=hash_embedder, idle_exit=0.0, poll=0.01)
    late2 = queue.enqueue(kind="push", repo=str(bare), branch="main", commit=c2b).job
    run_worker(store, embedder=hash_embedder, idle_exit=0.0, poll=0.01)
    assert Store(store).current_id().startswith(c2c) and Store(store).find_bundles_for_commit(c2b)
    assert queue.get(late2.id).phase == "built_not_current"  # type: ignore[union-attr]

    # A force-push to a commit that is not a descendant is the new tip: built and made current.
    git(repo.path, "reset", "-q", "--hard", c1)
    repo.write("b.md", "# B\n\nPrepísaná história.\n")
    c3 = repo.commit("rewritten")
    _push(repo, bare, force=True)
    forced = queue.enqueue(kind="push", repo=str(bare), branch="main", commit=c3, old_commit=c2).job
    run_worker(store, embedder=hash_embedder, idle_exit=0.0, poll=0.01)
    assert queue.get(forced.id).status == "succeeded" and Store(store).current_id().startswith(c3)  # type: ignore[union-attr]


def test_worker_requeues_jobs_of_a_dead_worker_and_is_exclusive(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                  hash_embedder) -> None:
    repo.write("a.md", "# A\n")
    c1 = repo.commit()
    bare = _bare(repo, tmp_path)
    store = tmp_path / "store"
    queue = JobQueue(store)
    job = queue.enqueue(kind="push", repo=str(bare), branch="main", commit=c1).job
    assert queue.claim(worker_pid=999999) is not None  # then the worker "dies"
    with worker_lock(store) as taken:
        assert taken and worker_running(store)
        assert run_worker(store, embedder=hash_embedder, idle_exit=0.0) == 0  # lock held: exits at once
    assert queue.get(job.id).status == "running"  # type: ignore[union-attr]
    run_worker(store, embedder=hash_embedder, idle_exit=0.0, poll=0.01)
    done = queue.get(job.id)
    assert done is not None and done.status == "succeeded" and done.attempts == 2


def test_fetch_mirror_fast_forwards_and_reports_divergence(repo: RepoBuilder, tmp_path: Path) -> None:
    repo.write("a.md", "# A\n")
    c1 = repo.commit()
    upstream = _bare(repo, tmp_path)
    mirror = tmp_path / "mirror.git"
    assert fetch_mirror(mirror, str(upstream), "main") == c1
    repo.write("a.md", "# A2\n")
    c2 = repo.commit()
    _push(repo, upstream)
    assert fetch_mirror(mirror, str(upstream), "main") == c2
    git(repo.path, "reset", "-q", "--hard", c1)
    repo.write("c.md", "# C\n")
    repo.commit("diverged")
    _push(repo, upstream, force=True)
    with pytest.raises(DivergedError):
        fetch_mirror(mirror, str(upstream), "main")
    assert git(mirror, "rev-parse", "refs/heads/main").strip() == c2  # not overwritten


def test_replayed_payload_maps_to_its_job_until_a_newer_push(tmp_path: Path) -> None:
    """The delivery id is unsigned: a replay with a fresh id is recognised by the signed payload (ref + after)."""
    queue = JobQueue(tmp_path)
    key_a, key_b = "push:o/w:main:" + "a" * 40, "push:o/w:main:" + "b" * 40
    first = queue.enqueue(kind="sync", repo="/m", branch="main", remote="/x", delivery_id="gh:1", replay_key=key_a)
    for n in range(2, 30):
        replay = queue.enqueue(kind="sync", repo="/m", branch="main", remote="/x", delivery_id=f"gh:{n}",
                               replay_key=key_a)
        assert replay.duplicate and replay.job.id == first.job.id
    assert len(queue.list_jobs()) == 1
    # Once claimed (running) it still absorbs replays: it builds the branch tip anyway.
    assert queue.claim() is not None
    assert queue.enqueue(kind="sync", repo="/m", branch="main", delivery_id="gh:x", replay_key=key_a).duplicate
    newer = queue.enqueue(kind="sync", repo="/m", branch="main", delivery_id="gh:y", replay_key=key_b)
    assert not newer.duplicate and newer.job.id != first.job.id
    # After a newer push the old payload may be a force-push back: it queues (coalescing into the queued job).
    back = queue.enqueue(kind="sync", repo="/m", branch="main", delivery_id="gh:z", replay_key=key_a)
    assert not back.duplicate and back.coalesced and back.job.id == newer.job.id


def test_concurrent_spawns_start_one_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """30 producers at once start one worker: the lock passes from producer to worker without a gap."""
    import threading

    from artifacts.jobs import WORKER_LOG, spawn_worker

    store = tmp_path / "store"
    JobQueue(store)
    monkeypatch.setenv("GITRAG_WORKER_IDLE_EXIT", "1")
    barrier = threading.Barrier(30)
    started: list[bool] = []

    def producer() -> None:
        barrier.wait()
        started.append(spawn_worker(store))

    threads = [threading.Thread(target=producer) for _ in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert started.count(True) == 1
    assert worker_running(store)  # the child holds the lock it was handed
    _wait_for_workers(store)
    log = (store / WORKER_LOG).read_text(encoding="utf-8")
    assert log.count("gitrag worker: started") == 1 and log.count("job(s) processed") == 1, log


def _wait_for_workers(store: Path, timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while worker_running(store) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # a worker started late would take the lock within this time
    while worker_running(store) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not worker_running(store)
