"""Several ``gitrag serve`` processes on one port (``gitrag serve --workers N``).

One Python process serves searches on about one core (Whoosh scoring holds the GIL), so ``--workers
N`` starts N server processes that each bind the same address with ``SO_REUSEPORT``; the Linux
kernel spreads incoming connections over them.  Each worker is a complete server: it opens the
``CURRENT`` bundle, polls ``CURRENT`` and swaps by the same rule as a single server (see
:mod:`query.server.holder`), so the zero-failed-request swap guarantee holds per process.

Without ``--workers``, ``gitrag serve`` starts :func:`default_worker_count` workers: the usable
cores, capped by the memory the machine has available for one opened bundle per worker.

The supervisor (this module, in the ``gitrag serve`` process itself) starts the workers as child
processes (``gitrag serve`` with :data:`WORKER_ENV` set), worker 0 first and the others once it
listens, and then only:

* forwards ``SIGHUP`` to every worker and ``SIGTERM``/``SIGINT`` as ``SIGTERM`` (graceful stop);
* relays a reload: a worker that answered ``POST /admin/reload`` or ``POST /admin/use`` writes
  ``H`` on its pipe, and the supervisor sends ``SIGHUP`` to the *other* workers, so all of them
  re-read ``CURRENT`` at once instead of at their next poll;
* restarts a worker that dies after it was listening (at most :data:`MAX_RESTARTS` per minute), and
  stops everything with exit status 1 when a worker dies before it was listening (bad port, bad
  config, a store that cannot be opened): that is a start-up error, not a crash to retry;
* holds the Prometheus multiprocess directory (``PROMETHEUS_MULTIPROC_DIR``, a fresh temporary
  directory, removed at exit) so that any worker answers ``/metrics`` for all of them.

Each worker reports on its pipe (an inherited file descriptor named in :data:`WORKER_ENV`): ``R``
once it listens, ``H`` to ask for a reload broadcast.  End of file means the worker is gone.
A worker whose supervisor disappears (``kill -9``) notices at its next ``CURRENT`` poll and exits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass

log = logging.getLogger("gitrag.server")

WORKER_ENV = "GITRAG_SERVE_WORKER"
"""Set by the supervisor in each worker's environment: JSON ``{"index", "count", "fd", "supervisor"}``."""
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
MAX_RESTARTS = 5
"""Workers restarted within a minute before the supervisor gives up and stops (exit status 1)."""
STOP_TIMEOUT = 30.0
"""Seconds a worker gets to finish its requests after ``SIGTERM`` before it is killed."""
WORKER_BASE_BYTES = 400 * 2**20
"""Memory counted per worker before its bundle (bytes): interpreter, aiohttp, numpy, hnswlib, the query
model (measured: docs/benchmarks.md, "Server")."""
WORKER_BUNDLE_FACTOR = 2.0
"""Memory counted per worker per byte of the served bundle's files (the opened indexes, records and caches;
measured: docs/benchmarks.md, "Server")."""


@dataclass(frozen=True)
class WorkerCount:
    """The worker count ``gitrag serve`` uses without ``--workers``, and why (:func:`default_worker_count`).

    ``cores``: usable cores (the process's CPU affinity); ``available``: the machine's available
    memory (bytes, ``MemAvailable``; ``None`` when unknown); ``per_worker``: the memory counted per
    worker (bytes).
    """

    count: int
    cores: int
    available: int | None
    per_worker: int

    def describe(self) -> str:
        """One line for the start-up message, e.g. ``2 cores, 20.1 GB available, ~0.9 GB per worker``."""
        memory = f"{self.available / 1e9:.1f} GB available" if self.available is not None else "memory unknown"
        return f"{self.cores} cores, {memory}, ~{self.per_worker / 1e9:.1f} GB per worker"


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the system has one), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def available_memory(meminfo: str = "/proc/meminfo") -> int | None:
    """The machine's available memory in bytes (Linux ``MemAvailable``), or ``None`` when unknown."""
    try:
        with open(meminfo, encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def bundle_bytes(bundle_dir: str | os.PathLike[str] | None) -> int:
    """Bytes of the files under ``bundle_dir`` (0 when it is ``None`` or unreadable)."""
    if bundle_dir is None:
        return 0
    total = 0
    stack = [os.fspath(bundle_dir)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    return total


def worker_count(cores: int, available: int | None, served_bytes: int) -> WorkerCount:
    """The worker count for ``cores`` usable cores, ``available`` bytes of memory (``None``: unknown, no
    cap) and a bundle of ``served_bytes`` bytes (see :func:`default_worker_count`)."""
    cores = max(1, cores)
    per_worker = int(WORKER_BASE_BYTES + WORKER_BUNDLE_FACTOR * max(0, served_bytes))
    count = cores if available is None else max(1, min(cores, available // per_worker))
    if not hasattr(socket, "SO_REUSEPORT") or os.uname().sysname != "Linux":
        count = 1
    return WorkerCount(count, cores, available, per_worker)


def default_worker_count(bundle_dir: str | os.PathLike[str] | None) -> WorkerCount:
    """How many worker processes ``gitrag serve`` starts without ``--workers``.

    The usable cores (:func:`usable_cores`), capped by memory: each worker opens the bundle itself,
    so each is counted at :data:`WORKER_BASE_BYTES` + :data:`WORKER_BUNDLE_FACTOR` x the bundle's
    bytes, and no more workers are started than the machine's available memory
    (:func:`available_memory`) holds.  At least 1; 1 where ``SO_REUSEPORT`` does not spread
    connections (other systems than Linux).

    :param bundle_dir: the bundle the server will serve first (the store's ``CURRENT``), or ``None``.
    """
    return worker_count(usable_cores(), available_memory(), bundle_bytes(bundle_dir))


@dataclass(frozen=True)
class WorkerSlot:
    """Who a worker process is: ``index`` in ``0 .. count-1``, its pipe ``fd`` and the supervisor's pid."""

    index: int
    count: int
    fd: int
    supervisor: int

    @classmethod
    def from_env(cls) -> WorkerSlot | None:
        """The slot named in :data:`WORKER_ENV`, or ``None`` in a process the supervisor did not start."""
        raw = os.environ.get(WORKER_ENV)
        if not raw:
            return None
        data = json.loads(raw)
        slot = cls(int(data["index"]), int(data["count"]), int(data["fd"]), int(data["supervisor"]))
        os.set_inheritable(slot.fd, False)  # not for the processes this worker starts (``gitrag worker``)
        return slot

    def tell(self, message: bytes) -> None:
        """Write ``message`` (``b"R"`` listening, ``b"H"`` reload the others) to the supervisor; best effort."""
        with contextlib.suppress(OSError):
            os.write(self.fd, message)

    def orphaned(self) -> bool:
        """True when the supervisor that started this worker is gone (the worker should then stop)."""
        return os.getppid() != self.supervisor


def check_port_free(host: str, port: int) -> None:
    """Raise :class:`OSError` when ``host:port`` cannot be bound by a socket *without* ``SO_REUSEPORT``.

    ``SO_REUSEPORT`` lets every socket of the same user that sets it share a port, so N workers
    binding it would silently share traffic with another server (say, an older ``gitrag serve
    --workers 2``) already listening there.  A plain bind fails whenever any socket holds the port.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    for family, kind, proto, _, address in {(i[0], i[1], i[2], i[3], i[4]) for i in infos}:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # tolerate TIME_WAIT, as servers do
            if family == socket.AF_INET6:
                with contextlib.suppress(OSError):
                    probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            probe.bind(address)


@dataclass
class _Worker:
    index: int
    proc: subprocess.Popen[bytes]
    pipe: int
    started: float
    ready: bool = False


class Supervisor:
    """Start ``count`` worker processes running ``argv`` and keep them running (see the module docstring).

    :param argv: the worker command line (``gitrag serve ...`` without ``--workers``).
    :param count: number of workers, at least 2.  Worker 0 starts first; the others start once it
        listens, so the server answers as soon as one process could.
    """

    def __init__(self, argv: list[str], count: int) -> None:
        self.argv = argv
        self.count = count
        self.workers: dict[int, _Worker] = {}
        self.metrics_dir = tempfile.mkdtemp(prefix="gitrag-metrics-")
        self.restarts: list[float] = []
        self.stopping = False
        self.status = 0
        self._selector = selectors.DefaultSelector()
        self._signal_r, self._signal_w = os.pipe()
        # Worker 0 starts alone and the others once it listens: started together they share the cores
        # while each imports and opens the bundle, and the first answer comes later (2 cores: 2.15 s
        # instead of 1.34 s, docs/benchmarks.md "Server").
        self._waiting = list(range(1, count))

    def _spawn(self, index: int) -> None:
        read_end, write_end = os.pipe()
        env = dict(os.environ)
        env[MULTIPROC_ENV] = self.metrics_dir
        env[WORKER_ENV] = json.dumps({"index": index, "count": self.count, "fd": write_end,
                                      "supervisor": os.getpid()})
        try:
            proc = subprocess.Popen(self.argv, env=env, pass_fds=(write_end,))  # noqa: S603 - fixed argv
        finally:
            os.close(write_end)  # the child holds its copy: end of file here means the child is gone
        os.set_blocking(read_end, False)
        self.workers[index] = _Worker(index, proc, read_end, time.monotonic())
        self._selector.register(read_end, selectors.EVENT_READ, index)

    def _signal(self, sig: int, exclude: int | None = None) -> None:
        for worker in self.workers.values():
            if worker.index != exclude and worker.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    worker.proc.send_signal(sig)

    def _stop(self, status: int) -> None:
        if not self.stopping:
            self.stopping = True
            self.status = status
            self._signal(signal.SIGTERM)

    def _reap(self, worker: _Worker) -> None:
        """The worker's pipe closed: collect it, then restart it or stop everything."""
        self._selector.unregister(worker.pipe)
        os.close(worker.pipe)
        del self.workers[worker.index]
        try:
            code = worker.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            worker.proc.kill()
            code = worker.proc.wait()
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.proc.pid, self.metrics_dir)  # type: ignore[no-untyped-call]  # its live gauges
        if self.stopping:
            return
        if not worker.ready:
            log.error("worker %d exited with status %s before it was listening; stopping", worker.index, code,
                      extra={"event": "worker_failed", "worker": worker.index, "exit_status": code})
            self._stop(1)
            return
        now = time.monotonic()
        self.restarts = [t for t in self.restarts if now - t < 60.0] + [now]
        if len(self.restarts) > MAX_RESTARTS:
            log.error("workers died %d times within a minute; stopping", len(self.restarts),
                      extra={"event": "worker_failed", "worker": worker.index, "exit_status": code})
            self._stop(1)
            return
        log.warning("worker %d exited with status %s; starting it again", worker.index, code,
                    extra={"event": "worker_restart", "worker": worker.index, "exit_status": code})
        self._spawn(worker.index)

    def _on_message(self, worker: _Worker) -> None:
        try:
            data = os.read(worker.pipe, 512)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._reap(worker)
            return
        if b"R" in data and not worker.ready:
            worker.ready = True
            log.info("worker %d listening (pid %d)", worker.index, worker.proc.pid,
                     extra={"event": "worker_ready", "worker": worker.index})
            if self._waiting and not self.stopping:
                for index in self._waiting:
                    self._spawn(index)
                self._waiting = []
        if b"H" in data and not self.stopping:
            self._signal(signal.SIGHUP, exclude=worker.index)

    def _on_signal(self) -> None:
        with contextlib.suppress(BlockingIOError):
            for number in os.read(self._signal_r, 64):
                if number == signal.SIGHUP and not self.stopping:
                    self._signal(signal.SIGHUP)
                elif number in (signal.SIGTERM, signal.SIGINT):
                    self._stop(self.status)

    def run(self) -> int:
        """Run until every worker has stopped; return the exit status (0, or 1 after a start-up failure)."""
        os.set_blocking(self._signal_r, False)
        os.set_blocking(self._signal_w, False)
        previous_fd = signal.set_wakeup_fd(self._signal_w, warn_on_full_buffer=False)
        handlers = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)}
        self._selector.register(self._signal_r, selectors.EVENT_READ, None)
        try:
            self._spawn(0)  # the others when it listens (_on_message)
            stop_deadline: float | None = None
            while self.workers:
                if self.stopping and stop_deadline is None:
                    stop_deadline = time.monotonic() + STOP_TIMEOUT
                if stop_deadline is not None and time.monotonic() > stop_deadline:
                    self._signal(signal.SIGKILL)
                for key, _ in self._selector.select(timeout=1.0):
                    if key.data is None:
                        self._on_signal()
                    elif key.data in self.workers and self.workers[key.data].pipe == key.fd:
                        self._on_message(self.workers[key.data])
            return self.status
        finally:
            self._stop(self.status)
            for worker in list(self.workers.values()):
                with contextlib.suppress(subprocess.TimeoutExpired):
                    worker.proc.wait(timeout=STOP_TIMEOUT)
                if worker.proc.poll() is None:
                    worker.proc.kill()
            signal.set_wakeup_fd(previous_fd)
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
            self._selector.close()
            for fd in (self._signal_r, self._signal_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            shutil.rmtree(self.metrics_dir, ignore_errors=True)


def run_workers(argv: list[str], count: int, host: str, port: int) -> int:
    """Serve with ``count`` worker processes running ``argv`` on ``host:port``; return the exit status.

    Raises :class:`OSError` (``EADDRINUSE``...) when the port is taken, before any worker starts,
    and :class:`ValueError` on a system without ``SO_REUSEPORT`` load balancing (it is Linux's).
    """
    if not hasattr(socket, "SO_REUSEPORT") or os.uname().sysname != "Linux":
        raise ValueError("--workers above 1 needs Linux (SO_REUSEPORT spreads connections only there)")
    check_port_free(host, port)
    return Supervisor(argv, count).run()


__all__ = ["MULTIPROC_ENV", "Supervisor", "WORKER_ENV", "WorkerCount", "WorkerSlot", "available_memory", "bundle_bytes",
           "check_port_free", "default_worker_count", "run_workers", "usable_cores", "worker_count"]
