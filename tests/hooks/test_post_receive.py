"""The post-receive hook: parsing, install-hook, and a real `git push` to a bare repository end to end."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from artifacts.cli import main
from artifacts.jobs import JobQueue
from hooks.post_receive import main as hook_main
from hooks.post_receive import parse_updates
from tests.conftest import RepoBuilder, git

ZERO = "0" * 40
GITRAG = str(Path(sys.executable).with_name("gitrag"))


def test_parse_updates_keeps_only_the_branch_and_ignores_deletions() -> None:
    lines = io.StringIO(f"{'a' * 40} {'b' * 40} refs/heads/main\n{'c' * 40} {'d' * 40} refs/heads/dev\n"
                        f"{'b' * 40} {ZERO} refs/heads/main\n{ZERO} {'e' * 40} refs/tags/v1\ngarbage\n")
    assert parse_updates(lines, "main") == [("a" * 40, "b" * 40)]


def test_hook_enqueues_and_never_fails_the_push(tmp_path: Path) -> None:
    out = io.StringIO()
    stdin = io.StringIO(f"{ZERO} {'b' * 40} refs/heads/main\n")
    args = ["--repo", str(tmp_path), "--store", str(tmp_path / "store"), "--worker-arg=--idle-exit=0"]
    assert hook_main(args, stdin=stdin, stdout=out) == 0
    jobs = JobQueue(tmp_path / "store").list_jobs()
    assert len(jobs) == 1 and jobs[0].commit == "b" * 40 and "queued as job 1" in out.getvalue()
    # A store that cannot be written is reported, not raised.
    (tmp_path / "file").write_text("x")
    out = io.StringIO()
    assert hook_main(["--repo", str(tmp_path), "--store", str(tmp_path / "file" / "store")],
                     stdin=io.StringIO(f"{ZERO} {'b' * 40} refs/heads/main\n"), stdout=out) == 0
    assert "could not queue" in out.getvalue()


def test_install_hook_refuses_non_bare_and_foreign_hooks(repo: RepoBuilder, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["install-hook", "--repo", str(repo.path), "--store", str(tmp_path / "s")])
    assert result.exit_code != 0 and "bare" in result.output
    bare = tmp_path / "b.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    (bare / "hooks" / "post-receive").write_text("#!/bin/sh\necho mine\n")
    result = runner.invoke(main, ["install-hook", "--repo", str(bare), "--store", str(tmp_path / "s")])
    assert result.exit_code != 0 and "--force" in result.output
    result = runner.invoke(main, ["install-hook", "--repo", str(bare), "--store", str(tmp_path / "s"), "--force",
                                  "--branch", "wiki"])
    assert result.exit_code == 0
    hook = (bare / "hooks" / "post-receive")
    assert os.access(hook, os.X_OK) and "--branch wiki" in hook.read_text()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
    except (urllib.error.URLError, ConnectionError):
        return 0, {}


def _wait_for(predicate, timeout: float = 180.0, step: float = 0.1):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("timed out")


@pytest.mark.e2e
def test_push_builds_and_the_server_serves_the_new_commit(repo: RepoBuilder, tmp_path: Path) -> None:
    env = {**os.environ, "GITRAG_EMBEDDER": "hash-64", "GITRAG_WORKER_IDLE_EXIT": "3"}
    for key in ("GITRAG_SEARCH_KEY", "GITRAG_ADMIN_KEY", "GITRAG_SYNC_KEY", "GITRAG_WEBHOOK_SECRET"):
        env.pop(key, None)
    bare = tmp_path / "wiki.git"
    store = tmp_path / "store"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    installed = subprocess.run([GITRAG, "install-hook", "--repo", str(bare), "--store", str(store)],
                               capture_output=True, text=True, env=env, check=True)
    assert "installed" in installed.stdout

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    # One process: this test follows one server's swaps request by request (with the default of one worker
    # per core, each worker swaps at its own poll; tests/query/test_server_workers.py covers that).
    server = subprocess.Popen([GITRAG, "serve", "--store", str(store), "--port", str(port), "--poll-interval", "0.2",
                               "--workers", "1"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: _get(base + "/health")[0] in (200, 503), timeout=90)

        def push(message: str) -> tuple[str, float, str]:
            repo.write("wiki/page.md", f"# Stránka\n\n{message}\n")
            sha = repo.commit(message)
            started = time.monotonic()
            done = subprocess.run(["git", "push", "-q", str(bare), "main"], cwd=repo.path, env=env,
                                  capture_output=True, text=True, timeout=30)
            assert done.returncode == 0, done.stderr
            return sha, time.monotonic() - started, done.stderr

        c1, took1, said = push("Prvá verzia o planktóne.")
        assert "gitrag: build of" in said
        assert took1 < 5, f"git push took {took1:.2f} s"  # the hook must not wait for the build
        _wait_for(lambda: _get(base + "/health")[1].get("bundle", {}) and
                  _get(base + "/health")[1]["bundle"]["commit"] == c1)
        c2, took2, _ = push("Druhá verzia o kryptografii.")
        assert took2 < 5, f"git push took {took2:.2f} s"
        _wait_for(lambda: (_get(base + "/health")[1].get("bundle") or {}).get("commit") == c2)

        status, body = _get(base + "/search", {"query": "kryptografia"})
        assert status == 200 and body["index_version"]["commit"] == c2
        status, body = _get(base + "/search", {"query": "planktón", "at": c1[:8]})
        assert status == 200 and body["index_version"]["commit"] == c1
        assert "Prvá verzia" in body["results"][0]["text"]
        status, body = _get(base + "/search", {"query": "planktón", "at": "main"})
        assert body["index_version"]["commit"] == c2
        jobs = JobQueue(store).list_jobs()
        assert {j.status for j in jobs} == {"succeeded"} and {j.commit for j in jobs} == {c1, c2}
        print(f"\ngit push wall time: {took1:.3f} s, {took2:.3f} s")
    finally:
        server.terminate()
        server.wait(timeout=10)
    _wait_for(lambda: not _worker_alive(store), timeout=15)


def _worker_alive(store: Path) -> bool:
    from artifacts.jobs import worker_running

    return worker_running(store)


def test_install_hook_uses_the_default_branch_and_refuses_an_unknown_one(repo: RepoBuilder, tmp_path: Path) -> None:
    repo.write("a.md", "# A\n")
    repo.commit("a")
    bare = tmp_path / "wiki.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo.path), str(bare))
    git(bare, "branch", "-m", "main", "master")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/master")
    runner = CliRunner()
    result = runner.invoke(main, ["install-hook", "--repo", str(bare), "--store", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert "branch 'master'" in result.output
    assert "--branch master" in (bare / "hooks" / "post-receive").read_text()
    # A branch the repository does not have is refused, naming the ones it has.
    result = runner.invoke(main, ["install-hook", "--repo", str(bare), "--store", str(tmp_path / "s"),
                                  "--branch", "main"])
    assert result.exit_code != 0 and "'main' does not exist" in result.output and "master" in result.output
    assert "--branch master" in (bare / "hooks" / "post-receive").read_text()  # unchanged
    # In an empty repository the branch cannot exist yet: a warning, not a refusal.
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "trunk", str(empty))
    result = runner.invoke(main, ["install-hook", "--repo", str(empty), "--store", str(tmp_path / "s2")])
    assert result.exit_code == 0 and "does not exist yet" in result.output
    assert "--branch trunk" in (empty / "hooks" / "post-receive").read_text()


def test_a_push_to_another_branch_is_recorded_as_ignored_with_the_reason(repo: RepoBuilder, tmp_path: Path) -> None:
    env = {**os.environ, "GITRAG_EMBEDDER": "hash-64"}
    repo.write("a.md", "# A\n")
    repo.commit("a")
    bare = tmp_path / "wiki.git"
    store = tmp_path / "store"
    git(tmp_path, "clone", "-q", "--bare", str(repo.path), str(bare))
    installed = subprocess.run([GITRAG, "install-hook", "--repo", str(bare), "--store", str(store)],
                               capture_output=True, text=True, env=env, check=True)
    assert "branch 'main'" in installed.stdout
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.write("b.md", "# B\n")
    sha = repo.commit("b")
    done = subprocess.run(["git", "push", "-q", str(bare), "feature"], cwd=repo.path, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "push to refs/heads/feature ignored: this hook indexes branch main" in done.stderr
    jobs = JobQueue(store).list_jobs()
    assert len(jobs) == 1 and jobs[0].status == "ignored" and jobs[0].commit == sha
    listed = CliRunner().invoke(main, ["jobs", "--store", str(store)])
    assert "ignored" in listed.output and "reason: push to refs/heads/feature ignored" in listed.output
