"""Request bodies under the server's limits (size, arrival time, encoding, JSON) and the SSE frames."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from aiohttp import ClientConnectionResetError, web
from aiohttp.http_exceptions import ContentEncodingError
from aiohttp.web_protocol import RequestPayloadError

from query.errors import (
    ClientDisconnectedError,
    InvalidRequestError,
    MediaTypeError,
    PayloadTooLargeError,
    RequestTimeoutError,
)
from query.server.security import (
    CONFIG,
)
from query.timetravel import check_at

log = logging.getLogger("gitrag.server")


MAX_BODY_BYTES = 64 * 1024


async def read_body(request: web.Request, limit: int) -> bytes:
    """Read the body (at most ``limit`` bytes).

    Raises :class:`PayloadTooLargeError`, :class:`ClientDisconnectedError` when the client goes away
    mid-body, :class:`RequestTimeoutError` when the body has not arrived within ``body_timeout``
    seconds (the connection is then closed), and :class:`MediaTypeError` (``unsupported_content_encoding``)
    for a body aiohttp cannot decode.
    """
    if request.content_length is not None and request.content_length > limit:
        raise PayloadTooLargeError("body too large")
    try:
        async with asyncio.timeout(request.app[CONFIG].body_timeout):
            raw = await request.read()
    except TimeoutError as exc:
        log.info("closing a connection whose body did not arrive in time", extra={"event": "body_timeout"})
        raise RequestTimeoutError("body not received in time") from exc
    except (ConnectionResetError, ClientConnectionResetError) as exc:
        raise ClientDisconnectedError("client went away") from exc
    except (ContentEncodingError, RequestPayloadError) as exc:
        if isinstance(exc, ContentEncodingError) or isinstance(exc.__cause__, ContentEncodingError):
            raise MediaTypeError("undecodable body", reason="unsupported_content_encoding") from exc
        raise InvalidRequestError("malformed body") from exc  # e.g. bad chunked framing
    if len(raw) > limit:
        raise PayloadTooLargeError("body too large")
    return raw


def decode_json(raw: bytes) -> Any:
    """Decode a JSON body; raise :class:`InvalidRequestError` for bad UTF-8, bad JSON or too deep nesting."""
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidRequestError("body is not JSON") from exc


async def read_json(request: web.Request, *, allow_empty: bool = False) -> Any:
    raw = await read_body(request, request.app[CONFIG].max_body_bytes)
    if not raw.strip() and allow_empty:
        return {}
    if request.content_type != "application/json" and raw:
        # Browsers send text/plain and form posts without a CORS pre-flight: refuse them.
        raise MediaTypeError("wrong content type")
    return decode_json(raw)


def split_at(payload: Any) -> tuple[dict[str, Any], str | None]:
    """Return ``(body without at, at)`` for a retrieval request body; ``at`` is checked here.

    Raises :class:`InvalidRequestError` (not an object) and ``invalid_at`` (malformed revision).
    """
    if not isinstance(payload, dict):
        raise InvalidRequestError("body must be a JSON object")
    payload = dict(payload)
    at = payload.pop("at", None)
    if at is not None:
        check_at(at)
    return payload, at


def sse_event(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def until_done_or_gone(request: web.Request, work: Any) -> Any:
    """Await ``work`` (a coroutine); cancel it when the client disconnects first."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=0.05)
            if done:
                return task.result()
            transport = request.transport
            if transport is None or transport.is_closing():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise ConnectionResetError("client went away")
    finally:
        if not task.done():
            task.cancel()
