"""``gitrag worker`` and ``gitrag jobs``: run the store's build-job queue (see :mod:`artifacts.jobs`).

A job is processed in phases: ``fetch`` (``sync`` jobs only: fetch the branch of the remote into
the local mirror, fast-forward only), ``resolve`` (decide what to build), ``build``
(:func:`indexer.build.build_bundle`, incremental where it can be), then ``done``.  A build that must
embed many chunks publishes its BM25-and-graph bundle first (phase ``embed`` while the vectors are
computed; ``CURRENT`` moves to it when the commit is the branch tip) and then the complete bundle.
A job queued meanwhile (a newer push) supersedes the rest of that embedding: the job ends in phase
``superseded`` with the lexical bundle, the newer job runs next and its embedding resumes from the
store's checkpoint (every embedded batch is kept there).

``CURRENT`` never moves backwards because of a late job.  Bundles are built with
``update_current=False``; *after* the build the job's commit is compared with the branch tip in the
repository as it is now.  Only when they are equal (and the store is not pinned) does the worker
point ``CURRENT`` at the new bundle.  A late job (the branch has moved on: a newer push happened
and has its own job) still publishes its bundle, so that commit stays queryable with ``at``, but
ends in phase ``built_not_current``.  A force-push that rewinds the branch is not "late": its
commit is the tip, so it becomes current even though it may be older than the served commit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pygit2

from artifacts.jobs import MAX_ATTEMPTS, WORKER_METRICS, Job, JobQueue, worker_lock, write_worker_metrics
from artifacts.store import Store

from .errors import IndexerError


class DivergedError(IndexerError):
    """The remote branch is not a descendant of the mirror's branch (a force-push upstream)."""


class FetchError(IndexerError):
    """``git fetch`` into the mirror failed."""


def fetch_mirror(mirror: Path, remote: str, branch: str, timeout: float = 300.0) -> str:
    """Fetch ``branch`` of ``remote`` into the bare ``mirror`` (created if missing), fast-forward only.

    Returns the new tip sha.  Raises :class:`DivergedError` when the fetched tip does not contain
    the mirror's current tip (the mirror is left unchanged) and :class:`FetchError` when fetching fails
    (its message says so when the remote has no such branch).
    """
    mirror = Path(mirror)
    if not (mirror / "HEAD").exists():
        pygit2.init_repository(str(mirror), bare=True)
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}  # C: git's messages are matched below
    staging_ref = f"refs/gitrag/fetched/{branch}"
    try:
        subprocess.run(["git", "-C", str(mirror), "fetch", "--quiet", "--no-tags", remote,
                        f"+refs/heads/{branch}:{staging_ref}"], check=True, capture_output=True,
                       timeout=timeout, env=env)
    except subprocess.CalledProcessError as exc:
        if b"couldn't find remote ref" in (exc.stderr or b""):
            raise FetchError(f"the remote has no branch {branch} (set webhook.branch in the server config)") from exc
        raise FetchError(f"fetching branch {branch} failed") from exc
    except subprocess.TimeoutExpired as exc:
        raise FetchError(f"fetching branch {branch} failed") from exc
    repo = pygit2.Repository(str(mirror))
    fetched = repo.references[staging_ref].target
    local_ref = repo.references.get(f"refs/heads/{branch}")
    if local_ref is not None and local_ref.target != fetched:
        if not repo.descendant_of(fetched, local_ref.target):
            raise DivergedError(f"branch {branch} diverged from the mirror; not overwritten")
        local_ref.set_target(fetched, "gitrag: fast-forward")
    elif local_ref is None:
        repo.references.create(f"refs/heads/{branch}", fetched)
    if repo.head_is_unborn:
        repo.set_head(f"refs/heads/{branch}")
    return str(fetched)


def process_job(job: Job, store_dir: Path, queue: JobQueue, embedder: object | None = None,
                publish: tuple[str, str | None] | None = None) -> None:
    """Run one claimed job to ``succeeded`` (or raise; the caller records the failure).

    ``publish``: ``(s3 URL, endpoint URL or None)``: after a build that moved ``CURRENT``, publish
    the store there (:func:`artifacts.remote.publish_store`); a failed publish is logged and leaves
    the job succeeded (the next publish uploads whatever is missing).
    """
    from .build import build_bundle

    started = time.monotonic()
    commit = job.commit
    if job.kind == "sync":
        queue.set_phase(job.id, "fetch")
        commit = fetch_mirror(Path(job.repo), job.remote or "", job.branch)
    queue.set_phase(job.id, "resolve", commit)
    if commit is None:
        commit = _branch_tip(job.repo, job.branch)
    if commit is None:
        raise IndexerError(f"branch {job.branch} does not exist")
    queue.set_phase(job.id, "build", commit)
    log(f"job {job.id}: building {commit[:12]} of branch {job.branch} (attempt {job.attempts})")
    from .progress import BuildProgress

    store = Store(store_dir)

    def on_lexical(lexical) -> None:  # type: ignore[no-untyped-def]
        # The BM25-and-graph bundle is published before the vectors (a long embedding): serve it
        # now if this commit is still the tip.  The build holds the writer lock at this point.
        if _branch_tip(job.repo, job.branch) == commit and not store.is_pinned():
            store.set_current(lexical.bundle_id)
            log(f"job {job.id}: {lexical.bundle_id} (BM25 + graph) is CURRENT; embedding continues")
        queue.set_phase(job.id, "embed")

    with BuildProgress("lines", sys.stderr, prefix=f"gitrag worker: job {job.id}: ") as progress:
        result = build_bundle(job.repo, store_dir, commit, embedder=embedder, branch=job.branch,  # type: ignore[arg-type]
                              wait_for_lock=True, update_current=False, progress=progress,
                              lexical_first=None, on_lexical=on_lexical,
                              should_stop=lambda: queue.newer_queued(job.id) > 0)
    if result.stopped:
        # A newer push is waiting: it is built next; its embedding resumes from the store's checkpoint.
        queue.finish(job.id, bundle_id=result.bundle_id, phase="superseded")
        _write_metrics(store_dir, result.timings, started, "superseded")
        log(f"job {job.id}: embedding of {commit[:12]} left for a newer job; {result.bundle_id} (BM25 + graph) "
            f"stays published")
        return
    if result.from_store:
        from artifacts.storeconfig import describe

        log(f"job {job.id}: store defaults used: {describe(result.from_store)}")
    # Decide on CURRENT with the tip as it is *now*: if the branch moved on while we built, this
    # job is late and must not move CURRENT backwards; the newer push has its own job.
    if _branch_tip(job.repo, job.branch) != commit:
        queue.finish(job.id, bundle_id=result.bundle_id, phase="built_not_current")
        _write_metrics(store_dir, result.timings, started, "built_not_current")
        log(f"job {job.id}: built {result.bundle_id}; not current (branch {job.branch} moved on)")
        return
    if not store.is_pinned():
        with store.writer_lock(wait=True):
            store.set_current(result.bundle_id)
    queue.finish(job.id, bundle_id=result.bundle_id)
    _write_metrics(store_dir, result.timings, started, "done")
    log(f"job {job.id}: built {result.bundle_id}" + (" (CURRENT)" if not store.is_pinned() else " (store pinned)"))
    if publish is not None:
        _publish(job, store, *publish)


def _publish(job: Job, store: Store, url: str, endpoint_url: str | None) -> None:
    from artifacts.errors import ArtifactError
    from artifacts.remote import RemoteStore, publish_store

    try:
        report = publish_store(store, RemoteStore(url, endpoint_url=endpoint_url))
    except ArtifactError as exc:
        log(f"job {job.id}: publishing to {url} failed ({type(exc).__name__}: {exc}); the remote CURRENT is "
            "unchanged (run `gitrag publish`)")
        return
    log(f"job {job.id}: published to {url}: {report.files_uploaded} file(s), {report.bytes_uploaded} bytes uploaded"
        + (f"; remote CURRENT -> {report.current}" if report.current_moved else f"; {report.note or 'CURRENT as is'}"))


def _write_metrics(store_dir: Path, timings: dict[str, float], started: float, outcome: str) -> None:
    try:
        write_worker_metrics(store_dir, stage_seconds=timings, total_seconds=time.monotonic() - started,
                             outcome=outcome)
    except OSError:  # metrics are best effort; the job itself succeeded
        log(f"could not write {WORKER_METRICS}")


def _branch_tip(repo_path: str, branch: str) -> str | None:
    repo = pygit2.Repository(repo_path)
    ref = repo.references.get(f"refs/heads/{branch}")
    return str(ref.target) if ref is not None else None


def log(message: str) -> None:
    """Write one timestamped line to stderr (``<store>/worker.log`` for a spawned worker)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"{stamp} gitrag worker: {message}", file=sys.stderr, flush=True)


def _log_failure(job: Job, failed: Job) -> None:
    """Log a failed attempt: the error and whether it will be retried."""
    if failed.status == "queued":
        log(f"job {job.id} failed (attempt {failed.attempts} of at most {MAX_ATTEMPTS}), retrying: {failed.error}")
    else:
        log(f"job {job.id} FAILED after {failed.attempts} attempt(s): {failed.error}")


def _describe(exc: BaseException) -> str:
    """A short failure description for the job table (class name and message, no traceback)."""
    return f"{type(exc).__name__}: {exc}"[:500]


def run_worker(store_dir: Path | str, *, embedder: object | None = None, idle_exit: float = 30.0,
               poll: float = 0.2, max_attempts: int = MAX_ATTEMPTS, retry_delay: float = 2.0,
               max_jobs: int | None = None, lock_fd: int | None = None,
               publish: tuple[str, str | None] | None = None) -> int:
    """Process queued jobs until idle for ``idle_exit`` seconds; return the number of jobs run.

    Returns 0 at once when another worker holds the store's worker lock.  ``poll`` and
    ``retry_delay`` are seconds; ``max_jobs`` stops after that many jobs (tests).  ``lock_fd`` is
    the already locked worker-lock file handed over by :func:`artifacts.jobs.spawn_worker`.
    ``publish``: publish after each build that moves ``CURRENT`` (see :func:`process_job`).
    """
    store = Path(store_dir).resolve()
    queue = JobQueue(store)
    done = 0
    stop = False

    def on_term(signum, frame):  # type: ignore[no-untyped-def]
        nonlocal stop
        stop = True

    if hasattr(signal, "SIGTERM") and _main_thread():
        signal.signal(signal.SIGTERM, on_term)
    inherited = lock_fd
    while True:
        with worker_lock(store, inherited) as taken:
            inherited = None  # only the first round uses the handed-over lock
            if not taken:
                return done
            queue.requeue_running()
            idle_since = time.monotonic()
            while not stop and (max_jobs is None or done < max_jobs):
                job = queue.claim(os.getpid())
                if job is None:
                    if time.monotonic() - idle_since > idle_exit:
                        break
                    time.sleep(poll)
                    continue
                try:
                    process_job(job, store, queue, embedder, publish)
                except DivergedError as exc:
                    _log_failure(job, queue.fail(job.id, _describe(exc), retry=False))
                except Exception as exc:  # noqa: BLE001 - recorded in the job, the worker goes on
                    _log_failure(job, queue.fail(job.id, _describe(exc), max_attempts=max_attempts,
                                                 retry_delay=retry_delay))
                done += 1
                idle_since = time.monotonic()
        # Lock released: look once more so that a job enqueued while we were deciding to stop is
        # not stranded (its producer saw the lock held and did not spawn a worker).
        if stop or (max_jobs is not None and done >= max_jobs) or queue.pending() == 0:
            return done


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


@click.command("worker")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False), help="Bundle store directory.")
@click.option("--embedder", default=None, envvar="GITRAG_EMBEDDER", help="Embedding model (as for `gitrag build`).")
@click.option("--idle-exit", default=30.0, show_default=True, envvar="GITRAG_WORKER_IDLE_EXIT",
              help="Exit after this many idle seconds.")
@click.option("--retry-delay", default=2.0, show_default=True, help="Seconds before a retry, times the attempt.")
@click.option("--lock-fd", default=None, type=int, hidden=True,
              help="Descriptor of the worker lock, already locked by the process that started this worker.")
@click.option("--publish-to", default=None, envvar="GITRAG_PUBLISH_TO",
              help="After each build that moves CURRENT, publish the store to s3://BUCKET/PREFIX (`gitrag publish`).")
@click.option("--endpoint-url", default=None, envvar="GITRAG_S3_ENDPOINT_URL",
              help="S3-compatible server (with --publish-to).")
def worker_command(store_dir: str, embedder: str | None, idle_exit: float, retry_delay: float,
                   lock_fd: int | None, publish_to: str | None, endpoint_url: str | None) -> None:
    """Run queued build jobs of a store (one worker per store; exits when idle)."""
    click.echo(f"gitrag worker: started (pid {os.getpid()})", err=True)
    done = run_worker(store_dir, embedder=embedder, idle_exit=idle_exit, retry_delay=retry_delay, lock_fd=lock_fd,
                      publish=(publish_to, endpoint_url) if publish_to else None)
    click.echo(f"gitrag worker: {done} job(s) processed", err=True)


@click.command("jobs")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False), help="Bundle store directory.")
@click.option("--status", type=click.Choice(["queued", "running", "succeeded", "failed", "ignored"]), default=None,
              help="Only jobs with this status.")
@click.option("--limit", default=20, show_default=True, help="Number of jobs (newest first).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def jobs_command(store_dir: str, status: str | None, limit: int, as_json: bool) -> None:
    """List the build jobs of a store, newest first."""
    jobs = JobQueue(store_dir).list_jobs(limit=limit, status=status)
    if as_json:
        click.echo(json.dumps([j.public() | {"repo": j.repo} for j in jobs], indent=2))
        return
    if not jobs:
        click.echo("no jobs")
        return
    store = Store(store_dir)
    current, pinned = store.current_id(), store.is_pinned()
    width = max(len("branch"), *(len(j.branch or "-") for j in jobs))
    click.echo(f"{'id':>5} {'status':<9} {'phase':<10} {'kind':<4} {'branch':<{width}} {'commit':<12} {'tries':>5} "
               f"{'updated':<19}  note")
    for j in jobs:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(j.updated))
        notes = []
        if j.status == "succeeded" and j.bundle_id:
            notes.append("CURRENT" if j.bundle_id == current else
                         "not current (the store is pinned: `gitrag unpin`, `gitrag use`)" if pinned else "not current")
        if j.error:
            notes.append(f"{'reason' if j.status == 'ignored' else 'error'}: {j.error}")
        line = f"{j.id:>5} {j.status:<9} {j.phase:<10} {j.kind:<4} {j.branch or '-':<{width}} " \
               f"{(j.commit or '-')[:12]:<12} {j.attempts:>5} {when}  {'  '.join(notes)}"
        click.echo(line.rstrip())
    sys.stdout.flush()
