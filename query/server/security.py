"""HTTP security: API keys and roles, per-key rate limits, CORS, security headers, error envelope.

Every route has a role (see ``server.ROUTES``): ``public`` (``/health``, ``/openapi.json``),
``webhook`` (no key: the handler checks the HMAC), ``search``, ``sync`` or ``admin``.  A key is presented as
``X-API-Key: KEY`` or ``Authorization: Bearer KEY`` and compared in constant time against *every*
configured key (no early exit, so timing does not reveal which key almost matched).  The admin
key may do everything; the sync key only ``/sync``; the search key only retrieval.  Without any
key configured the server runs only on loopback and every role is open.  Rate limits apply per
key (and per client address on the webhooks); a server without keys has none.

Failed key attempts are limited per client address and key prefix (``auth_failures_per_minute``,
the first :data:`FAILED_KEY_PREFIX` characters of the presented key, or none): once a bucket is
empty, that address gets ``429`` for keys with that prefix until it refills, right key or not, so
one bad client behind a shared NAT does not lock out the good keys there.  The client address is
the peer's, or, from a peer in ``trusted_proxies``, the last ``X-Forwarded-For`` entry that is no
trusted proxy (:func:`client_address`).

Without keys (loopback only) two browser attacks remain, and both are refused here: DNS
rebinding (a page on ``evil.example`` whose name now resolves to 127.0.0.1) is answered ``421
misdirected_request`` because its ``Host`` is not a loopback name; a cross-site "simple" request
(form post, ``text/plain``, no pre-flight) to a state-changing route (roles ``admin`` and ``sync``)
is answered ``403 cross_site_forbidden`` from its ``Origin`` / ``Sec-Fetch-Site`` headers.

Middleware order (outermost first): ``server.log_middleware`` (one log line per request) ->
:func:`headers_middleware` (CORS + security headers on every response, errors included) ->
:func:`envelope_middleware` (exceptions -> contract envelope) -> :func:`auth_middleware` (Host
check, cross-site check, failed-key limit, role check, then rate limit).  Errors raised by aiohttp's
HTTP parser before any middleware runs (an undecodable ``Content-Encoding``, a malformed request
line) get the same envelope and headers from ``server.EnvelopeRunner``.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import threading
import time
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

from artifacts.errors import ArtifactError
from query.config import ServerConfig
from query.contract import error_body
from query.errors import (
    ClientDisconnectedError,
    ForbiddenError,
    MisdirectedRequestError,
    QueryError,
    RateLimitedError,
    UnauthorizedError,
    from_artifact_error,
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
                   fields: list[dict[str, str]] | None = None, message: str | None = None) -> web.Response:
    """Return the contract's error envelope for ``reason`` with a fixed message.

    ``fields`` (optional) names the request fields at fault and the constraint they break;
    ``message`` (optional) a fixed server sentence replacing the reason's (see :func:`error_body`).
    """
    body = error_body(reason, message)
    if fields:
        body["errors"] = fields
    return web.json_response(body, status=status, headers=headers)


def check_unpublished(payload: Any, *, allowed: bool) -> None:
    """Refuse a request body that asks for unpublished pages from a caller who may not read them.

    ``published_only: false`` (``/search``, ``/graph``, ``/document``, ``/answer`` and their MCP
    tools) needs the admin key unless the server TOML says ``unpublished_public = true``
    (``allowed`` is that, or an admin caller).  Other bodies pass (their validation is the route's).

    :raises ForbiddenError: ``403 unpublished_forbidden``.
    """
    if not allowed and isinstance(payload, dict) and payload.get("published_only") is False:
        raise ForbiddenError("published_only: false needs the admin key", reason="unpublished_forbidden")


FAILED_KEY_PREFIX = 4
"""Characters of a presented key that, with the client address, name its failed-attempt bucket."""


def client_address(request: web.Request) -> str:
    """The client's address: the peer's, unless the peer is a trusted proxy (``trusted_proxies``).

    From a trusted proxy, ``X-Forwarded-For`` is read from the right: the first entry that is not a
    trusted proxy itself is the client (entries further left were written by the client and are not
    believed).  A malformed entry, or none, leaves the proxy's own address.
    """
    peer = request.remote or ""
    networks = request.app[PROXY_NETWORKS] if PROXY_NETWORKS in request.app else []
    if not networks or not in_networks(peer, networks):
        return peer
    for entry in reversed(",".join(request.headers.getall("X-Forwarded-For", [])).split(",")):
        entry = entry.strip()
        if not entry:
            continue
        try:
            address = str(ipaddress.ip_address(entry))
        except ValueError:
            return peer
        if not in_networks(address, networks):
            return address
    return peer


def in_networks(address: str, networks: list[Any]) -> bool:
    """True when ``address`` (an IP literal) lies in one of ``networks`` (:mod:`ipaddress` networks)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def failure_identity(request: web.Request, presented: str | None) -> str:
    """The failed-key bucket of a request: client address and the presented key's first characters."""
    prefix = presented[:FAILED_KEY_PREFIX] if presented else ""
    return f"addr:{client_address(request)}|key:{prefix}"


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


def has_valid_key(config: ServerConfig, request: web.Request) -> bool:
    """True when the request presents one of the configured keys (any role).

    For public routes that show more to key holders (``/health``).  A wrong key counts as a failed
    attempt like on keyed routes, and an address that has used up its attempts is not checked at all,
    so such a route cannot serve as an oracle that bypasses the failed-key limit.
    """
    presented = presented_key(request)
    if presented is None:
        return False
    failures = request.app[AUTH_FAILURES]
    address = failure_identity(request, presented)
    if failures.peek(address) > 0:
        return False
    if match_key(config, presented) is not None:
        return True
    failures.take(address)
    return False


def is_loopback_host_header(host: str | None) -> bool:
    """True for a ``Host`` header naming a loopback address (``localhost``, ``*.localhost``, 127.0.0.0/8,
    ``[::1]``), with or without a port.  A missing header (HTTP/1.0 clients) counts as loopback."""
    if host is None:
        return True
    name = host.strip().lower()
    if name.startswith("["):  # [::1]:8080
        name = name[1:].split("]", 1)[0]
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    name = name.rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_cross_site(config: ServerConfig, request: web.Request) -> bool:
    """True when a browser sent the request from another origin that is not on the CORS allow-list.

    ``Origin`` decides when present (same origin or allow-listed is fine); otherwise
    ``Sec-Fetch-Site`` (``same-origin`` or ``none`` is fine); a request with neither (curl, scripts) is
    not cross-site.
    """
    origin = request.headers.get("Origin")
    if origin is not None:
        return not (origin in config.cors_origins or origin == f"{request.scheme}://{request.host}")
    return request.headers.get("Sec-Fetch-Site", "none") not in ("same-origin", "none")


def authorize(config: ServerConfig, request: web.Request, role: str) -> str:
    """Check the request's key for ``role`` and return a rate-limit identity (never the key itself).

    Raises :class:`UnauthorizedError` (no or unknown key) or :class:`ForbiddenError` (known key,
    wrong role).  ``public`` routes and a server without keys return the client address.
    """
    if role in ("public", "webhook") or not config.keys_configured:
        return f"addr:{client_address(request)}"
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
    """Token buckets per identity: ``per_minute`` sustained, ``burst`` at most; thread-safe.

    Buckets that have refilled completely are forgotten once more than ``max_identities`` are
    tracked (a full bucket is the same as none), so many client addresses cannot grow it without bound.
    """

    def __init__(self, per_minute: float, burst: int, max_identities: int = 10_000) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self.max_identities = max_identities
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def _prune(self, now: float) -> None:
        full = [k for k, (tokens, last) in self._buckets.items() if tokens + (now - last) * self.rate >= self.burst]
        for key in full:
            del self._buckets[key]

    def take(self, identity: str) -> float:
        """Take one token; return 0 when allowed, else the seconds until a token is available."""
        now = time.monotonic()
        with self._lock:
            if len(self._buckets) >= self.max_identities:
                self._prune(now)
            tokens, last = self._buckets.get(identity, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[identity] = (tokens - 1.0, now)
                return 0.0
            self._buckets[identity] = (tokens, now)
            return (1.0 - tokens) / self.rate

    def peek(self, identity: str) -> float:
        """Return 0 when ``identity`` has a token left (without taking it), else the seconds until it has."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(identity, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate


CONFIG = web.AppKey("config", ServerConfig)
LIMITER = web.AppKey("limiter", RateLimiter)
AUTH_FAILURES = web.AppKey("auth_failures", RateLimiter)
PROXY_NETWORKS = web.AppKey("proxy_networks", list)
STATE_CHANGING_ROLES = ("admin", "sync")
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
async def headers_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
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
async def envelope_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn every error into the contract's envelope with a stable reason and no echoed input.

    An error answered before the body was read to its end closes the connection, so aiohttp does
    not go on reading (or decoding) a body that was refused.
    """
    try:
        return await handler(request)
    except Exception as exc:  # noqa: BLE001 - every error becomes an envelope
        response = _envelope(exc)
        if request.body_exists and not request.content.is_eof():
            response.force_close()
        return response


def _envelope(exc: Exception) -> web.Response:
    """The contract's envelope for ``exc`` (the one mapping from exceptions to HTTP answers)."""
    if isinstance(exc, RateLimitedError):
        return error_response(exc.reason, exc.status, {"Retry-After": str(max(1, round(exc.retry_after)))})
    if isinstance(exc, UnauthorizedError):
        return error_response(exc.reason, exc.status, {"WWW-Authenticate": 'Bearer realm="gitrag"'})
    if isinstance(exc, ClientDisconnectedError):
        log.info("client disconnected before sending its whole body", extra={"event": "client_disconnected"})
        return error_response("invalid_request", 400)  # nobody reads it; aiohttp drops it quietly
    if isinstance(exc, QueryError):
        return error_response(exc.reason, exc.status, fields=exc.fields, message=exc.public_message)
    if isinstance(exc, ArtifactError):
        mapped = from_artifact_error(exc)
        return error_response(mapped.reason, mapped.status, fields=mapped.fields, message=mapped.public_message)
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        return error_response("payload_too_large", 413)
    if isinstance(exc, web.HTTPNotFound):
        return error_response("not_found", 404)
    if isinstance(exc, web.HTTPMethodNotAllowed):
        return error_response("method_not_allowed", 405, {"Allow": ", ".join(sorted(exc.allowed_methods))})
    if isinstance(exc, web.HTTPException):
        return error_response("invalid_request", exc.status)
    log.error("unhandled error", exc_info=exc)  # logged, never shown to the client
    return error_response("internal_error", 500)


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Check the Host (no keys), cross-site state changes (no keys), failed-key limit, role, rate limit."""
    config: ServerConfig = request.app[CONFIG]
    if not config.keys_configured and not is_loopback_host_header(request.headers.get("Host")):
        raise MisdirectedRequestError("Host is not a loopback name")
    role = _route_role(request)
    if role is None:  # unknown route or method: let the router's 404/405 through
        return await handler(request)
    if not config.keys_configured and role in STATE_CHANGING_ROLES and is_cross_site(config, request):
        raise ForbiddenError("cross-site", reason="cross_site_forbidden")
    keyed = config.keys_configured and role not in ("public", "webhook")
    address = failure_identity(request, presented_key(request))
    if keyed:
        wait = request.app[AUTH_FAILURES].peek(address)
        if wait > 0:
            raise RateLimitedError("too many failed key attempts", wait)
    try:
        identity = authorize(config, request, role)
    except UnauthorizedError:
        if keyed:
            request.app[AUTH_FAILURES].take(address)
        raise
    if identity.startswith("key:") or role == "webhook":
        wait = request.app[LIMITER].take(identity)
        if wait > 0:
            raise RateLimitedError("rate limited", wait)
    return await handler(request)


def is_admin(request: web.Request) -> bool:
    config: ServerConfig = request.app[CONFIG]
    if not config.keys_configured:
        return True  # loopback-only server: every role is open
    key = presented_key(request)
    return key is not None and match_key(config, key) == "admin_key"


def may_read_unpublished(request: web.Request) -> bool:
    """Whether this request may ask for pages with ``published: false`` (admin key, or ``unpublished_public``)."""
    return request.app[CONFIG].unpublished_public or is_admin(request)
