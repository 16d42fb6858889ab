"""Publishing bundles to a real S3 server (moto's, on 127.0.0.1): content addressing, CURRENT last, kills, rollback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from artifacts.cli import main
from artifacts.errors import BundleIntegrityError
from artifacts.remote import RemoteStore, download_bundle, publish_store
from artifacts.remote_cli import publish_command
from artifacts.store import Store, verify_bundle
from indexer.build import build_bundle
from tests.conftest import TEST_AWS_KEY_ID, TEST_AWS_SECRET, RepoBuilder

ROOT = Path(__file__).resolve().parents[2]


def _build(repo: RepoBuilder, store: Path, embedder, files: dict[str, str], message: str):  # type: ignore[no-untyped-def]
    for rel, text in files.items():
        repo.write(rel, text)
    commit = repo.commit(message)
    return commit, build_bundle(repo.path, store, embedder=embedder)


def _pages(n: int, word: str) -> dict[str, str]:
    return {f"wiki/p{i}.md": f"# Strana {i}\n\nText o {word} a strane {i}, s dlhším odsekom na indexovanie.\n"
            for i in range(n)}


def _object_keys(remote: RemoteStore) -> set[str]:
    pages = remote.client.get_paginator("list_objects_v2").paginate(Bucket=remote.bucket, Prefix=remote.prefix)
    return {o["Key"][len(remote.prefix):] for page in pages for o in page.get("Contents", [])}


def test_publish_uploads_blobs_then_manifest_then_current_and_reuses_unchanged_files(  # type: ignore[no-untyped-def]
        repo: RepoBuilder, tmp_path: Path, hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    _c1, first = _build(repo, store.root, hash_embedder, _pages(12, "jablkách"), "first")
    remote = RemoteStore(url, endpoint_url=endpoint)
    assert remote.read_current() is None

    report = publish_store(store, remote)
    total = sum(f.size for f in first.manifest.files)
    assert report.bundles == [first.bundle_id] and report.current_moved
    assert remote.read_current().bundle_id == first.bundle_id
    distinct = {f.sha256 for f in first.manifest.files}
    assert report.files_uploaded == len(distinct) and 0 < report.bytes_uploaded <= total
    keys = _object_keys(remote)
    assert {f"blobs/sha256/{sha}" for sha in distinct} <= keys
    assert f"bundles/{first.bundle_id}/manifest.json" in keys and "CURRENT" in keys
    manifest = json.loads(remote.read_manifest_bytes(first.bundle_id))
    assert manifest["bundle_id"] == first.bundle_id and manifest["files"] == first.manifest.model_dump()["files"]

    again = publish_store(store, remote)  # nothing new: every blob is found in place
    assert (again.files_uploaded, again.bytes_uploaded, again.current_moved) == (0, 0, False)
    assert again.bytes_reused == total

    # A one-file commit: only the files whose bytes changed go up; the parent's others are reused.
    c2, second = _build(repo, store.root, hash_embedder, {"wiki/p3.md": "# Strana 3\n\nNový text o hruškách.\n"},
                        "one file")
    result = CliRunner().invoke(publish_command, ["--store", str(store.root), "--to", url, "--endpoint-url",
                                                  endpoint, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["current"] == second.bundle_id and out["current_moved"] is True
    changed = {f.sha256 for f in second.manifest.files} - distinct
    assert out["files_uploaded"] == len(changed) and out["files_reused"] > 0
    assert out["bytes_uploaded"] < sum(f.size for f in second.manifest.files)
    assert remote.read_current().bundle_id == second.bundle_id
    assert set(remote.list_bundle_ids()) == {first.bundle_id, second.bundle_id}
    assert TEST_AWS_KEY_ID not in result.output and TEST_AWS_SECRET not in result.output


_KILLER = """
import os, signal, sys
from artifacts.remote import RemoteStore, publish_store
from artifacts.store import Store, verify_bundle

store, url, endpoint, kill_at = sys.argv[1:5]
steps = []

def on_step(kind, name):
    steps.append(kind)
    if kind == kill_at and (kind != "blob" or len(steps) == 3):
        os.kill(os.getpid(), signal.SIGKILL)  # a real kill: no except, no finally, no atexit

publish_store(Store(store), RemoteStore(url, endpoint_url=endpoint), on_step=on_step)
"""


def test_a_killed_publish_leaves_the_remote_current_unchanged(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                              hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    _build(repo, store.root, hash_embedder, _pages(6, "slivkách"), "first")
    remote = RemoteStore(url, endpoint_url=endpoint)
    old = publish_store(store, remote).current
    _c2, second = _build(repo, store.root, hash_embedder, _pages(8, "čerešniach"), "second")

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for kill_at in ("blob", "manifest"):  # killed amid the blobs, then after the manifest (just before CURRENT)
        proc = subprocess.run([sys.executable, "-c", _KILLER, str(store.root), url, endpoint, kill_at], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == -9, proc.stderr
        assert remote.read_current().bundle_id == old, kill_at  # CURRENT never moved
    assert second.bundle_id in remote.list_bundle_ids()  # the second kill came after its manifest
    report = publish_store(store, remote)  # running it again finishes the job, reusing what got up
    assert report.current_moved and remote.read_current().bundle_id == second.bundle_id
    assert report.files_reused > 0


def test_current_moves_only_forward_and_use_to_rolls_back(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                          hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    c1, first = _build(repo, store.root, hash_embedder, _pages(3, "orechoch"), "first")
    c2, second = _build(repo, store.root, hash_embedder, {"wiki/new.md": "# Nové\n\nNová strana.\n"}, "second")
    remote = RemoteStore(url, endpoint_url=endpoint)
    publish_store(store, remote)
    assert remote.read_current().bundle_id == second.bundle_id

    store.set_current(first.bundle_id)  # the local CURRENT rolled back: publishing does not roll the remote back
    report = publish_store(store, remote)
    assert not report.current_moved and "not a descendant" in report.note
    assert remote.read_current().bundle_id == second.bundle_id
    assert publish_store(store, remote, force_current=True).current_moved
    assert remote.read_current().bundle_id == first.bundle_id

    runner = CliRunner()
    result = runner.invoke(main, ["use", c2[:10], "--to", url, "--endpoint-url", endpoint])
    assert result.exit_code == 0, result.output
    assert remote.read_current().bundle_id == second.bundle_id
    result = runner.invoke(main, ["use", "main~1", "--to", url, "--endpoint-url", endpoint, "--repo", str(repo.path)])
    assert result.exit_code == 0, result.output
    assert remote.read_current().bundle_id == first.bundle_id  # a revision of --repo, resolved there
    result = runner.invoke(main, ["use", "main", "--to", url, "--endpoint-url", endpoint, "--repo", str(repo.path)])
    assert result.exit_code == 0 and remote.read_current().bundle_id == second.bundle_id
    result = runner.invoke(main, ["use", "deadbeef", "--to", url, "--endpoint-url", endpoint])
    assert result.exit_code == 1 and "no remote bundle" in result.output

    # A remote bundle with a blob missing is never made CURRENT.
    gone = first.manifest.files[0].sha256
    remote.client.delete_object(Bucket=remote.bucket, Key=remote.blob_key(gone))
    result = runner.invoke(main, ["use", first.bundle_id, "--to", url, "--endpoint-url", endpoint])
    assert result.exit_code == 1 and "incomplete" in result.output and first.manifest.files[0].path in result.output
    assert remote.read_current().bundle_id == second.bundle_id
    result = runner.invoke(main, ["use", c1])
    assert result.exit_code == 1 and "give --store" in result.output


def test_download_verifies_every_file_and_keeps_nothing_corrupt(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    _c1, first = _build(repo, store.root, hash_embedder, _pages(4, "gaštanoch"), "first")
    remote = RemoteStore(url, endpoint_url=endpoint)
    publish_store(store, remote)
    victim = next(f for f in first.manifest.files if f.path == "chunks.jsonl")
    remote.client.put_object(Bucket=remote.bucket, Key=remote.blob_key(victim.sha256), Body=b"{}\n" * 3)

    cache = Store(tmp_path / "cache")
    with pytest.raises(BundleIntegrityError) as info:
        download_bundle(remote, first.bundle_id, cache)
    assert any("chunks.jsonl" in p for p in info.value.problems)
    assert not (cache.bundles_dir / first.bundle_id).exists() and list(cache.staging_dir.iterdir()) == []

    remote.upload_blob(store.bundle_path(first.bundle_id) / victim.path, victim.sha256)  # repaired upstream
    path = download_bundle(remote, first.bundle_id, cache)
    assert path == cache.bundles_dir / first.bundle_id and (path / "manifest.json").is_file()
    assert (path / "chunks.jsonl").stat().st_mode & 0o222 == 0  # read-only like a built bundle

    # The next bundle: files the cache already holds (same sha256) are linked from it, not downloaded.
    _c2, second = _build(repo, store.root, hash_embedder, {"wiki/p1.md": "# Strana 1\n\nNové slová.\n"}, "second")
    publish_store(store, remote)
    down: list[int] = []
    reused: list[int] = []
    path = download_bundle(remote, second.bundle_id, cache, on_bytes=down.append, on_reuse=reused.append)
    assert sum(reused) > 0 and sum(down) > 0
    assert sum(down) + sum(reused) == sum(f.size for f in second.manifest.files)
    assert verify_bundle(path).bundle_id == second.bundle_id
    assert (cache.bundles_dir / first.bundle_id / "chunks.jsonl").stat().st_mode & 0o222 == 0


def test_remote_names_never_become_paths_outside_the_cache(tmp_path: Path, s3_bucket) -> None:  # type: ignore[no-untyped-def]
    endpoint, url = s3_bucket
    remote = RemoteStore(url, endpoint_url=endpoint)
    from artifacts.errors import BundleNotFoundError, RemoteStoreError

    remote.client.put_object(Bucket=remote.bucket, Key=remote.current_key, Body=b"../../../etc\n")
    with pytest.raises(RemoteStoreError, match="does not name a bundle id"):
        remote.read_current()
    remote.client.put_object(Bucket=remote.bucket, Key=remote.prefix + "bundles/../x/manifest.json", Body=b"{}")
    assert remote.list_bundle_ids() == []
    with pytest.raises(BundleNotFoundError):
        download_bundle(remote, "../escape", Store(tmp_path / "cache"))
    assert not (tmp_path / "escape").exists()


def test_the_worker_publishes_after_each_build(repo: RepoBuilder, tmp_path: Path, hash_embedder,  # type: ignore[no-untyped-def]
                                                s3_bucket) -> None:
    from artifacts.jobs import JobQueue
    from indexer.worker import run_worker

    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    repo.write("wiki/a.md", "# A\n\nPrvá strana.\n")
    commit = repo.commit("first")
    JobQueue(store.root).enqueue(kind="push", repo=str(repo.path), branch="main", commit=commit)
    assert run_worker(store.root, embedder=hash_embedder, idle_exit=0.0, poll=0.01, max_jobs=1,
                      publish=(url, endpoint)) == 1
    current = store.current_id()
    assert current is not None and current.startswith(commit)
    assert RemoteStore(url, endpoint_url=endpoint).read_current().bundle_id == current


# -- what a first user met (issue 23, second round) ---------------------------------------------------


def _with_userinfo(endpoint: str, secret: str) -> str:
    return endpoint.replace("http://", f"http://AKIAUSERINFO0023:{secret}@")


@pytest.mark.parametrize("secret", ["se/cr/et-0023", "p@ss@w0rd-0023", "a:b:c/d@e-0023"])
def test_a_secret_in_the_endpoint_url_is_never_printed_and_the_publish_works(  # type: ignore[no-untyped-def]
        repo: RepoBuilder, tmp_path: Path, hash_embedder, s3_bucket, secret: str) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    _build(repo, store.root, hash_embedder, _pages(2, "figách"), "first")
    with_secret = _with_userinfo(endpoint, secret)
    remote = RemoteStore(url, endpoint_url=with_secret)  # never raises on the secret's characters
    assert remote.describe() == {"url": url, "endpoint": endpoint} and remote.endpoint_url == endpoint

    result = CliRunner().invoke(publish_command, ["--store", str(store.root), "--to", url, "--endpoint-url",
                                                  with_secret, "--json"])
    assert result.exit_code == 0, result.output  # the user info is ignored: requests are signed by the AWS chain
    assert json.loads(result.output)["current_moved"] is True
    # an endpoint that cannot be reached: the error names it, without the user info
    dead = _with_userinfo(f"http://127.0.0.1:{_closed_port()}", secret)
    for argv in (["publish", "--store", str(store.root), "--to", url, "--endpoint-url", dead],
                 ["use", "deadbeef", "--to", url, "--endpoint-url", dead]):
        result = CliRunner().invoke(main, argv)
        assert result.exit_code == 1 and "127.0.0.1" in result.output, result.output
        assert secret not in result.output and "AKIAUSERINFO0023" not in result.output
        assert "Traceback" not in result.output


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_publish_again_repairs_a_missing_or_truncated_blob_of_a_published_bundle(  # type: ignore[no-untyped-def]
        repo: RepoBuilder, tmp_path: Path, hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    _c1, first = _build(repo, store.root, hash_embedder, _pages(6, "hroznoch"), "first")
    remote = RemoteStore(url, endpoint_url=endpoint)
    publish_store(store, remote)
    by_size = sorted({f.sha256: f for f in first.manifest.files if f.size > 10}.values(), key=lambda f: f.size)
    gone, cut = by_size[-1], by_size[-2]
    remote.client.delete_object(Bucket=remote.bucket, Key=remote.blob_key(gone.sha256))
    remote.client.put_object(Bucket=remote.bucket, Key=remote.blob_key(cut.sha256), Body=b"truncated")
    assert sorted(remote.blob_problems(first.manifest)) == sorted(
        [f"{f.path}: missing from the remote store" for f in first.manifest.files if f.sha256 == gone.sha256]
        + [f"{f.path}: size 9, expected {f.size}" for f in first.manifest.files if f.sha256 == cut.sha256])

    result = CliRunner().invoke(publish_command, ["--store", str(store.root), "--to", url, "--endpoint-url", endpoint])
    assert result.exit_code == 0 and "2 missing or damaged, uploaded again" in result.output, result.output
    assert remote.blob_problems(first.manifest) == []
    assert verify_bundle(download_bundle(remote, first.bundle_id, Store(tmp_path / "cache"))).bundle_id \
        == first.bundle_id
    again = publish_store(store, remote)
    assert (again.files_uploaded, again.files_repaired) == (0, 0)


def test_a_partial_remote_bundle_is_refused_before_a_byte_of_it_is_downloaded(  # type: ignore[no-untyped-def]
        repo: RepoBuilder, tmp_path: Path, hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    _c1, first = _build(repo, store.root, hash_embedder, _pages(4, "jahodách"), "first")
    remote = RemoteStore(url, endpoint_url=endpoint)
    publish_store(store, remote)
    victim = next(f for f in first.manifest.files if f.path == "docs.jsonl")
    remote.client.delete_object(Bucket=remote.bucket, Key=remote.blob_key(victim.sha256))
    cache = Store(tmp_path / "cache")
    down: list[int] = []
    with pytest.raises(BundleIntegrityError) as info:
        download_bundle(remote, first.bundle_id, cache, on_bytes=down.append)
    assert info.value.problems == ["docs.jsonl: missing from the remote store"] and down == []
    assert not (cache.bundles_dir / first.bundle_id).exists() and list(cache.staging_dir.iterdir()) == []


def test_force_current_overwrites_a_remote_current_that_names_no_bundle(  # type: ignore[no-untyped-def]
        repo: RepoBuilder, tmp_path: Path, hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    c1, first = _build(repo, store.root, hash_embedder, _pages(2, "ríbezliach"), "first")
    remote = RemoteStore(url, endpoint_url=endpoint)
    publish_store(store, remote)
    runner = CliRunner()
    for _ in range(2):
        remote.client.put_object(Bucket=remote.bucket, Key=remote.current_key, Body=b"garbage written by hand\n")
        for argv in (["publish", "--store", str(store.root), "--to", url, "--endpoint-url", endpoint],
                     ["use", c1[:10], "--to", url, "--endpoint-url", endpoint]):
            result = runner.invoke(main, argv)
            assert result.exit_code == 1 and "does not name a bundle id" in result.output, result.output
            assert "--force-current" in result.output
        # --no-current leaves it, and says so in the report
        result = runner.invoke(main, ["publish", "--store", str(store.root), "--to", url, "--endpoint-url",
                                      endpoint, "--no-current", "--json"])
        assert result.exit_code == 0 and json.loads(result.output)["current_reason"] == "not_requested"
        assert _raw_current(remote) == b"garbage written by hand\n"
        if _ == 0:
            argv = ["publish", "--store", str(store.root), "--to", url, "--endpoint-url", endpoint, "--force-current"]
        else:
            argv = ["use", c1[:10], "--to", url, "--endpoint-url", endpoint, "--force-current"]
        result = runner.invoke(main, argv)
        assert result.exit_code == 0, result.output
        assert remote.read_current().bundle_id == first.bundle_id


def _raw_current(remote: RemoteStore) -> bytes:
    return bytes(remote.client.get_object(Bucket=remote.bucket, Key=remote.current_key)["Body"].read())


def test_an_unknown_aws_profile_or_no_credentials_is_one_clear_error_line(  # type: ignore[no-untyped-def]
        tmp_path: Path, s3_bucket, monkeypatch) -> None:
    from query.cli.main import serve_command

    endpoint, url = s3_bucket
    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.setenv("AWS_PROFILE", "nope")
    runner = CliRunner()
    for command, argv in ((main, ["publish", "--store", str(store), "--to", url, "--endpoint-url", endpoint]),
                          (main, ["use", "deadbeef", "--to", url, "--endpoint-url", endpoint]),
                          (serve_command, ["--from", url, "--cache", str(tmp_path / "cache"), "--endpoint-url",
                                           endpoint, "--port", str(_closed_port())])):
        result = runner.invoke(command, argv)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), (argv, result.output)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "ProfileNotFound" in lines[0] and "nope" in lines[0], result.output
        assert "AWS_PROFILE" in lines[0] and "gitrag serving" not in result.output
    # no credentials anywhere in the chain: the error says where they come from
    monkeypatch.delenv("AWS_PROFILE")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    from artifacts.errors import RemoteStoreError

    with pytest.raises(RemoteStoreError, match="NoCredentialsError.*AWS credential chain.*AWS_ACCESS_KEY_ID"):
        RemoteStore(url, endpoint_url=endpoint).read_current()


def test_a_missing_bucket_and_refused_credentials_are_named(s3_bucket) -> None:  # type: ignore[no-untyped-def]
    from botocore.exceptions import ClientError

    from artifacts.errors import RemoteStoreError
    from artifacts.remote import failure_reason

    endpoint, _url = s3_bucket
    with pytest.raises(RemoteStoreError, match="NoSuchBucket: the bucket no-such-bucket-0023 does not exist"):
        RemoteStore("s3://no-such-bucket-0023/wiki", endpoint_url=endpoint).read_current()
    refused = ClientError({"Error": {"Code": "SignatureDoesNotMatch", "Message": "The request signature ..."},
                           "ResponseMetadata": {"HTTPStatusCode": 403}}, "GetObject")
    assert "SignatureDoesNotMatch" in failure_reason(refused) and "AWS credential chain" in failure_reason(refused)


def test_publish_json_reports_the_remote_current_and_why_it_did_not_move(  # type: ignore[no-untyped-def]
        repo: RepoBuilder, tmp_path: Path, hash_embedder, s3_bucket) -> None:
    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    _c1, first = _build(repo, store.root, hash_embedder, _pages(2, "mandarínkach"), "first")
    _c2, second = _build(repo, store.root, hash_embedder, {"wiki/x.md": "# X\n\nNová.\n"}, "second")
    remote = RemoteStore(url, endpoint_url=endpoint)
    publish_store(store, remote)
    store.set_current(first.bundle_id)  # the local CURRENT is behind the remote one
    base = ["publish", "--store", str(store.root), "--to", url, "--endpoint-url", endpoint, "--json"]
    for extra, reason in (([], "not_a_descendant"), (["--no-current"], "not_requested")):
        result = CliRunner().invoke(main, base + extra)
        assert result.exit_code == 0, result.output
        out = json.loads(result.output)
        assert (out["current"], out["current_moved"], out["current_reason"]) == (second.bundle_id, False, reason)
        assert out["note"]
    store.set_current(second.bundle_id)
    out = json.loads(CliRunner().invoke(main, base).output)
    assert (out["current"], out["current_moved"], out["current_reason"]) == (second.bundle_id, False,
                                                                             "already_current")


def test_lexical_bundles_are_published_and_resolved_like_complete_ones(  # type: ignore[no-untyped-def]
        repo: RepoBuilder, tmp_path: Path, hash_embedder, s3_bucket) -> None:
    from artifacts.remote import resolve_remote_ref
    from artifacts.store import is_bundle_id

    endpoint, url = s3_bucket
    store = Store(tmp_path / "store")
    for rel, text in _pages(3, "kivi").items():
        repo.write(rel, text)
    commit = repo.commit("first")
    result = build_bundle(repo.path, store.root, embedder=hash_embedder, lexical_first=True)
    assert result.lexical is not None and is_bundle_id(result.lexical.bundle_id)
    remote = RemoteStore(url, endpoint_url=endpoint)
    publish_store(store, remote)
    ids = remote.list_bundle_ids()
    assert set(ids) == {result.bundle_id, result.lexical.bundle_id}
    assert resolve_remote_ref(ids, commit[:10]) == result.bundle_id  # the complete one before the lexical one
    assert resolve_remote_ref(ids, result.lexical.bundle_id) == result.lexical.bundle_id
    path = download_bundle(remote, result.lexical.bundle_id, Store(tmp_path / "cache"))
    assert verify_bundle(path).stage == "lexical"
