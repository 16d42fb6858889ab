"""Hostile inputs of issue 12 ("Serving"): every error in the envelope, validation, Host and cross-site
checks, failed-key limits, /health on a keyed server, GET /, and the structured request/swap logs."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
from pathlib import Path

import pytest

from artifacts.store import Store
from query.config import ServerConfig, WebhookConfig, is_loopback
from query.contract import ERROR_MESSAGES
from query.errors import InvalidQueryError, InvalidRequestError
from query.search.request import parse_search_request
from query.server.security import SECURITY_HEADERS, is_loopback_host_header
from tests.query.test_server import ADMIN_KEY, ENVELOPE, SEARCH_KEY, SYNC_KEY, WEBHOOK_SECRET, with_server
from tests.query.test_server import store as store  # noqa: F401 - fixture


async def _raw(port: int, request: bytes, *, read: bool = True) -> bytes:
    """Send raw bytes to the server and return everything it answers (until it closes)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10) if read else b""
    writer.close()
    return data


def _split(response: bytes) -> tuple[int, dict[str, str], dict]:
    head, _, body = response.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, json.loads(body)


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


# -- every error in the envelope ------------------------------------------------------------------


@pytest.mark.parametrize("job_id", [str(2**63), str(2**64 + 5), "9" * 5000])
def test_huge_job_ids_are_404_in_the_envelope(store: Path, hash_embedder, job_id: str) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(f"{base}/sync/jobs/{job_id}") as resp:
            body = await resp.json()
        assert resp.status == 404 and body["reason"] == "job_not_found" and ENVELOPE <= set(body)
        async with http.get(f"{base}/sync/jobs/{2**63 - 1}") as resp:  # the largest SQLite id: just absent
            assert resp.status == 404 and (await resp.json())["reason"] == "job_not_found"

    with_server(store, hash_embedder, scenario)


def test_signed_webhook_with_deeply_nested_json_is_400(store: Path, hash_embedder, tmp_path: Path) -> None:  # noqa: F811
    hook = WebhookConfig(secret=WEBHOOK_SECRET, repository="owner/wiki", remote=str(tmp_path / "up.git"),
                         mirror=str(tmp_path / "mirror.git"), max_body_bytes=64 * 1024)
    config = ServerConfig(admin_key=ADMIN_KEY, webhook=hook, spawn_worker=False)
    body = b"[" * 30_000 + b"]" * 30_000  # within the 64 KiB limit, far deeper than json can go

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        signature = "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
        async with http.post(base + "/webhook/github", data=body, headers={
                "Content-Type": "application/json", "X-GitHub-Event": "push",
                "X-Hub-Signature-256": signature}) as resp:
            reply = await resp.json()
        assert resp.status == 400 and reply["reason"] == "invalid_request" and ENVELOPE <= set(reply)

    with_server(store, hash_embedder, scenario, config=config)


@pytest.mark.parametrize(("raw", "field"), [
    (b'{"query": "holp", "filter": {"path_prefix": "wiki/\\ud800"}}', "filter.path_prefix"),
    (b'{"query": "holp", "filter": {"tags": ["ok", "\\udfff"]}}', "filter.tags.1"),
])
def test_lone_surrogate_in_any_field_is_400(store: Path, hash_embedder, raw: bytes, field: str) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.post(base + "/search", data=raw, headers={"Content-Type": "application/json"}) as resp:
            body = await resp.json()
        assert resp.status == 400 and body["reason"] == "invalid_request" and ENVELOPE <= set(body)
        assert body["errors"] == [{"field": field, "problem": "not valid Unicode text (lone surrogate)"}]

    with_server(store, hash_embedder, scenario)


def test_unsupported_content_encoding_gets_the_envelope_and_headers(store: Path, hash_embedder) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        raw = await _raw(_port(base), b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                      b"Content-Encoding: br\r\nContent-Length: 4\r\n\r\nabcd")
        status, headers, body = _split(raw)
        assert status == 415 and body["reason"] == "unsupported_content_encoding" and ENVELOPE <= set(body)
        assert body["message"] == ERROR_MESSAGES["unsupported_content_encoding"]
        assert headers["content-type"].startswith("application/json")
        assert all(headers[name.lower()] == value for name, value in SECURITY_HEADERS.items())
        assert b"Brotli" not in raw and b"install" not in raw
        # Garbage declared as gzip is refused the same way, from inside the handler.
        async with http.post(base + "/search", data=b"not gzip at all", headers={
                "Content-Type": "application/json", "Content-Encoding": "gzip"}) as resp:
            reply = await resp.json()
        assert resp.status == 415 and reply["reason"] == "unsupported_content_encoding"

    with_server(store, hash_embedder, scenario)


def test_client_disconnecting_mid_body_is_no_unhandled_error(store: Path, hash_embedder,  # noqa: F811
                                                             caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        await _raw(_port(base), b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                b"Content-Length: 400\r\n\r\n{\"query\":", read=False)
        for _ in range(50):
            if any(getattr(r, "event", None) == "client_disconnected" for r in caplog.records):
                break
            await asyncio.sleep(0.05)
        async with http.get(base + "/health") as resp:  # the server is fine
            assert resp.status == 200

    with caplog.at_level(logging.INFO):
        with_server(store, hash_embedder, scenario)
    assert any(getattr(r, "event", None) == "client_disconnected" for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]
    assert not [r for r in caplog.records if r.exc_info]


def test_405_carries_allow(store: Path, hash_embedder) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        for method, path, allowed in (("GET", "/search", "POST"), ("POST", "/health", "GET"),
                                      ("DELETE", "/admin/use", "POST")):
            async with http.request(method, base + path) as resp:
                body = await resp.json()
            assert resp.status == 405 and body["reason"] == "method_not_allowed", path
            assert allowed in resp.headers["Allow"], path

    with_server(store, hash_embedder, scenario)


# -- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["\u200b", "\ufeff", "\u200b\u200c\u200d\u2060\ufeff", " \u200b\t\ufeff ",
                                   "\u200e\u200f", "\x00\x01"])
def test_invisible_only_queries_are_invalid(query: str) -> None:
    with pytest.raises(InvalidQueryError):
        parse_search_request({"query": query})


def test_visible_text_with_invisible_characters_is_fine() -> None:
    assert parse_search_request({"query": "\ufeffholp\u200b"}).query == "\ufeffholp\u200b"
    with pytest.raises(InvalidRequestError) as info:
        parse_search_request({"query": "ok", "filter": {"\ud800": 1}})
    assert info.value.fields == [{"field": "filter", "problem": "not valid Unicode text (lone surrogate)"}]


def test_invisible_query_over_http_is_400(store: Path, hash_embedder) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.post(base + "/search", json={"query": "\u200b\ufeff"}) as resp:
            assert resp.status == 400 and (await resp.json())["reason"] == "invalid_query"

    with_server(store, hash_embedder, scenario)


@pytest.mark.parametrize(("host", "expected"), [
    ("127.0.0.1", True), ("127.5.6.7", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("127.0.0.1.invalid", False), ("127.evil.invalid", False), ("0.0.0.0", False), ("::", False),
    ("10.0.0.1", False), ("", False),
])
def test_is_loopback_resolves_and_checks_the_address(host: str, expected: bool) -> None:
    assert is_loopback(host) is expected


@pytest.mark.parametrize(("header", "expected"), [
    ("127.0.0.1:8080", True), ("localhost:8080", True), ("LOCALHOST", True), ("app.localhost", True),
    ("[::1]:8080", True), ("127.1.2.3", True), (None, True),
    ("evil.example:8080", False), ("127.0.0.1.evil.example", False), ("10.0.0.1:80", False), ("[::]:8080", False),
])
def test_loopback_host_header(header: str | None, expected: bool) -> None:
    assert is_loopback_host_header(header) is expected


def test_dns_rebinding_and_cross_site_requests_are_refused_without_keys(store: Path, hash_embedder) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        port = _port(base)
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example"):
            async with http.get(base + "/health", headers={"Host": host}) as resp:
                body = await resp.json()
            assert resp.status == 421 and body["reason"] == "misdirected_request" and ENVELOPE <= set(body), host
        for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
            async with http.get(base + "/health", headers={"Host": host}) as resp:
                assert resp.status == 200, host
        # State-changing routes refuse simple cross-site requests (a form post from a web page)...
        for headers in ({"Origin": "https://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"},
                        {"Sec-Fetch-Site": "same-site"}):
            for path in ("/admin/reload", "/sync"):
                async with http.post(base + path, data=b"x=1", headers={
                        **headers, "Content-Type": "application/x-www-form-urlencoded"}) as resp:
                    body = await resp.json()
                assert resp.status == 403 and body["reason"] == "cross_site_forbidden", (path, headers)
        # ...but not same-origin ones, nor requests without browser headers (curl, scripts).
        for headers in ({}, {"Origin": base}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}):
            async with http.post(base + "/admin/reload", headers=headers) as resp:
                assert resp.status == 200, headers

    with_server(store, hash_embedder, scenario)


def test_failed_key_attempts_are_rate_limited(store: Path, hash_embedder) -> None:  # noqa: F811
    config = ServerConfig(search_key=SEARCH_KEY, admin_key=ADMIN_KEY, auth_failures_per_minute=1,
                          auth_failures_burst=3)

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.post(base + "/search", json={"query": "holp"}, headers={"X-API-Key": SEARCH_KEY}) as resp:
            assert resp.status == 200  # a good key is not a failure
        for n in range(3):
            async with http.post(base + "/search", json={"query": "holp"}, headers={"X-API-Key": "x" * 40}) as resp:
                assert resp.status == 401, n
        async with http.post(base + "/search", json={"query": "holp"}, headers={"X-API-Key": "x" * 39 + "y"}) as resp:
            body = await resp.json()
        assert resp.status == 429 and body["reason"] == "rate_limited" and int(resp.headers["Retry-After"]) >= 1
        # The bucket is per (address, key prefix): a good key with another prefix keeps working ...
        async with http.post(base + "/search", json={"query": "holp"}, headers={"X-API-Key": SEARCH_KEY}) as resp:
            assert resp.status == 200
        # ... but guessing stops even for a right key once guesses with its prefix used up the bucket.
        for n in range(3):
            async with http.post(base + "/search", json={"query": "holp"},
                                 headers={"X-API-Key": SEARCH_KEY[:4] + "x" * 36}) as resp:
                assert resp.status == 401, n
        async with http.post(base + "/search", json={"query": "holp"}, headers={"X-API-Key": SEARCH_KEY}) as resp:
            assert resp.status == 429
        async with http.get(base + "/health") as resp:  # public routes stay open
            assert resp.status == 200

    with_server(store, hash_embedder, scenario, config=config)


# -- /health, GET / --------------------------------------------------------------------------------


def test_health_on_a_keyed_server_shows_details_only_with_a_key(store: Path, hash_embedder) -> None:  # noqa: F811
    config = ServerConfig(search_key=SEARCH_KEY, admin_key=ADMIN_KEY, sync_key=SYNC_KEY)

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(base + "/health") as resp:
            public = await resp.json()
            text = await resp.text()
        assert resp.status == 200
        assert public == {"status": "ok", "ready": True, "reason": None, "message": None, "auth": "api_keys",
                          "serving": "current"}
        assert "hash-64" not in text and "commit" not in text
        for key in (SEARCH_KEY, SYNC_KEY, ADMIN_KEY):
            async with http.get(base + "/health", headers={"Authorization": f"Bearer {key}"}) as resp:
                full = await resp.json()
            assert full["bundle"]["counts"]["documents"] == 2 and full["bundle"]["embedder"] == "hash-64"
            assert full["bundle"]["commit_summary"] == "change" and full["swaps"] == 1
        async with http.get(base + "/health", headers={"X-API-Key": "z" * 40}) as resp:
            assert "bundle" not in await resp.json()
        # /health is no key-guessing oracle: wrong keys count as failed attempts there too.
        # (per address and key prefix: guesses with the admin key's first characters block the admin key)
        for _ in range(4):
            await (await http.get(base + "/health", headers={"X-API-Key": ADMIN_KEY[:4] + "q" * 36})).read()
        async with http.get(base + "/health", headers={"X-API-Key": ADMIN_KEY}) as resp:
            assert resp.status == 200 and "bundle" not in await resp.json()  # blocked: the right key shows nothing
        async with http.post(base + "/search", json={"query": "holp"}, headers={"X-API-Key": ADMIN_KEY}) as resp:
            assert resp.status == 429

    with_server(store, hash_embedder, scenario, config=config.model_copy(
        update={"auth_failures_burst": 4, "auth_failures_per_minute": 1}))


def test_empty_store_health_says_to_run_build(tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(base + "/health") as resp:
            body = await resp.json()
        assert resp.status == 503 and body["ready"] is False and body["reason"] == "retrieval_unavailable"
        assert "gitrag build --repo REPO --store STORE" in body["message"]
        assert str(tmp_path) not in json.dumps(body)
        # while the first build runs (it holds the store lock), /health says so instead of "run a build"
        with Store(tmp_path / "empty").writer_lock():
            async with http.get(base + "/health") as resp:
                busy = await resp.json()
        assert resp.status == 503 and "a build is running now" in busy["message"]
        # the query endpoints give the same sentence as /health, in the contract's envelope
        for path, body_ in (("/search", {"query": "digitalizace"}), ("/answer", {"query": "Co je UNIPA?"})):
            async with http.post(base + path, json=body_) as resp:
                idle = await resp.json()
            assert resp.status == 503 and idle["reason"] == "retrieval_unavailable" and idle["status"] == "error"
            assert "gitrag build --repo REPO --store STORE" in idle["message"] and ENVELOPE <= set(idle)
            with Store(tmp_path / "empty").writer_lock():
                async with http.post(base + path, json=body_) as resp:
                    building = await resp.json()
            assert resp.status == 503 and building["reason"] == "retrieval_unavailable", path
            assert building["message"] == busy["message"] and "a build is running now" in building["message"]
            assert str(tmp_path) not in json.dumps(building) and "digitalizace" not in json.dumps(building)

    with_server(tmp_path / "empty", hash_embedder, scenario)


def test_root_links_to_health_and_openapi(store: Path, hash_embedder) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(base + "/") as resp:
            body = await resp.json()
        assert resp.status == 200 and body["name"] == "gitrag"
        assert body["links"]["health"] == "/health" and body["links"]["openapi"] == "/openapi.json"
        assert {"POST /search", "POST /answer", "POST /graph", "POST /document"} == set(body["query_endpoints"])
        for name, link in body["links"].items():
            async with http.get(base + link) as resp:
                # MCP's streamable HTTP transport is stateless here: POST only (GET is 405 with Allow)
                assert resp.status == (405 if name == "mcp" else 200), link
        doc = await (await http.get(base + "/openapi.json")).json()
        assert doc["paths"]["/"]["get"]["operationId"] == "get_root"

    with_server(store, hash_embedder, scenario)


# -- logging ---------------------------------------------------------------------------------------


def test_one_log_line_per_request_and_per_swap(store: Path, hash_embedder,  # noqa: F811
                                               caplog: pytest.LogCaptureFixture) -> None:
    from artifacts.store import Store

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.post(base + "/search", json={"query": "holp"}) as resp:
            assert resp.status == 200
        async with http.get(base + "/nowhere/../etc/passwd") as resp:
            assert resp.status == 404

    with caplog.at_level(logging.INFO, logger="gitrag"):
        with_server(store, hash_embedder, scenario)
    requests = [r for r in caplog.records if getattr(r, "event", None) == "request"]
    assert [(r.method, r.route, r.status) for r in requests] == [("POST", "/search", 200), ("GET", "-", 404)]
    current = Store(store).current_id()
    assert requests[0].bundle_id == current and requests[1].bundle_id is None
    assert all(isinstance(r.duration_ms, float) and r.duration_ms >= 0 for r in requests)
    assert "passwd" not in caplog.text
    swaps = [r for r in caplog.records if getattr(r, "event", None) == "swap"]
    assert len(swaps) == 1 and swaps[0].bundle_id == current and current.startswith(swaps[0].commit)
    assert swaps[0].getMessage().startswith(f"serving commit {swaps[0].commit[:12]} (change) bundle {current}")


def test_json_log_lines_and_level(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from artifacts.logs import configure_logging, resolve_level

    saved = {name: (lg.handlers[:], lg.level, lg.propagate)
             for name, lg in (("gitrag", logging.getLogger("gitrag")), ("aiohttp", logging.getLogger("aiohttp")))}
    stream = io.StringIO()
    try:
        assert configure_logging("warning", stream) == logging.WARNING
        logging.getLogger("gitrag.access").info("hidden")
        logging.getLogger("gitrag.access").warning("GET %s %d", "/health", 200,
                                                   extra={"event": "request", "route": "/health", "duration_ms": 1.5})
    finally:
        for name, (handlers, level, propagate) in saved.items():
            lg = logging.getLogger(name)
            lg.handlers[:], lg.level, lg.propagate = handlers, level, propagate
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert len(lines) == 1
    assert lines[0] | {"ts": None} == {"ts": None, "level": "warning", "logger": "gitrag.access",
                                       "msg": "GET /health 200", "event": "request", "route": "/health",
                                       "duration_ms": 1.5}
    monkeypatch.setenv("GITRAG_LOG_LEVEL", "debug")
    assert resolve_level() == logging.DEBUG and resolve_level("error") == logging.ERROR
    monkeypatch.setenv("GITRAG_LOG_LEVEL", "loud")
    with pytest.raises(ValueError):
        resolve_level()


@pytest.mark.e2e
def test_gitrag_serve_logs_start_requests_and_swaps(store: Path, repo, hash_embedder) -> None:  # noqa: F811  # type: ignore[no-untyped-def]
    """The real command: JSON lines for the listening socket, the served commit, each request, each swap."""
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    from artifacts.store import Store
    from indexer.build import build_bundle

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GITRAG_LOG_LEVEL": "info",
           "GITRAG_SEARCH_KEY": "", "GITRAG_ADMIN_KEY": "", "GITRAG_SYNC_KEY": ""}
    gitrag = str(Path(sys.executable).with_name("gitrag"))
    proc = subprocess.Popen([gitrag, "serve", "--store", str(store), "--port", str(port), "--poll-interval", "0.2"],
                            stderr=subprocess.PIPE, text=True, env=env)
    lines: list[dict] = []

    def wait_for(predicate, timeout: float = 120.0) -> dict:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = proc.stderr.readline()  # type: ignore[union-attr]
            if not line:
                break
            if line.startswith("{"):
                lines.append(json.loads(line))
                if predicate(lines[-1]):
                    return lines[-1]
        raise AssertionError(f"log line not found in {lines}")

    try:
        first = wait_for(lambda r: r.get("event") == "swap")
        assert first["bundle_id"] == Store(store).current_id() and first["msg"].startswith("serving commit ")
        wait_for(lambda r: r.get("event") == "listening")
        request = urllib.request.Request(f"http://127.0.0.1:{port}/search", data=b'{"query": "holp"}',
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as resp:
            assert resp.status == 200
        line = wait_for(lambda r: r.get("event") == "request")
        assert (line["route"], line["status"], line["bundle_id"]) == ("/search", 200, first["bundle_id"])
        assert isinstance(line["duration_ms"], float)
        repo.write("wiki/new.md", "# Nové\n\nNová stránka.\n")
        repo.commit("second commit")
        new = build_bundle(repo.path, store, embedder=hash_embedder)
        swap = wait_for(lambda r: r.get("event") == "swap")
        assert swap["bundle_id"] == new.bundle_id and swap["previous_bundle_id"] == first["bundle_id"]
        assert "(second commit)" in swap["msg"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == 0


def test_gzip_bomb_is_413_and_valid_gzip_works(store: Path, hash_embedder) -> None:  # noqa: F811
    import gzip

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        bomb = gzip.compress(b'{"query": "' + b" " * 20_000_000 + b'holp"}')
        assert len(bomb) < 64 * 1024  # the compressed body passes the size check; the decoded one must not
        async with http.post(base + "/search", data=bomb, headers={
                "Content-Type": "application/json", "Content-Encoding": "gzip"}) as resp:
            body = await resp.json()
        assert resp.status == 413 and body["reason"] == "payload_too_large"
        async with http.post(base + "/search", data=gzip.compress(b'{"query": "zebraplankton holp"}'), headers={
                "Content-Type": "application/json", "Content-Encoding": "gzip"}) as resp:
            assert resp.status == 200 and (await resp.json())["results"][0]["document_path"] == "wiki/holp.md"

    with_server(store, hash_embedder, scenario)


def test_rate_limiter_forgets_refilled_buckets(monkeypatch: pytest.MonkeyPatch) -> None:
    import itertools

    from query.server import security
    from query.server.security import RateLimiter

    clock = itertools.count(0.0, 1.0)  # each call to monotonic() is one second later
    monkeypatch.setattr(security.time, "monotonic", lambda: next(clock))
    limiter = RateLimiter(per_minute=60, burst=1, max_identities=100)  # a bucket refills in 1 s
    for n in range(1000):
        assert limiter.take(f"addr:{n}") == 0.0
    assert len(limiter._buckets) <= 100
    limiter = RateLimiter(per_minute=1, burst=1, max_identities=10)  # refills in 60 s
    assert limiter.take("a") == 0.0 and limiter.take("a") > 0
    for n in range(20):
        limiter.take(f"b{n}")
    assert limiter.take("a") > 0  # a bucket still refilling is never forgotten early
