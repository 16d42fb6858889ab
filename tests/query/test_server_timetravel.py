"""Time travel (`at`), the bundle LRU, /bundles, /admin/use, /admin/reload and a bundle that fails verification."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from artifacts.store import Store
from indexer.build import build_bundle
from query.config import ServerConfig
from tests.conftest import RepoBuilder, git
from tests.query.test_server import ENVELOPE, with_server


@pytest.fixture
def history(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Three commits with bundles: c1 (tag v1, branch old), c2, c3 (main); store at tmp_path/store."""
    shas = {}
    for n, word in ((1, "alfa"), (2, "beta"), (3, "gama")):
        repo.write(f"wiki/p{n}.md", f"# Strana {n}\n\nSlovo {word}ovanie a spoločný text.\n")
        shas[f"c{n}"] = repo.commit(f"commit {n}")
        build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder, branch="main")
        if n == 1:
            git(repo.path, "tag", "v1")
            git(repo.path, "branch", "old")
    shas["store"] = str(tmp_path / "store")
    return shas


def _docs(body: dict) -> set[str]:
    return {r["document_path"] for r in body["results"]}


def test_at_selects_the_bundle_of_a_commit_branch_or_tag(history: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async def search(at: str | None) -> dict:
            body = {"query": "spoločný text", "limit": 10} | ({"at": at} if at is not None else {})
            async with http.post(base + "/search", json=body) as resp:
                assert resp.status == 200, await resp.text()
                return await resp.json()

        latest = await search(None)
        assert latest["index_version"]["commit"] == history["c3"] and len(_docs(latest)) == 3
        for at in (history["c1"], history["c1"][:7], "v1", "old", "refs/tags/v1"):
            body = await search(at)
            assert body["index_version"]["commit"] == history["c1"], at
            assert _docs(body) == {"wiki/p1.md"}
        assert (await search("main"))["index_version"]["commit"] == history["c3"]
        # The same revision syntax as `gitrag use`: REV~N, REV^, HEAD, resolved with pygit2.
        for at, commit in (("main~2", "c1"), ("main^", "c2"), ("HEAD~1", "c2"), ("main^^", "c1"),
                           ("v1~0", "c1"), ("refs/heads/main~1", "c2")):
            assert (await search(at))["index_version"]["commit"] == history[commit], at
        async with http.post(base + "/graph", json={"question": "Kto napísal stranu 1?", "at": "v1"}) as resp:
            assert resp.status == 200 and (await resp.json())["index_version"]["commit"] == history["c1"]
        assert (await search(history["c2"][:10]))["index_version"]["commit"] == history["c2"]
        health = await (await http.get(base + "/health")).json()
        assert health["bundle"]["commit"] == history["c3"]  # time travel never changes the served bundle
        assert len(health["history_cache"]["bundles"]) == 2

    with_server(Path(history["store"]), hash_embedder, scenario)


BAD_AT = [
    ("../../etc/passwd", 400, "invalid_at"),
    ("/etc/passwd", 400, "invalid_at"),
    ("main\n", 400, "invalid_at"),  # full match: a trailing newline is not allowed
    ("v1\n", 400, "invalid_at"),
    ("main:wiki/p1.md", 400, "invalid_at"),  # a blob path, not a commit
    ("main..v1", 400, "invalid_at"),
    ("main~x", 400, "invalid_at"),
    ("HEAD@{1}", 400, "invalid_at"),
    ("a" * 300, 400, "invalid_at"),
    ("-rf", 400, "invalid_at"),
    ("..", 400, "invalid_at"),
    ("bundles/x", 404, "unknown_revision"),
    ("no-such-branch", 404, "unknown_revision"),
    ("no-such-branch~1", 404, "unknown_revision"),
    ("main~50", 404, "unknown_revision"),  # before the root commit
    ("0000000", 404, "unknown_revision"),
    ("deadbeefdeadbeefdeadbeefdeadbeefdeadbeef", 404, "unknown_revision"),
]


def test_bad_or_unknown_at_is_an_error_without_echo(history: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        for at, status, reason in BAD_AT:
            async with http.post(base + "/search", json={"query": "text", "at": at}) as resp:
                body = await resp.json()
                text = await resp.text()
            assert resp.status == status and body["reason"] == reason and ENVELOPE <= set(body), at
            assert body["index_version"] is None
            assert at not in text and "passwd" not in text and history["store"] not in text

    with_server(Path(history["store"]), hash_embedder, scenario)


def test_at_of_a_commit_without_a_bundle_is_404(history: dict[str, str], repo: RepoBuilder,  # type: ignore[no-untyped-def]
                                                hash_embedder) -> None:
    repo.write("wiki/p4.md", "# Strana 4\n")
    c4 = repo.commit("not built")
    git(repo.path, "tag", "unbuilt")

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        for at in (c4, c4[:8], "unbuilt"):
            async with http.post(base + "/search", json={"query": "text", "at": at}) as resp:
                body = await resp.json()
                assert resp.status == 404 and body["reason"] == "bundle_not_found"
                # the message names the commit the revision resolved to, so a user sees why nothing matched
                assert f"commit {c4[:12]}" in body["message"] and history["store"] not in body["message"]

    with_server(Path(history["store"]), hash_embedder, scenario)


def test_lru_is_bounded_by_count(history: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        for at in ("v1", history["c2"], "v1", history["c2"]):
            async with http.post(base + "/search", json={"query": "text", "at": at}) as resp:
                assert resp.status == 200
        health = await (await http.get(base + "/health")).json()
        assert len(health["history_cache"]["bundles"]) == 1
        assert health["history_cache"]["bundles"][0].startswith(history["c2"])
        from query.server.state import HOLDER

        assert app[HOLDER].leases.active == 0

    with_server(Path(history["store"]), hash_embedder, scenario, config=ServerConfig(cache_bundles=1))


def test_bundles_admin_use_and_reload(history: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    store = Store(history["store"])

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        listed = await (await http.get(base + "/bundles")).json()
        assert [b["commit"] for b in listed["bundles"]][:1] and len(listed["bundles"]) == 3
        assert sum(b["current"] for b in listed["bundles"]) == 1
        assert "repo" not in str(listed) and history["store"] not in str(listed)
        async with http.post(base + "/admin/use", json={"bundle": "v1"}) as resp:
            body = await resp.json()
            assert resp.status == 200 and body["served"].startswith(history["c1"])
        assert store.current_id().startswith(history["c1"])
        health = await (await http.get(base + "/health")).json()
        assert health["bundle"]["commit"] == history["c1"]
        async with http.post(base + "/admin/use", json={"bundle": "../x"}) as resp:
            assert resp.status == 400
        async with http.post(base + "/admin/use", json={"bundle": "nope"}) as resp:
            assert resp.status == 404 and (await resp.json())["reason"] == "unknown_revision"
        async with http.post(base + "/admin/use", json={"bundle": "main~1"}) as resp:
            assert resp.status == 200 and (await resp.json())["served"].startswith(history["c2"])
        # An outside change to CURRENT, picked up at once by /admin/reload (polling is slow here).
        store.set_current(next(b.bundle_id for b in store.list_bundles() if b.manifest.commit == history["c3"]))
        body = await (await http.post(base + "/admin/reload")).json()
        assert body["swapped"] is True and body["served"].startswith(history["c3"])

    with_server(Path(history["store"]), hash_embedder, scenario, poll=60)


def _corrupt(bundle_dir: Path) -> None:
    target = bundle_dir / "chunks.jsonl"
    os.chmod(bundle_dir, stat.S_IRWXU)
    os.chmod(target, stat.S_IRUSR | stat.S_IWUSR)
    with open(target, "a", encoding="utf-8") as handle:
        handle.write("\n")


def test_a_bundle_failing_verification_keeps_the_old_one_serving(history: dict[str, str], repo: RepoBuilder,  # type: ignore[no-untyped-def]
                                                                 hash_embedder) -> None:
    store = Store(history["store"])
    served = store.current_id()
    repo.write("wiki/p5.md", "# Strana 5\n\nPoškodený zväzok.\n")
    repo.commit("will be corrupted")
    bad = build_bundle(repo.path, store.root, embedder=hash_embedder)
    store.set_current(served)  # the server starts on the good bundle
    _corrupt(bad.bundle_path)

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        store.set_current(bad.bundle_id)
        body = await (await http.post(base + "/admin/reload")).json()
        assert body["swapped"] is False and body["served"] == served
        health = await (await http.get(base + "/health")).json()
        assert health["ready"] is True and health["bundle"]["bundle_id"] == served
        assert health["failed_bundle"] == bad.bundle_id and "BundleIntegrityError" in health["last_reload_error"]
        assert "chunks.jsonl: sha256/size mismatch" in health["last_reload_error"]  # names the file, as verify does
        assert history["store"] not in health["last_reload_error"]
        async with http.post(base + "/search", json={"query": "text"}) as resp:
            assert resp.status == 200 and (await resp.json())["index_version"]["bundle_id"] == served

    with_server(store.root, hash_embedder, scenario, poll=0.05)


def test_admin_use_verifies_before_it_writes_current(history: dict[str, str], repo: RepoBuilder,  # type: ignore[no-untyped-def]
                                                     hash_embedder) -> None:
    """POST /admin/use is `gitrag use`: a bundle failing verification is refused and CURRENT stays."""
    store = Store(history["store"])
    served = store.current_id()
    repo.write("wiki/p6.md", "# Strana 6\n\nPoškodený zväzok.\n")
    repo.commit("will be corrupted")
    git(repo.path, "tag", "broken")
    bad = build_bundle(repo.path, store.root, embedder=hash_embedder)
    store.set_current(served)
    _corrupt(bad.bundle_path)

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        for ref in (bad.bundle_id, "broken"):
            async with http.post(base + "/admin/use", json={"bundle": ref}) as resp:
                body = await resp.json()
            assert resp.status == 422 and body["reason"] == "bundle_corrupt" and ENVELOPE <= set(body)
            assert {"field": "bundle", "problem": "chunks.jsonl: sha256/size mismatch"} in body["errors"]
            assert history["store"] not in json.dumps(body)
            assert store.current_id() == served  # CURRENT never pointed at the corrupted bundle
        health = await (await http.get(base + "/health")).json()
        assert health["bundle"]["bundle_id"] == served and health["swaps"] == 1

    with_server(store.root, hash_embedder, scenario, poll=60)
    # The CLI refuses it the same way (one shared function).
    from click.testing import CliRunner

    from artifacts.cli import main

    result = CliRunner().invoke(main, ["use", "broken", "--store", str(store.root)])
    assert result.exit_code == 1 and "chunks.jsonl: sha256/size mismatch" in result.output
    assert store.current_id() == served


def test_at_of_a_bundle_failing_verification_names_the_file(history: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    store = Store(history["store"])
    old = next(b for b in store.list_bundles() if b.manifest.commit == history["c1"])
    _corrupt(old.path)

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.post(base + "/search", json={"query": "text", "at": "v1"}) as resp:
            body = await resp.json()
        assert resp.status == 422 and body["reason"] == "bundle_corrupt"
        assert body["errors"] == [{"field": "bundle", "problem": "chunks.jsonl: sha256/size mismatch"}]

    with_server(store.root, hash_embedder, scenario)


def test_document_returns_the_cited_page_of_the_requested_commit(history: dict[str, str], repo: RepoBuilder,  # type: ignore[no-untyped-def]
                                                                  hash_embedder) -> None:
    repo.write("wiki/p1.md", "# Strana 1\n\nNový text strany jedna.\n")
    repo.write("wiki/tajne.md", "---\npublished: false\n---\n# Tajné\n\nInterné.\n")
    history["c4"] = repo.commit("commit 4")
    build_bundle(repo.path, Path(history["store"]), embedder=hash_embedder, branch="main")

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async def document(body: dict) -> tuple[int, dict]:
            async with http.post(base + "/document", json=body) as resp:
                return resp.status, await resp.json()

        status, now = await document({"path": "wiki/p1.md"})
        assert status == 200 and ENVELOPE <= set(now), now
        assert now["document"]["markdown"] == "# Strana 1\n\nNový text strany jedna.\n"
        assert now["document"]["commit"] == history["c4"] and now["sources"][0]["document_path"] == "wiki/p1.md"
        # the same page at an older commit: that commit's text, as a citation of it showed
        status, old = await document({"path": "wiki/p1.md", "at": "v1"})
        assert status == 200 and old["document"]["markdown"].startswith("# Strana 1\n\nSlovo alfaovanie")
        assert old["index_version"]["commit"] == history["c1"]
        # unknown paths and unpublished pages are 404 document_not_found, the path never echoed
        for body in ({"path": "wiki/none.md"}, {"path": "wiki/tajne.md"}, {"path": "wiki/p3.md", "at": "v1"}):
            status, err = await document(body)
            assert (status, err["reason"]) == (404, "document_not_found") and body["path"] not in json.dumps(err)
        status, hidden = await document({"path": "wiki/tajne.md", "published_only": False})
        assert status == 200 and hidden["document"]["published"] is False
        for bad in ({}, {"path": ""}, {"path": "x" * 1001}, {"path": "a.md", "extra": 1}, {"path": 5},
                    {"path": "a.md", "published_only": "false"}):
            status, err = await document(bad)
            assert status == 400 and err["reason"] in ("invalid_query", "invalid_request"), bad

    with_server(Path(history["store"]), hash_embedder, scenario)
