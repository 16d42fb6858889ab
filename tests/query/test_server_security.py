"""Keys, roles, CORS, security headers, rate limits, error envelope and the OpenAPI document."""

from __future__ import annotations

from pathlib import Path

import pytest

from query.config import ConfigError, ServerConfig, load_config
from query.server.routes import unlisted_routes
from tests.query.test_server import (
    ADMIN_KEY,
    ENVELOPE,
    SEARCH_KEY,
    SYNC_KEY,
    WEBHOOK_SECRET,
    store,  # noqa: F401 - fixture
    with_server,
)

KEYED = {"search_key": SEARCH_KEY, "admin_key": ADMIN_KEY, "sync_key": SYNC_KEY,
         "cors_origins": ["https://chat.example.org"]}


@pytest.mark.parametrize("values", [
    {"search_key": "short"},
    {"admin_key": "x" * 31},
    {"search_key": SEARCH_KEY, "admin_key": SEARCH_KEY},
    {"admin_key": ADMIN_KEY, "webhook": {"secret": ADMIN_KEY}},
])
def test_short_or_equal_keys_are_refused_at_start_up(values, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as info:
        ServerConfig.model_validate(values).check("127.0.0.1")
    for value in values.values():
        if isinstance(value, str):
            assert value not in str(info.value)


def test_no_keys_means_loopback_only_and_the_cli_refuses_other_hosts(tmp_path: Path) -> None:
    ServerConfig().check("127.0.0.1")
    with pytest.raises(ConfigError):
        ServerConfig().check("0.0.0.0")
    ServerConfig(search_key=SEARCH_KEY).check("0.0.0.0")

    from click.testing import CliRunner

    from artifacts.cli import main

    result = CliRunner().invoke(main, ["serve", "--store", str(tmp_path), "--host", "0.0.0.0"], env={
        "GITRAG_SEARCH_KEY": "", "GITRAG_ADMIN_KEY": "", "GITRAG_SYNC_KEY": ""})
    assert result.exit_code != 0 and "loopback" in result.output
    result = CliRunner().invoke(main, ["serve", "--store", str(tmp_path)], env={"GITRAG_SEARCH_KEY": "too-short"})
    assert result.exit_code != 0 and "32" in result.output and "too-short" not in result.output


def test_config_file_and_environment(tmp_path: Path) -> None:
    path = tmp_path / "server.toml"
    path.write_text(f'search_key = "{SEARCH_KEY}"\ncors_origins = ["https://a.example"]\n'
                    f'[webhook]\nrepository = "o/wiki"\nremote = "/srv/wiki.git"\n', encoding="utf-8")
    config = load_config(path, {"GITRAG_ADMIN_KEY": ADMIN_KEY, "GITRAG_WEBHOOK_SECRET": WEBHOOK_SECRET})
    assert config.search_key == SEARCH_KEY and config.admin_key == ADMIN_KEY
    assert config.webhook.secret == WEBHOOK_SECRET and config.webhook.repository == "o/wiki"
    config.check("0.0.0.0")
    path.write_text('search_key = 5\nunknown = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigError):
        load_config(path, {})


def test_health_says_when_there_is_no_authentication(store: Path, hash_embedder) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        health = await (await http.get(base + "/health")).json()
        assert health["auth"].startswith("none")
        async with http.get(base + "/bundles") as resp:  # open without keys on loopback
            assert resp.status == 200

    with_server(store, hash_embedder, scenario)


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/search", {"query": "holp"}),
    ("GET", "/bundles", None),
    ("POST", "/admin/reload", None),
    ("POST", "/sync", None),
])
def test_auth_missing_wrong_and_right_for_each_key(store: Path, hash_embedder, method, path,  # noqa: F811
                                                   body) -> None:  # type: ignore[no-untyped-def]
    allowed = {"/search": {SEARCH_KEY, ADMIN_KEY}, "/bundles": {SEARCH_KEY, ADMIN_KEY},
               "/admin/reload": {ADMIN_KEY}, "/sync": {SYNC_KEY, ADMIN_KEY}}[path]

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async def call(headers: dict[str, str]) -> tuple[int, dict, dict]:
            async with http.request(method, base + path, json=body, headers=headers) as resp:
                return resp.status, await resp.json(), dict(resp.headers)

        status, reply, headers = await call({})
        assert status == 401 and reply["reason"] == "unauthorized" and ENVELOPE <= set(reply)
        assert "Bearer" in headers["WWW-Authenticate"]
        status, reply, _ = await call({"X-API-Key": "z" * 40})
        assert status == 401 and "z" * 40 not in str(reply)
        status, reply, _ = await call({"Authorization": "Bearer " + SEARCH_KEY[:-1]})
        assert status == 401
        for key in (SEARCH_KEY, ADMIN_KEY, SYNC_KEY):
            for header in ({"X-API-Key": key}, {"Authorization": f"Bearer {key}"}):
                status, reply, _ = await call(header)
                if key in allowed:
                    # /sync without a configured remote is 503 sync_unavailable: past authentication.
                    assert status in (200, 503), (key, status, reply)
                    assert reply.get("reason") in (None, "sync_unavailable")
                else:
                    assert status == 403 and reply["reason"] == "forbidden"
                assert key not in str(reply)

    with_server(store, hash_embedder, scenario, config=ServerConfig(**KEYED))


def test_public_endpoints_need_no_key(store: Path, hash_embedder) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        health = await http.get(base + "/health")
        assert health.status == 200 and (await health.json())["auth"] == "api_keys"
        assert (await http.get(base + "/openapi.json")).status == 200

    with_server(store, hash_embedder, scenario, config=ServerConfig(**KEYED))


def test_cors_allow_list_and_security_headers(store: Path, hash_embedder) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        good = {"Origin": "https://chat.example.org", "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type"}
        async with http.options(base + "/search", headers=good) as resp:
            assert resp.status == 204
            assert resp.headers["Access-Control-Allow-Origin"] == "https://chat.example.org"
            assert "Authorization" in resp.headers["Access-Control-Allow-Headers"]
        async with http.options(base + "/search", headers={**good, "Origin": "https://evil.example"}) as resp:
            assert resp.status == 403 and "Access-Control-Allow-Origin" not in resp.headers
        headers = {"Origin": "https://chat.example.org", "X-API-Key": SEARCH_KEY}
        async with http.post(base + "/search", json={"query": "holp"}, headers=headers) as resp:
            assert resp.status == 200
            assert resp.headers["Access-Control-Allow-Origin"] == "https://chat.example.org"
        async with http.post(base + "/search", json={"query": "holp"},
                             headers={**headers, "Origin": "https://evil.example"}) as resp:
            assert "Access-Control-Allow-Origin" not in resp.headers
        for path in ("/health", "/nowhere"):
            async with http.get(base + path) as resp:
                assert resp.headers["X-Content-Type-Options"] == "nosniff"
                assert resp.headers["X-Frame-Options"] == "DENY"
                assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
                assert resp.headers["Cache-Control"] == "no-store"

    with_server(store, hash_embedder, scenario, config=ServerConfig(**KEYED))


def test_rate_limit_per_key(store: Path, hash_embedder) -> None:  # noqa: F811
    config = ServerConfig(**KEYED, rate_limit_per_minute=60, rate_limit_burst=3)

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        statuses = []
        for _ in range(5):
            async with http.get(base + "/bundles", headers={"X-API-Key": SEARCH_KEY}) as resp:
                statuses.append(resp.status)
                if resp.status == 429:
                    assert (await resp.json())["reason"] == "rate_limited" and int(resp.headers["Retry-After"]) >= 1
        assert statuses[:3] == [200, 200, 200] and statuses[3:] == [429, 429]
        async with http.get(base + "/bundles", headers={"X-API-Key": ADMIN_KEY}) as resp:
            assert resp.status == 200  # another key has its own bucket

    with_server(store, hash_embedder, scenario, config=config)


def test_body_limits_and_media_type(store: Path, hash_embedder) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.post(base + "/search", data=b'{"query": "' + b"q" * 5000 + b'"}',
                             headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 413 and (await resp.json())["reason"] == "payload_too_large"
        async with http.post(base + "/search", data=b'{"query": "holp"}', headers={"Content-Type": "text/plain"}) as r:
            assert r.status == 415 and (await r.json())["reason"] == "unsupported_media_type"

    with_server(store, hash_embedder, scenario, config=ServerConfig(max_body_bytes=2048))


def test_openapi_describes_every_route_with_models(store: Path, hash_embedder) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        doc = await (await http.get(base + "/openapi.json")).json()
        assert doc["openapi"].startswith("3.")
        routes = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
        registered = {(r.method, r.resource.canonical) for r in app.router.routes()
                      if r.method != "HEAD" and r.resource is not None}
        registered = {(m, p.replace("{job_id}", "{job_id}")) for m, p in registered}
        # The web page and the MCP transport are deliberately not OpenWebUI tools (server.unlisted_routes).
        unlisted = {(r.method, r.path) for r in unlisted_routes()}
        assert registered <= routes | {("GET", "/sync/jobs/{job_id}")} | unlisted
        assert not unlisted & routes
        assert "/graph" in doc["paths"] and "requestBody" in doc["paths"]["/graph"]["post"]
        search = doc["paths"]["/search"]["post"]
        assert search["operationId"] == "search"
        body = search["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        assert {"query", "limit", "at"} <= set(doc["components"]["schemas"][body]["properties"])
        ok = search["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        assert {"results", "index_version", "status"} <= set(doc["components"]["schemas"][ok]["properties"])
        assert "ErrorResponse" in doc["components"]["schemas"] and "401" in search["responses"]
        assert search["security"] and "ApiKey" in doc["components"]["securitySchemes"]
        ids = [op["operationId"] for ops in doc["paths"].values() for op in ops.values()]
        assert len(ids) == len(set(ids))
        assert all(op.get("summary") for ops in doc["paths"].values() for op in ops.values())

    with_server(store, hash_embedder, scenario, config=ServerConfig(**KEYED))
