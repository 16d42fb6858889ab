"""Webhooks (GitHub, Gitea): HMAC, event/repository/branch filters, redelivery, size limit; /sync and job status."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import subprocess
from pathlib import Path

import pytest

from indexer.worker import run_worker
from query.config import ServerConfig, WebhookConfig
from tests.conftest import RepoBuilder
from tests.query.test_server import ADMIN_KEY, ENVELOPE, SEARCH_KEY, SYNC_KEY, WEBHOOK_SECRET, with_server
from tests.query.test_server import store as store  # noqa: F401 - fixture


@pytest.fixture
def upstream(repo: RepoBuilder, store: Path, tmp_path: Path) -> Path:  # noqa: F811
    bare = tmp_path / "upstream.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.path), str(bare)], check=True)
    return bare


def _config(upstream: Path, tmp_path: Path, **extra) -> ServerConfig:  # type: ignore[no-untyped-def]
    hook = WebhookConfig(secret=WEBHOOK_SECRET, repository="owner/wiki", branch="main", remote=str(upstream),
                         mirror=str(tmp_path / "mirror.git"), max_body_bytes=4096)
    return ServerConfig(search_key=SEARCH_KEY, admin_key=ADMIN_KEY, sync_key=SYNC_KEY, webhook=hook,
                        spawn_worker=False, **extra)


def _payload(ref: str = "refs/heads/main", repo: str = "owner/wiki", after: str = "a" * 40, **extra) -> bytes:
    return json.dumps({"ref": ref, "before": "0" * 40, "after": after, "repository": {"full_name": repo},
                       **extra}).encode()


def _sign(body: bytes, secret: str = WEBHOOK_SECRET) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _github(body: bytes, delivery: str = "d-1", event: str = "push", signature: str | None = "auto") -> dict:
    headers = {"Content-Type": "application/json", "X-GitHub-Event": event, "X-GitHub-Delivery": delivery}
    if signature == "auto":
        headers["X-Hub-Signature-256"] = "sha256=" + _sign(body)
    elif signature is not None:
        headers["X-Hub-Signature-256"] = signature
    return headers


def test_github_webhook_checks_and_filters(store: Path, upstream: Path, tmp_path: Path,  # noqa: F811
                                           hash_embedder) -> None:  # type: ignore[no-untyped-def]
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        url = base + "/webhook/github"

        async def post(body: bytes, headers: dict) -> tuple[int, dict]:
            async with http.post(url, data=body, headers=headers) as resp:
                return resp.status, await resp.json()

        body = _payload()
        for headers in (_github(body, signature=None), _github(body, signature="sha256=" + "0" * 64),
                        _github(body, signature=_sign(body, "x" * 40)), _github(body, signature="garbage")):
            status, reply = await post(body, headers)
            assert status == 401 and reply["reason"] == "invalid_signature" and ENVELOPE <= set(reply)
            assert WEBHOOK_SECRET not in json.dumps(reply)
        # A signature over another body does not carry over.
        status, _ = await post(body + b" ", _github(body))
        assert status == 401

        status, reply = await post(body, _github(body, event="ping"))
        assert status == 200 and reply["accepted"] is False and reply["ignored"] == "event"
        for other, why in ((_payload(repo="evil/wiki"), "repository"), (_payload(ref="refs/heads/dev"), "branch"),
                           (_payload(after="0" * 40, deleted=True), "deletion")):
            status, reply = await post(other, _github(other))
            assert status == 200 and reply["ignored"] == why

        big = _payload(padding="x" * 5000)
        status, reply = await post(big, _github(big))
        assert status == 413 and reply["reason"] == "payload_too_large"

        status, reply = await post(body, _github(body, delivery="d-42"))
        assert status == 202 and reply["status_url"] == f"/sync/jobs/{reply['job_id']}"
        again_status, again = await post(body, _github(body, delivery="d-42"))
        assert again_status == 202 and again["duplicate"] is True and again["job_id"] == reply["job_id"]

        async with http.get(base + reply["status_url"]) as resp:
            assert resp.status == 401  # job status needs the sync (or admin) key
        async with http.get(base + reply["status_url"], headers={"X-API-Key": SYNC_KEY}) as resp:
            job = (await resp.json())["job"]
            assert job["status"] == "queued" and "repo" not in job and "remote" not in job
        for path, reason in (("/sync/jobs/999", "job_not_found"), ("/sync/jobs/abc", "not_found")):
            async with http.get(base + path, headers={"X-API-Key": SYNC_KEY}) as resp:
                assert resp.status == 404 and (await resp.json())["reason"] == reason

    with_server(store, hash_embedder, scenario, config=_config(upstream, tmp_path))


def test_gitea_webhook_then_worker_builds_from_the_mirror(store: Path, upstream: Path, repo: RepoBuilder,  # noqa: F811
                                                          tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    repo.write("wiki/remote.md", "# Vzdialená\n\nStránka z webhooku o sopkách.\n")
    head = repo.commit("remote change")
    subprocess.run(["git", "push", "-q", str(upstream), "main"], cwd=repo.path, check=True)

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        body = _payload(after=head)
        headers = {"Content-Type": "application/json", "X-Gitea-Event": "push", "X-Gitea-Delivery": "g-1",
                   "X-Gitea-Signature": _sign(body)}
        async with http.post(base + "/webhook/gitea", data=body, headers=headers) as resp:
            assert resp.status == 202
            job_id = (await resp.json())["job_id"]
        await asyncio.to_thread(run_worker, store, embedder=hash_embedder, idle_exit=0.0, poll=0.01)
        async with http.get(f"{base}/sync/jobs/{job_id}", headers={"X-API-Key": ADMIN_KEY}) as resp:
            job = (await resp.json())["job"]
        assert job["status"] == "succeeded" and job["commit"] == head and job["bundle_id"].startswith(head)
        await http.post(base + "/admin/reload", headers={"X-API-Key": ADMIN_KEY})
        async with http.post(base + "/search", json={"query": "sopky"}, headers={"X-API-Key": SEARCH_KEY}) as resp:
            found = await resp.json()
        assert found["index_version"]["commit"] == head and found["results"][0]["document_path"] == "wiki/remote.md"
        # POST /sync does the same on demand (nothing new: coalesces into one queued job).
        async with http.post(base + "/sync", headers={"X-API-Key": SYNC_KEY}) as resp:
            assert resp.status == 202 and (await resp.json())["status_url"].startswith("/sync/jobs/")

    with_server(store, hash_embedder, scenario, config=_config(upstream, tmp_path))


def test_webhooks_are_off_without_configuration(store: Path, hash_embedder) -> None:  # noqa: F811
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        body = _payload()
        async with http.post(base + "/webhook/github", data=body, headers=_github(body)) as resp:
            assert resp.status == 503 and (await resp.json())["reason"] == "webhook_unavailable"

    with_server(store, hash_embedder, scenario)


def test_thirty_syncs_start_one_worker_and_replays_make_one_job(store: Path, upstream: Path,  # noqa: F811
                                                                tmp_path: Path, hash_embedder,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from artifacts.jobs import WORKER_LOG, JobQueue
    from tests.test_worker import _wait_for_workers

    monkeypatch.setenv("GITRAG_WORKER_IDLE_EXIT", "0.5")
    monkeypatch.setenv("GITRAG_EMBEDDER", "hash-64")
    config = _config(upstream, tmp_path).model_copy(update={"spawn_worker": True})

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async def sync() -> int:
            async with http.post(base + "/sync", headers={"X-API-Key": SYNC_KEY}) as resp:
                return resp.status

        assert await asyncio.gather(*(sync() for _ in range(30))) == [202] * 30
        await asyncio.to_thread(_wait_for_workers, store)
        log = (store / WORKER_LOG).read_text(encoding="utf-8")
        assert log.count("gitrag worker: started") == 1 and log.count("job(s) processed") == 1, log

        # A signed push replayed 20 times with fresh (unsigned) delivery ids is one job.
        body = _payload(after="c" * 40)
        ids = set()
        for n in range(20):
            async with http.post(base + "/webhook/github", data=body, headers=_github(body, delivery=f"r-{n}")) as resp:
                reply = await resp.json()
            assert resp.status == 202 and reply["duplicate"] is (n > 0)
            ids.add(reply["job_id"])
        assert len(ids) == 1
        await asyncio.to_thread(_wait_for_workers, store)
        jobs = JobQueue(store).list_jobs()
        assert len(jobs) == 2 and all(j.status == "succeeded" for j in jobs), [j.error for j in jobs]

    with_server(store, hash_embedder, scenario, config=config)
