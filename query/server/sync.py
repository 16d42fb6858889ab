"""``POST /sync``, ``GET /sync/jobs/{id}`` and the GitHub / Gitea push webhooks (HMAC)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from aiohttp import web

from artifacts.jobs import JobQueue, spawn_worker
from query.config import ServerConfig
from query.errors import (
    InvalidRequestError,
    PlainNotFoundError,
    ServiceNotConfiguredError,
    UnauthorizedError,
)
from query.server.body import decode_json, read_body
from query.server.security import (
    CONFIG,
)
from query.server.state import STORE_ROOT

log = logging.getLogger("gitrag.server")


ZERO = "0" * 40


def _mirror(app: web.Application) -> str:
    config: ServerConfig = app[CONFIG]
    return str(Path(config.webhook.mirror).resolve() if config.webhook.mirror else app[STORE_ROOT] / "mirror.git")


def _enqueue_sync(app: web.Application, commit: str | None, delivery_id: str | None,
                  replay_key: str | None = None) -> dict[str, Any]:
    config: ServerConfig = app[CONFIG]
    queue = JobQueue(app[STORE_ROOT])
    queued = queue.enqueue(kind="sync", repo=_mirror(app), remote=config.webhook.remote,
                           branch=config.webhook.branch, commit=commit, delivery_id=delivery_id,
                           replay_key=replay_key)
    if config.spawn_worker:
        try:
            spawn_worker(app[STORE_ROOT])
        except OSError:
            log.exception("could not start a worker")
    return {"status": "accepted", "job_id": queued.job.id, "status_url": f"/sync/jobs/{queued.job.id}",
            "coalesced": queued.coalesced, "duplicate": queued.duplicate}


async def handle_sync(request: web.Request) -> web.Response:
    config: ServerConfig = request.app[CONFIG]
    await read_body(request, config.max_body_bytes)
    if not config.webhook.remote:
        raise ServiceNotConfiguredError("sync off", reason="sync_unavailable")
    body = await asyncio.to_thread(_enqueue_sync, request.app, None, None)
    return web.json_response(body, status=202)


async def handle_job(request: web.Request) -> web.Response:
    raw = request.match_info["job_id"]
    # Job ids are SQLite integers (< 2**63); a longer number names no job (and int() of thousands of
    # digits is refused by Python itself).
    if len(raw) > 19 or int(raw) >= 2**63:
        raise PlainNotFoundError("no job", reason="job_not_found")
    job = await asyncio.to_thread(JobQueue(request.app[STORE_ROOT]).get, int(raw))
    if job is None:
        raise PlainNotFoundError("no job", reason="job_not_found")
    data = job.public()
    # A job's error may name local paths: expose only its class name.
    data["error"] = data["error"].split(":", 1)[0] if data["error"] else None
    return web.json_response({"status": "ok", "job": data})


_SIGNATURE_HEADERS = {"github": ("X-Hub-Signature-256",), "gitea": ("X-Gitea-Signature", "X-Hub-Signature-256")}
_EVENT_HEADERS = {"github": "X-GitHub-Event", "gitea": "X-Gitea-Event"}
_DELIVERY_HEADERS = {"github": "X-GitHub-Delivery", "gitea": "X-Gitea-Delivery"}


def verify_signature(secret: str, raw: bytes, header: str | None) -> bool:
    """Check ``header`` (``sha256=<hex>`` or ``<hex>``) against HMAC-SHA256 of ``raw`` in constant time."""
    if not header:
        return False
    given = header.strip()
    if given.startswith("sha256="):
        given = given[len("sha256="):]
    expected = hmac.new(secret.encode("utf-8"), raw, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), given.lower().encode("ascii", errors="replace"))


def webhook_handler(provider: str) -> Callable[[web.Request], Any]:
    async def handler(request: web.Request) -> web.Response:
        config: ServerConfig = request.app[CONFIG]
        hook = config.webhook
        if not (hook.secret and hook.repository and hook.remote):
            raise ServiceNotConfiguredError("webhooks off", reason="webhook_unavailable")
        raw = await read_body(request, hook.max_body_bytes)
        header = next((request.headers[h] for h in _SIGNATURE_HEADERS[provider] if h in request.headers), None)
        if not verify_signature(hook.secret, raw, header):
            raise UnauthorizedError("bad signature", reason="invalid_signature")
        event = request.headers.get(_EVENT_HEADERS[provider]) or request.headers.get("X-GitHub-Event")
        if event != "push":
            return web.json_response({"status": "ok", "accepted": False, "ignored": "event"})
        payload = decode_json(raw)
        if not isinstance(payload, dict):
            raise InvalidRequestError("body must be a JSON object")
        found = payload.get("repository")
        repository = cast(dict[str, Any], found if isinstance(found, dict) else {})
        if repository.get("full_name") != hook.repository:
            return web.json_response({"status": "ok", "accepted": False, "ignored": "repository"})
        if payload.get("ref") != f"refs/heads/{hook.branch}":
            return web.json_response({"status": "ok", "accepted": False, "ignored": "branch"})
        after = payload.get("after")
        if payload.get("deleted") is True or after == ZERO:
            return web.json_response({"status": "ok", "accepted": False, "ignored": "deletion"})
        commit = after if isinstance(after, str) and len(after) == 40 and all(
            c in "0123456789abcdef" for c in after) else None
        delivery = request.headers.get(_DELIVERY_HEADERS[provider])
        delivery_id = f"{provider}:{delivery[:200]}" if delivery else None
        # The delivery id header is not signed: a replayed body with a new id is recognised by its
        # signed content (branch + pushed commit) instead.
        replay_key = f"push:{hook.repository}:{hook.branch}:{after}" if isinstance(after, str) else None
        body = await asyncio.to_thread(_enqueue_sync, request.app, commit, delivery_id, replay_key)
        return web.json_response(body, status=202)

    handler.__name__ = f"handle_webhook_{provider}"
    return handler
