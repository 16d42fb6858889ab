"""The web page for people: a static page (HTML, CSS, plain JS in ``query/server/web/``) served by the server.

``GET /`` gives the page to browsers (``Accept`` prefers ``text/html``) and the JSON index to
everyone else; ``GET /ui/`` and ``GET /ui/{file}`` serve the page's files.  The page itself is
public and holds no data: it calls the JSON API (``/health``, ``/bundles``, ``/search``,
``/answer``, ``/graph``) from the browser, with the API key the person typed (kept in session
storage, sent as ``X-API-Key``).  No CDN, no build step.

The page gets a stricter-than-default CSP that allows only its own script, style and API calls
(``'self'``); every other security header is the API's (:data:`query.server.security.SECURITY_HEADERS`).
"""

from __future__ import annotations

from importlib import resources

from aiohttp import web

WEB_FILES = {"index.html": "text/html", "app.js": "text/javascript", "style.css": "text/css",
             "favicon.svg": "image/svg+xml"}
PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
            "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def read_web_file(name: str) -> bytes:
    """Return the bytes of one of :data:`WEB_FILES` (package data of ``query/server/web/``)."""
    return resources.files("query.server").joinpath("web", name).read_bytes()


def _file_response(name: str) -> web.Response:
    return web.Response(body=read_web_file(name), content_type=WEB_FILES[name], charset="utf-8",
                        headers={"Content-Security-Policy": PAGE_CSP})


def wants_html(request: web.Request) -> bool:
    """True when the client prefers HTML to JSON (a browser navigating to the page)."""
    accept = request.headers.get("Accept", "")
    if "text/html" not in accept:
        return False
    best: dict[str, float] = {}
    for part in accept.split(","):
        kind, _, params = part.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        best[kind.strip()] = q
    return best.get("text/html", 0.0) >= best.get("application/json", 0.0)


async def handle_page(request: web.Request) -> web.Response:
    """``GET /ui/``: the web page."""
    return _file_response("index.html")


async def handle_asset(request: web.Request) -> web.Response:
    """``GET /ui/{name}``: the page's script and style sheet (a fixed list; anything else is 404)."""
    name = request.match_info["name"]
    if name not in WEB_FILES:
        raise web.HTTPNotFound()
    return _file_response(name)


__all__ = ["PAGE_CSP", "WEB_FILES", "handle_asset", "handle_page", "read_web_file", "wants_html"]
