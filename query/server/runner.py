"""Starting the server: :func:`start_server` (tests, workers) and :func:`run_server` (``gitrag serve``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from query.config import ConfigError, ServerConfig, is_loopback
from query.search.request import SearchOptions
from query.server.app import create_app
from query.server.connections import LINGERING_SECONDS, ConnectionLimits, EnvelopeRunner
from query.server.security import (
    CONFIG,
    in_networks,
)
from query.server.state import CONNECTION_LIMITS
from query.server.workers import WorkerSlot

log = logging.getLogger("gitrag.server")


async def start_server(app: web.Application, host: str = "127.0.0.1", port: int = 0,
                       handle_signals: bool = False, reuse_port: bool = False) -> tuple[EnvelopeRunner, int]:
    """Start ``app`` on ``host:port`` (0 = any free port); return the runner and the bound port.

    ``reuse_port``: bind with ``SO_REUSEPORT`` (the workers of ``--workers N`` share the port).
    Call ``await runner.cleanup()`` to stop.  aiohttp's own access log is off: :func:`log_middleware`
    writes one structured line per request instead.
    """
    config = app[CONFIG]
    networks = config.proxy_networks()
    limits = ConnectionLimits(config.max_connections, config.max_connections_per_address,
                              exempt=lambda address: in_networks(address, networks),
                              header_timeout=config.header_timeout)
    app[CONNECTION_LIMITS] = limits
    runner = EnvelopeRunner(app, access_log=None, handle_signals=handle_signals, limits=limits,
                            keepalive_timeout=config.keepalive_timeout, lingering_time=LINGERING_SECONDS)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_port=reuse_port or None)
    await site.start()
    bound = runner.addresses[0][1] if runner.addresses else port
    return runner, int(bound)


def run_server(store_dir: Path | str, host: str = "127.0.0.1", port: int = 8080,
               options: SearchOptions | None = None, config: ServerConfig | None = None,
               poll_interval: float | None = None, worker: WorkerSlot | None = None, replica: Any = None) -> None:
    """Serve until interrupted (SIGINT/SIGTERM).  Without API keys only loopback hosts are allowed.

    ``worker``: run as one worker of ``gitrag serve --workers N`` (:mod:`query.server.workers`): bind with
    ``SO_REUSEPORT``, tell the supervisor once listening, log the worker index on every line.

    Raises :class:`~query.config.ConfigError` (a :class:`ValueError`) for a non-loopback ``host``
    without keys, or for short or repeated keys, and :class:`OSError` when the port cannot be bound.
    """
    config = config or ServerConfig()
    config.check(host)
    if not config.keys_configured and not is_loopback(host):
        raise ConfigError("without API keys gitrag serves only on a loopback address")
    started = time.monotonic()
    if worker is not None:
        _log_worker_index(worker.index)
    app = create_app(store_dir, options=options, config=config, poll_interval=poll_interval, worker=worker,
                     replica=replica)
    log.debug("app built in %.3f s", time.monotonic() - started)

    async def serve() -> None:
        runner, bound = await start_server(app, host, port, handle_signals=True, reuse_port=worker is not None)
        log.info("listening on %s:%d", host, bound, extra={"event": "listening", "host": host, "port": bound})
        if worker is not None:
            worker.tell(b"R")
        try:
            await asyncio.Event().wait()
        finally:
            stopping = time.monotonic()
            log.info("stopping: finishing requests in flight", extra={"event": "stopping"})
            await runner.cleanup()
            log.info("stopped in %.2f s", time.monotonic() - stopping,
                     extra={"event": "stopped", "seconds": round(time.monotonic() - stopping, 3)})

    with contextlib.suppress(KeyboardInterrupt, web.GracefulExit):
        asyncio.run(serve())


class _WorkerField(logging.Filter):
    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def filter(self, record: logging.LogRecord) -> bool:
        record.worker = self.index
        return True


def _log_worker_index(index: int) -> None:
    """Add ``"worker": index`` to every log line of this process (the JSON lines of all workers share stderr)."""
    for handler in logging.getLogger("gitrag").handlers:
        handler.addFilter(_WorkerField(index))
