"""The checked-answer route ``POST /answer`` (JSON or SSE) and what it needs besides the bundle."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from query.answer.cache import AnswerCache
from query.answer.evidence import Generator
from query.answer.pipeline import answer, parse_answer_request
from query.config import ServerConfig
from query.errors import (
    ForbiddenError,
    QueryError,
)
from query.search.request import SearchOptions
from query.server.body import read_json, split_at, sse_event, until_done_or_gone
from query.server.holder import BundleHolder
from query.server.security import (
    CONFIG,
    check_unpublished,
    is_admin,
    may_read_unpublished,
)
from query.server.state import ANSWER_CACHE, BUNDLE_ID, GENERATORS, HOLDER, OPTIONS


@dataclass
class AnswerContext:
    """What a checked answer needs besides the bundle: generator factory, answer cache, coverage gate."""

    generators: Callable[[str | None], Generator]
    cache: AnswerCache
    coverage_threshold: float = 0.20


def prepare_answer(payload: Any, context: AnswerContext, *, admin: bool,
                   unpublished: bool = False) -> tuple[Any, str | None, Generator | None]:
    """Validate a ``POST /answer`` body: return ``(request, at, generator or None in retrieve mode)``.

    Raises :class:`InvalidRequestError` / :class:`InvalidQueryError` (bad body), ``invalid_at``
    (malformed ``at``), :class:`ForbiddenError` (``debug`` without ``admin``; ``published_only:
    false`` without ``unpublished``).
    """
    payload, at = split_at(payload)
    check_unpublished(payload, allowed=unpublished)
    parsed = parse_answer_request(payload)
    if parsed.debug and not admin:
        raise ForbiddenError("debug needs the admin key")
    generator = context.generators(parsed.generator) if parsed.mode == "answer" else None
    return parsed, at, generator


async def run_answer(holder: BundleHolder, options: SearchOptions, context: AnswerContext,
                     payload: Any) -> dict[str, Any]:
    """Answer one ``POST /answer`` body (``at`` included) without streaming; no admin debug report.

    The MCP ``answer`` tool calls this (:mod:`query.server.mcp`).  Returns the response body;
    raises :class:`QueryError` subclasses (bad body, ``debug`` requested, unknown ``at``, generator
    unavailable) for the transport to convert.
    """
    parsed, at, generator = prepare_answer(payload, context, admin=False)
    bundle_id = await asyncio.to_thread(holder.resolve, at) if at is not None else None
    lease = holder.lease(bundle_id)
    bundle = await asyncio.to_thread(lease.__enter__)
    try:
        return await answer(bundle, parsed, options, generator, cache=context.cache,
                            coverage_threshold=context.coverage_threshold)
    finally:
        lease.__exit__(None, None, None)


def answer_context(app: web.Application) -> AnswerContext:
    """The app's :class:`AnswerContext` (the same generators and cache as ``POST /answer``)."""
    return AnswerContext(app[GENERATORS], app[ANSWER_CACHE], app[CONFIG].answer.coverage_threshold)


async def handle_answer(request: web.Request) -> web.StreamResponse:
    """Checked answer (graph, text or graph+text) citing exact evidence, or an honest refusal.

    ``mode=retrieve`` returns the evidence without generating.  ``debug: true`` needs the admin key
    (403 ``forbidden`` otherwise).  Generator failures: 503 ``generator_unavailable``.
    """
    payload = await read_json(request)
    parsed, at, generator = prepare_answer(payload, answer_context(request.app), admin=is_admin(request),
                                           unpublished=may_read_unpublished(request))
    threshold = request.app[CONFIG].answer.coverage_threshold
    holder: BundleHolder = request.app[HOLDER]
    bundle_id = await asyncio.to_thread(holder.resolve, at) if at is not None else None
    lease = holder.lease(bundle_id)
    bundle = await asyncio.to_thread(lease.__enter__)
    try:
        request[BUNDLE_ID] = bundle.bundle_id  # for the access log
        if "text/event-stream" not in request.headers.get("Accept", ""):
            body = await until_done_or_gone(request, answer(
                bundle, parsed, request.app[OPTIONS], generator, cache=request.app[ANSWER_CACHE],
                include_debug=parsed.debug, coverage_threshold=threshold))
            return web.json_response(body)
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store",
                                             "X-Accel-Buffering": "no"})
        await stream.prepare(request)

        async def emit(event: str, data: dict[str, Any]) -> None:
            await stream.write(sse_event(event, data))

        try:
            body = await until_done_or_gone(request, answer(
                bundle, parsed, request.app[OPTIONS], generator, emit=emit, cache=request.app[ANSWER_CACHE],
                include_debug=parsed.debug, coverage_threshold=threshold))
            await stream.write(sse_event("answer", body))
        except QueryError as exc:
            # Headers are sent: the error travels as the answer event, in the contract's envelope.
            from query.contract import error_body

            await stream.write(sse_event("answer", {**error_body(exc.reason, exc.public_message),
                                               "http_status": exc.status}))
        await stream.write(sse_event("done", {}))
        await stream.write_eof()
        return stream
    finally:
        lease.__exit__(None, None, None)


def default_generators(config: ServerConfig) -> Callable[[str | None], Generator]:
    """Return name -> generator over :func:`query.answer.generators.make_generator` (``None``: the default)."""
    made: dict[str, Generator] = {}

    def get(name: str | None) -> Generator:
        from query.answer.generators import make_generator

        chosen = name or config.answer.generator
        if chosen not in made:
            made[chosen] = make_generator(chosen, config.answer.provider_settings())
        return made[chosen]

    return get
