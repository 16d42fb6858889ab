"""Connections: aiohttp's per-connection handler answering parser errors with the envelope, and
:class:`ConnectionLimits` (per address and in total, header deadline) under :class:`EnvelopeRunner`."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import ContentEncodingError
from aiohttp.web_protocol import RequestHandler

from query.contract import error_body
from query.server.security import (
    SECURITY_HEADERS,
    error_response,
)

log = logging.getLogger("gitrag.server")


class EnvelopeRequestHandler(RequestHandler):
    """aiohttp's per-connection handler, answering errors of its HTTP parser with the contract's envelope.

    aiohttp turns a request it cannot parse (an undecodable ``Content-Encoding``, a bad request
    line, oversized headers) into a plain-text response with the exception text, before any
    middleware runs; here it becomes the envelope with the security headers, and no traceback is
    logged for a client's mistake.
    """

    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if request.writer.output_size > 0:  # a response is under way: aiohttp closes the connection
            return super().handle_error(request, status, exc, message)
        if status >= 500:
            self.log_exception("Error handling request", exc_info=exc)
            reason = "internal_error"
        else:
            self.logger.info("bad HTTP request (%s, status %d)", type(exc).__name__, status)
            if isinstance(exc, ContentEncodingError):
                reason, status = "unsupported_content_encoding", 415
            else:
                reason = "payload_too_large" if status == 413 else "invalid_request"
        response = error_response(reason, status)
        response.headers.update(SECURITY_HEADERS)
        response.force_close()
        return response

    def headers_arrived(self) -> None:
        """The first request's headers are in (called by :func:`log_middleware`): nothing to do here, as
        a connection without :class:`ConnectionLimits` has no header deadline."""


LINGERING_SECONDS = 2.0
"""Seconds aiohttp goes on reading (and dropping) the rest of a body the server refused or gave up on,
before it closes the connection (aiohttp's default is 10)."""


class ConnectionLimits:
    """Open connections counted per client address and in total, shared by one server's connections.

    ``admit`` says whether one more connection from ``address`` is allowed (``max_total`` in all,
    ``max_per_address`` per address unless ``exempt(address)``, e.g. a trusted proxy) and counts it;
    ``release`` forgets it.  Used on the event loop only.
    """

    def __init__(self, max_total: int, max_per_address: int, exempt: Callable[[str], bool] = lambda a: False,
                 header_timeout: float = 30.0) -> None:
        self.max_total, self.max_per_address, self.exempt = max_total, max_per_address, exempt
        self.header_timeout = header_timeout
        self.total = 0
        self.per_address: dict[str, int] = {}
        self.refused = 0
        self.timed_out = 0

    def admit(self, address: str) -> bool:
        if self.total >= self.max_total or (
                self.per_address.get(address, 0) >= self.max_per_address and not self.exempt(address)):
            self.refused += 1
            return False
        self.total += 1
        self.per_address[address] = self.per_address.get(address, 0) + 1
        return True

    def release(self, address: str) -> None:
        self.total -= 1
        left = self.per_address.get(address, 1) - 1
        if left > 0:
            self.per_address[address] = left
        else:
            self.per_address.pop(address, None)


_REFUSED = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Retry-After: 1\r\nContent-Length: %d\r\n\r\n%s")


class _LimitedRequestHandler(EnvelopeRequestHandler):
    """A connection under :class:`ConnectionLimits`: refused (503, closed) over a cap, closed when its
    first request's headers have not arrived within ``header_timeout`` seconds."""

    def __init__(self, manager: web.Server, limits: ConnectionLimits, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self.limits = limits
        self.address: str | None = None
        self.header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        if not self.limits.admit(address):
            body = json.dumps(error_body("too_many_connections")).encode()
            transport.write(_REFUSED % (len(body), body))  # type: ignore[attr-defined]
            transport.close()
            return
        self.address = address
        self.header_timer = asyncio.get_running_loop().call_later(self.limits.header_timeout, self._header_timeout,
                                                                   transport)
        super().connection_made(transport)

    def headers_arrived(self) -> None:
        """The first request's headers are in (called by :func:`log_middleware`): the header deadline is off."""
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _header_timeout(self, transport: asyncio.BaseTransport) -> None:
        self.header_timer = None
        self.limits.timed_out += 1
        log.info("closing a connection that sent no complete request in time", extra={"event": "header_timeout"})
        transport.close()

    def connection_lost(self, exc: BaseException | None) -> None:
        if self.address is None:
            return  # refused in connection_made: aiohttp never saw it
        self.headers_arrived()
        self.limits.release(self.address)
        self.address = None
        super().connection_lost(exc)


class _EnvelopeServer(web.Server):
    limits: ConnectionLimits | None = None

    def __call__(self) -> RequestHandler:
        if self.limits is not None:
            return _LimitedRequestHandler(self, self.limits, loop=self._loop, **self._kwargs)
        return EnvelopeRequestHandler(self, loop=self._loop, **self._kwargs)


class EnvelopeRunner(web.AppRunner):
    """An :class:`aiohttp.web.AppRunner` whose connections answer parser errors with the envelope and,
    given ``limits``, obey :class:`ConnectionLimits`.

    Uses aiohttp internals (``_make_server``, ``Server._loop`` / ``_kwargs``): the dependency is pinned
    to the tested minor release (pyproject.toml) and ``tests/query/test_server_hardening27.py`` fails
    on another one.
    """

    def __init__(self, app: web.Application, *, limits: ConnectionLimits | None = None, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.limits = limits

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _EnvelopeServer  # same state, one overridden factory method
        server.limits = self.limits  # type: ignore[attr-defined]
        return server
