"""Issue 27 on a real server on 127.0.0.1: unpublished pages need the admin key (3), recovery from a corrupt
``CURRENT`` (4), connection limits (5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.build import build_bundle
from query.config import ServerConfig
from tests.conftest import RepoBuilder
from tests.query.test_server import ADMIN_KEY, SEARCH_KEY, with_server

SECRET_WORD = "zyxquorpel"


@pytest.fixture
def private_store(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> Path:  # type: ignore[no-untyped-def]
    repo.write("wiki/open.md", "# Open\n\nA public page about mountains.\n")
    repo.write("wiki/secret.md", f"---\npublished: false\n---\n# Secret\n\nThe {SECRET_WORD} plan.\n")
    repo.commit("pages")
    build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    return tmp_path / "store"


# --- finding 3: published: false is access control -------------------------------------------------------

UNPUBLISHED_BODIES = [
    ("/search", {"query": SECRET_WORD, "published_only": False}),
    ("/document", {"path": "wiki/secret.md", "published_only": False}),
    ("/graph", {"question": "documents", "published_only": False}),
    ("/answer", {"question": f"What is the {SECRET_WORD} plan?", "published_only": False, "mode": "retrieve"}),
]


def test_a_search_key_may_not_read_unpublished_pages(private_store: Path, hash_embedder) -> None:
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        for path, body in UNPUBLISHED_BODIES:
            async with http.post(base + path, json=body, headers={"X-API-Key": SEARCH_KEY}) as resp:
                reply = await resp.json()
                assert (resp.status, reply["reason"]) == (403, "unpublished_forbidden"), (path, reply)
                assert SECRET_WORD not in str(reply)
        # the default (published_only true) with a search key: the page does not exist, like an unknown one
        for path in ("wiki/secret.md", "wiki/none.md"):
            async with http.post(base + "/document", json={"path": path}, headers={"X-API-Key": SEARCH_KEY}) as resp:
                assert (resp.status, (await resp.json())["reason"]) == (404, "document_not_found")
        async with http.post(base + "/search", json={"query": SECRET_WORD}, headers={"X-API-Key": SEARCH_KEY}) as resp:
            assert resp.status == 200 and SECRET_WORD not in await resp.text()
        # the admin key reads it
        body = {"path": "wiki/secret.md", "published_only": False}
        async with http.post(base + "/document", json=body, headers={"X-API-Key": ADMIN_KEY}) as resp:
            reply = await resp.json()
            assert resp.status == 200 and SECRET_WORD in reply["document"]["markdown"]
        async with http.post(base + "/search", json={"query": SECRET_WORD, "published_only": False},
                             headers={"X-API-Key": ADMIN_KEY}) as resp:
            assert resp.status == 200 and SECRET_WORD in await resp.text()

    with_server(private_store, hash_embedder, scenario,
                config=ServerConfig(search_key=SEARCH_KEY, admin_key=ADMIN_KEY))


def test_unpublished_public_in_the_toml_lets_a_search_key_read_them(private_store: Path, hash_embedder) -> None:
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        body = {"path": "wiki/secret.md", "published_only": False}
        async with http.post(base + "/document", json=body, headers={"X-API-Key": SEARCH_KEY}) as resp:
            assert resp.status == 200 and SECRET_WORD in (await resp.json())["document"]["markdown"]

    with_server(private_store, hash_embedder, scenario,
                config=ServerConfig(search_key=SEARCH_KEY, admin_key=ADMIN_KEY, unpublished_public=True))


def test_mcp_tools_never_read_unpublished_pages(private_store: Path, hash_embedder) -> None:
    import asyncio

    from query.mcp_server import call_tool
    from query.server import HOLDER, OPTIONS, create_app

    async def scenario() -> None:
        app = create_app(private_store, embedder=hash_embedder, poll_interval=5)
        holder = app[HOLDER]
        holder.load_current()
        try:
            reply = await call_tool(holder, app[OPTIONS], "search", {"query": SECRET_WORD, "published_only": False})
            assert reply["reason"] == "unpublished_forbidden" and SECRET_WORD not in str(reply)
        finally:
            holder.close()

    asyncio.run(scenario())


# --- finding 4: recovery from a CURRENT that fails verification ------------------------------------------


def _corrupt(bundle_dir: Path) -> None:
    import os
    import stat

    target = bundle_dir / "chunks.jsonl"
    os.chmod(bundle_dir, stat.S_IRWXU)
    os.chmod(target, stat.S_IRUSR | stat.S_IWUSR)
    with open(target, "a", encoding="utf-8") as handle:
        handle.write("\n")


@pytest.fixture
def broken_current(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """A store of three bundles: CURRENT (the newest) fails verification, the one before verifies."""
    from artifacts.store import Store

    store = tmp_path / "store"
    ids = []
    for n in range(3):
        repo.write(f"wiki/p{n}.md", f"# Page {n}\n\nText of page {n} about rivers.\n")
        repo.commit(f"page {n}")
        ids.append(build_bundle(repo.path, store, embedder=hash_embedder).bundle_id)
    assert Store(store).current_id() == ids[2]
    _corrupt(store / "bundles" / ids[2])
    return {"store": str(store), "oldest": ids[0], "good": ids[1], "broken": ids[2]}


def test_fallback_verified_serves_the_newest_older_bundle_and_health_says_why(broken_current: dict[str, str],
                                                                             hash_embedder) -> None:
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(base + "/health") as resp:
            health = await resp.json()
        assert resp.status == 200 and health["ready"] is True and health["serving"] == "fallback"
        assert health["bundle"]["bundle_id"] == broken_current["good"]
        assert health["fallback"]["current"] == broken_current["broken"]
        assert "chunks.jsonl: sha256/size mismatch" in health["fallback"]["reason"]
        assert "repair-current" in health["message"]
        async with http.post(base + "/search", json={"query": "rivers"}) as resp:
            assert resp.status == 200 and (await resp.json())["index_version"]["bundle_id"] == broken_current["good"]

    with_server(Path(broken_current["store"]), hash_embedder, scenario, config=ServerConfig(fallback_verified=True))


def test_without_fallback_a_broken_current_is_503(broken_current: dict[str, str], hash_embedder) -> None:
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(base + "/health") as resp:
            health = await resp.json()
        assert resp.status == 503 and health["serving"] is None and health["failed_bundle"] == broken_current["broken"]

    with_server(Path(broken_current["store"]), hash_embedder, scenario)


def test_verify_repair_current_moves_current_to_the_newest_verified_bundle(broken_current: dict[str, str]) -> None:
    import json

    from click.testing import CliRunner

    from artifacts.cli import main
    from artifacts.store import Store

    runner = CliRunner()
    out = runner.invoke(main, ["verify", "--store", broken_current["store"]])
    assert out.exit_code == 1
    out = runner.invoke(main, ["verify", "--store", broken_current["store"], "--repair-current", "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["repaired"] is True and report["was"] == broken_current["broken"]
    assert report["current"] == broken_current["good"] == Store(broken_current["store"]).current_id()
    assert any("chunks.jsonl" in p for p in report["problems"])
    out = runner.invoke(main, ["verify", "--store", broken_current["store"], "--repair-current"])
    assert out.exit_code == 0 and "nothing to repair" in out.output


def test_serve_cli_has_the_fallback_flag() -> None:
    from click.testing import CliRunner

    from query.cli import serve_command

    out = CliRunner().invoke(serve_command, ["--help"])
    assert "--fallback-verified" in out.output
