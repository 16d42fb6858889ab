"""HTTP security: API keys and roles, per-key rate limits, CORS, security headers, error envelope.

Every route has a role (see ``server.ROUTES``): ``public`` (``/health``, ``/openapi.json``),
``webhook`` (no key: the handler checks the HMAC), ``search``, ``sync`` or ``admin``.  A key is presented as
``X-API-Key: KEY`` or ``Authorization: Bearer KEY`` and compared in constant time against *every*
configured key (no early exit, so timing does not reveal which key almost matched).  The admin
key may do everything; the sync key only ``/sync``; the search key only retrieval.  Without any
key configured the server runs only on loopback and every role is open.  Rate limits apply per
key (and per client address on the webhooks); a server without keys has none.

Middleware order (outermost first): :func:`headers_middleware` (CORS + security headers on every
response, errors included) -> :func:`envelope_middleware` (exceptions -> contract envelope) ->
:func:`auth_middleware` (role check, then rate limit).
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from typing import Any

from aiohttp import web

from artifacts.errors import ArtifactError

from .config import ServerConfig
from .contract import error_body
from .errors import (
    ForbiddenError,
    QueryError,
    RateLimitedError,
    UnauthorizedError,
)

log = logging.getLogger("gitrag.server")


ROLE_KEYS = {"search": ("search_key", "admin_key"), "sync": ("sync_key", "admin_key"), "admin": ("admin_key",)}
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
}
CORS_HEADERS = "Authorization, Content-Type, X-API-Key"
CORS_METHODS = "GET, POST, OPTIONS"


def error_response(reason: str, status: int, headers: dict[str, str] | None = None,
                   fields: list[dict[str, str]] | None = None) -> web.Response:
    """Return the contract's error envelope for ``reason`` with a fixed message.

    ``fields`` (optional) names the request fields at fault and the constraint they break.
    """
    body = error_body(reason)
    if fields:
        body["errors"] = fields
    return web.json_response(body, status=status, headers=headers)


def presented_key(request: web.Request) -> str | None:
    """Return the key in ``X-API-Key`` or ``Authorization: Bearer``, or ``None``."""
    key = request.headers.get("X-API-Key")
    if key:
        return key.strip()
    auth = request.headers.get("Authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def match_key(config: ServerConfig, presented: str) -> str | None:
    """Return the name of the configured key equal to ``presented`` (constant time per key), or ``None``."""
    found = None
    given = presented.encode("utf-8", errors="replace")
    for name in ("search_key", "admin_key", "sync_key"):
        value = getattr(config, name)
        if value is None:
            continue
        if hmac.compare_digest(value.encode("utf-8"), given):
            found = name
    return found


def authorize(config: ServerConfig, request: web.Request, role: str) -> str:
    """Check the request's key for ``role`` and return a rate-limit identity (never the key itself).

    Raises :class:`UnauthorizedError` (no or unknown key) or :class:`ForbiddenError` (known key,
    wrong role).  ``public`` routes and a server without keys return the client address.
    """
    if role in ("public", "webhook") or not config.keys_configured:
        return f"addr:{request.remote}"
    presented = presented_key(request)
    if presented is None:
        raise UnauthorizedError("no API key")
    name = match_key(config, presented)
    if name is None:
        raise UnauthorizedError("unknown API key")
    if name not in ROLE_KEYS[role]:
        raise ForbiddenError("key not allowed here")
    return f"key:{name}"


class RateLimiter:
    """Token buckets per identity: ``per_minute`` sustained, ``burst`` at most; thread-safe."""

    def __init__(self, per_minute: int, burst: int) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, identity: str) -> float:
        """Take one token; return 0 when allowed, else the seconds until a token is available."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(identity, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[identity] = (tokens - 1.0, now)
                return 0.0
            self._buckets[identity] = (tokens, now)
            return (1.0 - tokens) / self.rate


CONFIG = web.AppKey("config", ServerConfig)
LIMITER = web.AppKey("limiter", RateLimiter)
ROLES = web.AppKey("roles", dict)


def _route_role(request: web.Request) -> str | None:
    resource = request.match_info.route.resource
    if resource is None:
        return None
    return request.app[ROLES].get((request.method, resource.canonical))


def _cors_headers(config: ServerConfig, request: web.Request) -> dict[str, str]:
    origin = request.headers.get("Origin")
    if origin and (origin in config.cors_origins or "*" in config.cors_origins):
        return {"Access-Control-Allow-Origin": origin, "Vary": "Origin",
                "Access-Control-Expose-Headers": "Retry-After"}
    return {}


@web.middleware
async def headers_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """Answer CORS pre-flights and add CORS and security headers to every response."""
    config = request.app[CONFIG]
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        cors = _cors_headers(config, request)
        if not cors:
            response: web.StreamResponse = error_response("cors_forbidden", 403)
        else:
            response = web.Response(status=204, headers={
                **cors, "Access-Control-Allow-Methods": CORS_METHODS,
                "Access-Control-Allow-Headers": CORS_HEADERS, "Access-Control-Max-Age": "600"})
    else:
        response = await handler(request)
        response.headers.update(_cors_headers(config, request))
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


@web.middleware
async def envelope_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """Turn every error into the contract's envelope with a stable reason and no echoed input."""
    try:
        return await handler(request)
    except RateLimitedError as exc:
        return error_response(exc.reason, exc.status, {"Retry-After": str(max(1, round(exc.retry_after)))})
    except UnauthorizedError as exc:
        return error_response(exc.reason, exc.status, {"WWW-Authenticate": 'Bearer realm="gitrag"'})
    except QueryError as exc:
        return error_response(exc.reason, exc.status, fields=exc.fields)
    except ArtifactError:
        return error_response("retrieval_unavailable", 503)
    except web.HTTPRequestEntityTooLarge:
        return error_response("payload_too_large", 413)
    except web.HTTPNotFound:
        return error_response("not_found", 404)
    except web.HTTPMethodNotAllowed:
        return error_response("method_not_allowed", 405)
    except web.HTTPException as exc:
        return error_response("invalid_request", exc.status)
    except Exception:  # noqa: BLE001 - logged, never shown to the client
        log.exception("unhandled error")
        return error_response("internal_error", 500)


@web.middleware
async def auth_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """Check the route's role, then the identity's rate limit."""
    role = _route_role(request)
    if role is None:  # unknown route or method: let the router's 404/405 through
        return await handler(request)
    identity = authorize(request.app[CONFIG], request, role)
    if identity.startswith("key:") or role == "webhook":
        wait = request.app[LIMITER].take(identity)
        if wait > 0:
            raise RateLimitedError("rate limited", wait)
    return await handler(request)
