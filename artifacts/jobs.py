"""The durable build-job queue of a store: ``<store>/jobs.sqlite``, plus the worker lock.

Producers are the ``post-receive`` hook (``hooks/``), the server's webhooks and ``POST /sync``
(``query/``); the consumer is ``gitrag worker`` (``indexer/worker.py``).  The queue lives here,
in ``artifacts/``, because all of them may import it and it imports nothing of theirs.

Job life cycle::

    queued --claim--> running --finish--> succeeded
       ^                 |
       +--fail (retry)---+--fail (attempts exhausted)--> failed

A push the hook does not index (another branch, a tag, a deletion) is recorded as a job with
status and phase ``ignored`` and the reason in ``error``, so ``gitrag jobs`` shows why a push did
nothing; such a row is never claimed.

``phase`` says where a job is (``queued``, ``fetch``, ``resolve``, ``build``, ``embed`` (its
BM25-and-graph bundle is published, the vectors are being computed), ``done``, ``built_not_current``,
``superseded`` (a newer job took over the rest of the embedding)); ``error`` holds a short, path-free
description of the last failure.

Invariants and concurrency:

* SQLite in WAL mode with a busy timeout; every state change is one ``BEGIN IMMEDIATE``
  transaction, so the hook, the server and the worker may use the queue at the same time.
* Coalescing: enqueuing for a ``(kind, repo, branch)`` that already has a *queued* job updates
  that job to the newer commit instead of adding one; a running job is never changed.
* At most one worker per store: it holds ``fcntl.flock`` on ``<store>/worker.lock`` for its whole
  life.  So a job found ``running`` by a worker that has just taken the lock belongs to a dead
  worker and is re-queued (restart survival).
* Spawning protocol (no lost wake-up, one worker): a producer commits the job *then* tries to take
  the worker lock itself; if it gets it, it starts ``gitrag worker --lock-fd N`` with that locked
  file as descriptor N, so the lock passes to the child without ever being free (the child holds
  the same open file description; the producer closes its copy).  While a worker is starting,
  another producer therefore finds the lock held and starts none (30 concurrent calls used to
  start 16 workers).  A worker that goes idle releases the lock *then* looks at the queue once
  more.  Whichever happens second sees the other's effect.
* Webhook delivery ids are remembered in ``deliveries`` so a redelivery maps to the same job.
  The delivery id is not signed, so a replay is also recognised by ``replay_key`` (the signed
  payload's branch and pushed commit): it maps to its job as long as that job is the newest of its
  branch and has not failed; after a newer push the same payload queues again (it may be a
  force-push back to that commit), which at worst rebuilds the branch tip once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

JOBS_DB = "jobs.sqlite"
WORKER_LOCK = "worker.lock"
WORKER_LOG = "worker.log"
WORKER_METRICS = "worker.prom"
STATUSES = ("queued", "running", "succeeded", "failed", "ignored")
MAX_ATTEMPTS = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    repo TEXT NOT NULL,
    remote TEXT,
    branch TEXT NOT NULL,
    old_commit TEXT,
    commit_sha TEXT,
    status TEXT NOT NULL,
    phase TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    bundle_id TEXT,
    not_before REAL NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    worker_pid INTEGER
);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status, not_before, id);
CREATE TABLE IF NOT EXISTS deliveries (
    delivery_id TEXT PRIMARY KEY,
    job_id INTEGER NOT NULL,
    received REAL NOT NULL
);
"""


@dataclass(frozen=True)
class Job:
    """One build job.

    ``kind``: ``push`` (build ``commit`` of the local repository ``repo``) or ``sync`` (first
    fetch ``branch`` of ``remote`` into the mirror ``repo``, fast-forward only, then build its tip).
    Times are seconds since the Unix epoch.
    """

    id: int
    kind: str
    repo: str
    remote: str | None
    branch: str
    old_commit: str | None
    commit: str | None
    status: str
    phase: str
    attempts: int
    error: str | None
    bundle_id: str | None
    not_before: float
    created: float
    updated: float
    worker_pid: int | None

    def public(self) -> dict[str, Any]:
        """Return the job as a JSON-able dict without local paths or URLs (safe for HTTP)."""
        data = asdict(self)
        for private in ("repo", "remote", "worker_pid", "not_before"):
            data.pop(private)
        return data


@dataclass(frozen=True)
class Enqueued:
    """Result of :meth:`JobQueue.enqueue`: the job, and whether it was merged or a redelivery."""

    job: Job
    coalesced: bool = False
    duplicate: bool = False


def _ensure_wal(db: sqlite3.Connection, *, patience: float = 30.0) -> None:
    """Put the database in WAL mode (persistent in the file), tolerating concurrent first connections.

    Switching the journal mode needs an exclusive lock and SQLite does not call its busy handler for
    it, so 30 requests opening a new queue at once made some fail with ``database is locked``. The
    mode is read first (a no-op once the file is in WAL mode) and the switch is retried for up to
    ``patience`` seconds.

    Raises:
        sqlite3.OperationalError: the switch still failed after ``patience`` seconds.
    """
    deadline = time.monotonic() + patience
    delay = 0.005
    while True:
        try:
            if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                return
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = getattr(exc, "sqlite_errorcode", sqlite3.SQLITE_BUSY) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
            if not busy or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


class JobQueue:
    """The SQLite job queue of a store directory (created on first use)."""

    def __init__(self, store_root: Path | str) -> None:
        self.root = Path(store_root)
        self.path = self.root / JOBS_DB
        self.root.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.executescript(_SCHEMA)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            db.row_factory = sqlite3.Row
            _ensure_wal(db)
            db.execute("PRAGMA synchronous=NORMAL")
            yield db
        finally:
            db.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    # -- producers ---------------------------------------------------------------------------

    def enqueue(self, *, kind: str, repo: str, branch: str, commit: str | None = None,
                old_commit: str | None = None, remote: str | None = None,
                delivery_id: str | None = None, replay_key: str | None = None) -> Enqueued:
        """Queue a build, coalescing with a queued job of the same ``(kind, repo, branch)``.

        ``delivery_id`` (webhooks) makes the call idempotent: a second call with the same id
        returns the first job with ``duplicate=True`` and changes nothing.  ``replay_key`` (the
        signed content, e.g. ``push:<repo>:<branch>:<after sha>``) does the same while its job is
        the newest of ``(kind, repo, branch)`` and has not failed (see the module docstring).
        """
        if kind not in ("push", "sync"):
            raise ValueError("kind must be 'push' or 'sync'")
        now = time.time()
        with self._transaction() as db:
            if delivery_id is not None:
                row = db.execute("SELECT job_id FROM deliveries WHERE delivery_id = ?", (delivery_id,)).fetchone()
                if row is not None:
                    return Enqueued(self._get(db, row["job_id"]), duplicate=True)  # type: ignore[arg-type]
            if replay_key is not None:
                row = db.execute("SELECT job_id FROM deliveries WHERE delivery_id = ?", (replay_key,)).fetchone()
                newest = db.execute("SELECT MAX(id) FROM jobs WHERE kind = ? AND repo = ? AND branch = ?",
                                    (kind, repo, branch)).fetchone()[0]
                replayed = self._get(db, row["job_id"]) if row is not None else None
                if replayed is not None and replayed.id == newest and replayed.status != "failed":
                    if delivery_id is not None:
                        db.execute("INSERT INTO deliveries (delivery_id, job_id, received) VALUES (?, ?, ?)",
                                   (delivery_id, replayed.id, now))
                    return Enqueued(replayed, duplicate=True)
            row = db.execute(
                "SELECT id FROM jobs WHERE status = 'queued' AND kind = ? AND repo = ? AND branch = ? "
                "ORDER BY id DESC LIMIT 1", (kind, repo, branch)).fetchone()
            coalesced = row is not None
            if coalesced:
                job_id = row["id"]
                db.execute("UPDATE jobs SET commit_sha = COALESCE(?, commit_sha), remote = COALESCE(?, remote), "
                           "updated = ? WHERE id = ?", (commit, remote, now, job_id))
            else:
                cursor = db.execute(
                    "INSERT INTO jobs (kind, repo, remote, branch, old_commit, commit_sha, status, phase, "
                    "created, updated) VALUES (?, ?, ?, ?, ?, ?, 'queued', 'queued', ?, ?)",
                    (kind, repo, remote, branch, old_commit, commit, now, now))
                job_id = cursor.lastrowid
            if delivery_id is not None:
                db.execute("INSERT INTO deliveries (delivery_id, job_id, received) VALUES (?, ?, ?)",
                           (delivery_id, job_id, now))
            if replay_key is not None:
                db.execute("INSERT OR REPLACE INTO deliveries (delivery_id, job_id, received) VALUES (?, ?, ?)",
                           (replay_key, job_id, now))
            job = self._get(db, job_id)
        assert job is not None
        return Enqueued(job, coalesced=coalesced)

    def record_ignored(self, *, repo: str, ref: str, commit: str | None, reason: str) -> Job:
        """Record a push that is not indexed (status ``ignored``, ``reason`` in ``error``); return it.

        ``ref`` is the full ref name pushed (``refs/heads/feature``); it is stored as the job's
        branch with ``refs/heads/`` removed.
        """
        now = time.time()
        branch = ref.removeprefix("refs/heads/")
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO jobs (kind, repo, branch, commit_sha, status, phase, error, created, updated) "
                "VALUES ('push', ?, ?, ?, 'ignored', 'ignored', ?, ?, ?)",
                (repo, branch, commit, reason[:500], now, now))
            job = self._get(db, cursor.lastrowid)  # type: ignore[arg-type]
        assert job is not None
        return job

    # -- the worker --------------------------------------------------------------------------

    def claim(self, worker_pid: int | None = None) -> Job | None:
        """Mark the oldest runnable queued job ``running`` and return it, or ``None``."""
        now = time.time()
        with self._transaction() as db:
            row = db.execute("SELECT id FROM jobs WHERE status = 'queued' AND not_before <= ? ORDER BY id LIMIT 1",
                             (now,)).fetchone()
            if row is None:
                return None
            db.execute("UPDATE jobs SET status = 'running', phase = 'started', attempts = attempts + 1, "
                       "worker_pid = ?, updated = ? WHERE id = ?", (worker_pid or os.getpid(), now, row["id"]))
            return self._get(db, row["id"])

    def set_phase(self, job_id: int, phase: str, commit: str | None = None) -> None:
        """Record the phase of a running job (and the commit once it is known)."""
        with self._transaction() as db:
            db.execute("UPDATE jobs SET phase = ?, commit_sha = COALESCE(?, commit_sha), updated = ? WHERE id = ?",
                       (phase, commit, time.time(), job_id))

    def finish(self, job_id: int, *, bundle_id: str | None = None, phase: str = "done") -> None:
        """Mark a job ``succeeded``."""
        with self._transaction() as db:
            db.execute("UPDATE jobs SET status = 'succeeded', phase = ?, bundle_id = ?, error = NULL, updated = ? "
                       "WHERE id = ?", (phase, bundle_id, time.time(), job_id))

    def fail(self, job_id: int, error: str, *, retry: bool = True, max_attempts: int = MAX_ATTEMPTS,
             retry_delay: float = 2.0) -> Job:
        """Record a failure: re-queue after ``retry_delay * attempts`` seconds, or mark ``failed``.

        A job is attempted at most ``max_attempts`` times; ``retry=False`` fails it at once
        (errors that a retry cannot fix, such as a diverged history).
        """
        now = time.time()
        with self._transaction() as db:
            job = self._get(db, job_id)
            assert job is not None
            if retry and job.attempts < max_attempts:
                db.execute("UPDATE jobs SET status = 'queued', phase = 'retry_wait', error = ?, not_before = ?, "
                           "updated = ? WHERE id = ?", (error[:500], now + retry_delay * job.attempts, now, job_id))
            else:
                db.execute("UPDATE jobs SET status = 'failed', error = ?, updated = ? WHERE id = ?",
                           (error[:500], now, job_id))
            result = self._get(db, job_id)
        assert result is not None
        return result

    def requeue_running(self) -> int:
        """Re-queue jobs left ``running`` by a dead worker; call only while holding the worker lock."""
        with self._transaction() as db:
            cursor = db.execute("UPDATE jobs SET status = 'queued', phase = 'requeued', updated = ? "
                                "WHERE status = 'running'", (time.time(),))
            return cursor.rowcount

    # -- readers -----------------------------------------------------------------------------

    def get(self, job_id: int) -> Job | None:
        """Return one job, or ``None``."""
        with self._connect() as db:
            return self._get(db, job_id)

    def list_jobs(self, limit: int = 50, status: str | None = None) -> list[Job]:
        """Return the newest ``limit`` jobs, optionally only those with ``status``."""
        with self._connect() as db:
            if status:
                rows = db.execute("SELECT * FROM jobs WHERE status = ? ORDER BY id DESC LIMIT ?", (status, limit))
            else:
                rows = db.execute("SELECT * FROM jobs ORDER BY id DESC LIMIT ?", (limit,))
            return [_job(r) for r in rows.fetchall()]

    def pending(self) -> int:
        """Number of jobs queued (including those waiting for a retry)."""
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM jobs WHERE status = 'queued'").fetchone()[0])

    def newer_queued(self, job_id: int) -> int:
        """Number of jobs queued after job ``job_id`` (a running job's embedding yields to them)."""
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM jobs WHERE status = 'queued' AND id > ?",
                                  (job_id,)).fetchone()[0])

    def counts(self) -> dict[str, int]:
        """Number of jobs per status (every one of :data:`STATUSES`, zero included)."""
        with self._connect() as db:
            rows = db.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status").fetchall()
        return dict.fromkeys(STATUSES, 0) | {status: int(n) for status, n in rows}

    @staticmethod
    def _get(db: sqlite3.Connection, job_id: int) -> Job | None:
        row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return _job(row) if row is not None else None


def _job(row: sqlite3.Row) -> Job:
    data = dict(row)
    data["commit"] = data.pop("commit_sha")
    return Job(**data)


def jobs_queued_since(store_root: Path | str, since: float) -> int:
    """Number of jobs of the store queued, or claimed by a worker, at or after ``since`` (Unix time).

    Reads ``jobs.sqlite`` only when it exists (a store without hooks has none and gets none):
    ``gitrag build`` asks it between embedding batches, so a push during a long embedding
    supersedes the rest of it.  A claimed (``running``) job counts: its worker claims it at once
    and then waits for the writer lock that the embedding build holds.  0 when the queue cannot
    be read.
    """
    path = Path(store_root) / JOBS_DB
    if not path.is_file():
        return 0
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
        try:
            row = db.execute("SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running') AND updated >= ?",
                             (since,)).fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return 0
    return int(row[0])


# -- the worker lock and spawning -------------------------------------------------------------


@contextlib.contextmanager
def worker_lock(store_root: Path | str, inherited_fd: int | None = None) -> Iterator[bool]:
    """Try to take the store's worker lock without waiting; yield whether it was taken.

    The lock is held until the ``with`` block ends (closing the file releases the flock).
    ``inherited_fd`` is the descriptor of the lock file a producer locked and passed to this
    worker (``spawn_worker``); locking it again is a no-op for the same open file description.
    """
    root = Path(store_root)
    root.mkdir(parents=True, exist_ok=True)
    if inherited_fd is not None:
        handle = os.fdopen(inherited_fd, "a+")
    else:
        handle = open(root / WORKER_LOCK, "a+")  # noqa: SIM115 - closed in finally
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            taken = True
        except BlockingIOError:
            taken = False
        yield taken
    finally:
        handle.close()


def worker_running(store_root: Path | str) -> bool:
    """True when a ``gitrag worker`` holds the store's worker lock."""
    with worker_lock(store_root) as taken:
        return not taken


def write_worker_metrics(store_root: Path | str, *, stage_seconds: dict[str, float], total_seconds: float,
                         outcome: str) -> None:
    """Write the worker's last build as Prometheus text to ``<store>/worker.prom`` (atomically).

    ``stage_seconds``: seconds per build stage (empty when the bundle already existed);
    ``total_seconds``: the whole job; ``outcome``: the job's phase at the end (``done``,
    ``built_not_current``).  The query server re-exposes the file on ``/metrics``; a
    node_exporter textfile collector can read it too.  The worker is short-lived, so it keeps no
    counters of its own: job outcomes come from the queue (:meth:`JobQueue.counts`).
    """
    from prometheus_client import CollectorRegistry, Gauge, write_to_textfile

    registry = CollectorRegistry()
    stages = Gauge("gitrag_worker_build_stage_seconds", "Seconds per stage of the worker's last build",
                   ["stage"], registry=registry)
    for stage, seconds in sorted(stage_seconds.items()):
        stages.labels(stage).set(seconds)
    Gauge("gitrag_worker_last_job_seconds", "Seconds of the worker's last successful job (fetch + build)",
          registry=registry).set(total_seconds)
    finished = Gauge("gitrag_worker_last_job_finished", "Unix time the worker's last successful job ended, by "
                     "outcome", ["outcome"], registry=registry)
    finished.labels(outcome).set_to_current_time()
    write_to_textfile(str(Path(store_root) / WORKER_METRICS), registry)


def gitrag_command() -> list[str]:
    """Return the argv prefix that runs the ``gitrag`` command of this interpreter's environment."""
    script = Path(sys.executable).with_name("gitrag")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from artifacts.cli import main; main()"]


def spawn_worker(store_root: Path | str, extra_args: list[str] | None = None,
                 env: dict[str, str] | None = None) -> bool:
    """Start a detached ``gitrag worker --store ROOT`` unless a worker holds (or is taking) the lock.

    Returns True if a worker was started.  The caller takes the worker lock and hands the locked
    file to the child as ``--lock-fd`` (see the module docstring), so concurrent callers start one
    worker between them.  The child gets its own session and ``/dev/null`` for stdin, and appends
    its output to ``<store>/worker.log``, so it holds none of the caller's pipes (a ``git push``
    whose hook spawned it returns at once) and survives the caller.  Raises :class:`OSError` when
    the process cannot be started (the lock is then released).
    """
    root = Path(store_root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / WORKER_LOCK, "a+") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a worker runs, or another producer is starting one
        fd = lock.fileno()
        with open(root / WORKER_LOG, "ab") as log, open(os.devnull, "rb") as devnull:
            subprocess.Popen(  # noqa: S603 - fixed argv, no shell
                [*gitrag_command(), "worker", "--store", str(root), "--lock-fd", str(fd), *(extra_args or [])],
                stdin=devnull, stdout=log, stderr=log, close_fds=True, pass_fds=(fd,), start_new_session=True,
                env=env if env is not None else os.environ.copy(), cwd=str(root),
            )
    # Closing our descriptor leaves the flock with the child's copy of the open file description.
    return True
