"""The web page's routes over loopback: GET / for browsers and JSON clients, /ui/ files, headers, no CDN."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from query.config import ServerConfig
from query.server.security import SECURITY_HEADERS
from query.server.webpage import PAGE_CSP, WEB_FILES, read_web_file, wants_html
from tests.query.test_server import ADMIN_KEY, SEARCH_KEY, store, with_server  # noqa: F401 - fixture

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def test_root_gives_browsers_the_page_and_json_clients_links(store: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(base + "/", headers={"Accept": BROWSER_ACCEPT}) as resp:
            page = await resp.text()
            assert resp.status == 200 and resp.content_type == "text/html"
            assert resp.headers["Content-Security-Policy"] == PAGE_CSP
            for name, value in SECURITY_HEADERS.items():
                if name != "Content-Security-Policy":
                    assert resp.headers[name] == value
        assert '<script src="/ui/app.js"' in page and 'id="q"' in page
        async with http.get(base + "/", headers={"Accept": "application/json"}) as resp:
            body = await resp.json()
            assert resp.status == 200 and body["links"]["page"] == "/ui/"
        async with http.get(base + "/ui/") as resp:
            assert resp.status == 200 and await resp.text() == page
        for name, kind in WEB_FILES.items():
            async with http.get(f"{base}/ui/{name}") as resp:
                assert resp.status == 200 and resp.content_type == kind, name
                assert await resp.read() == read_web_file(name)
        for bad in ("/ui/server.py", "/ui/..%2Fserver.py", "/ui/%2e%2e/mcp_server.py", "/ui/nope.js"):
            async with http.get(base + bad) as resp:
                body = await resp.json()
                assert resp.status == 404 and body["reason"] == "not_found", bad

    with_server(store, hash_embedder, scenario)


def test_page_is_public_but_the_api_behind_it_needs_a_key(store: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    config = ServerConfig(search_key=SEARCH_KEY, admin_key=ADMIN_KEY)

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(base + "/", headers={"Accept": BROWSER_ACCEPT}) as resp:
            assert resp.status == 200
        async with http.get(base + "/ui/app.js") as resp:
            assert resp.status == 200
        async with http.get(base + "/bundles") as resp:
            assert resp.status == 401
        async with http.get(base + "/bundles", headers={"X-API-Key": SEARCH_KEY}) as resp:
            assert resp.status == 200

    with_server(store, hash_embedder, scenario, config=config)


def test_the_page_loads_nothing_from_elsewhere() -> None:
    """No CDN: every URL in the page's files is same-origin (a path), and the JS builds no HTML from strings."""
    for name in WEB_FILES:
        text = re.sub(r'xmlns="[^"]*"', "", read_web_file(name).decode("utf-8"))  # a namespace name, not a fetch
        external = re.findall(r"(?:https?:)?//[\w.-]+", text)
        assert external == [], (name, external)
    script = read_web_file("app.js").decode("utf-8")
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "eval(" not in script


@pytest.mark.parametrize(("accept", "html"), [
    (BROWSER_ACCEPT, True),
    ("text/html", True),
    ("application/json", False),
    ("*/*", False),
    ("", False),
    ("application/json, text/html;q=0.5", False),
    ("text/html;q=0.9, application/json;q=0.1", True),
])
def test_wants_html(accept: str, html: bool) -> None:
    from aiohttp.test_utils import make_mocked_request

    request = make_mocked_request("GET", "/", headers={"Accept": accept} if accept else {})
    assert wants_html(request) is html
