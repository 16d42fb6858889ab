"""Shared fixtures: tiny real Git repositories built in tmp_path, and the offline model settings."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
if "GITRAG_CACHE_DIR" not in os.environ:
    # the lexicon files builds write (artifacts.lexicon): in a folder of this test run, not the user's cache;
    # set GITRAG_CACHE_DIR to keep them between runs (about 3 s of writing saved)
    _CACHE = tempfile.mkdtemp(prefix="gitrag-test-cache-")
    os.environ["GITRAG_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, True)

SHARED = Path(os.environ.get("GITRAG_SHARED") or Path(__file__).resolve().parents[2] / "shared")
"""The read-only shared folder (corpora and benchmarks): ``$GITRAG_SHARED``, else ``shared/`` beside the work tree."""

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def git(repo: Path, *args: str, date: str = "2024-01-01T00:00:00Z") -> str:
    """Run git in ``repo`` with a fixed identity and the given author/committer date; return stdout."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.org",
        "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.org",
        "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date,
    }
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


class RepoBuilder:
    """Writes files into a work tree and commits them with real git."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.commits = 0
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "-q", "-b", "main")

    def write(self, rel: str, content: str | bytes) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")

    def move(self, src: str, dst: str) -> None:
        (self.path / dst).parent.mkdir(parents=True, exist_ok=True)
        git(self.path, "mv", src, dst)

    def remove(self, rel: str) -> None:
        git(self.path, "rm", "-q", rel)

    def commit(self, message: str = "change") -> str:
        """Commit everything; each commit is one minute later than the previous one."""
        self.commits += 1
        date = f"2024-01-01T{self.commits // 60:02d}:{self.commits % 60:02d}:00Z"
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "--allow-empty", "-m", message, date=date)
        return git(self.path, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> RepoBuilder:
    """An empty Git repository with branch ``main``."""
    return RepoBuilder(tmp_path / "repo")


@pytest.fixture(scope="session")
def hash_embedder():  # type: ignore[no-untyped-def]
    """The deterministic feature-hashing embedder (fast, for unit tests)."""
    from artifacts.embedding import load_embedder

    return load_embedder("hash-64")


def require_shared(name: str) -> Path:
    """Return a file of ../shared, skipping the test when the shared folder is absent."""
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"{path} not found (set GITRAG_SHARED to the shared folder)")
    return path


TEST_AWS_KEY_ID = "AKIAGITRAGTESTKEY0023"
TEST_AWS_SECRET = "gitrag/test+SECRET/never-in-logs-0023"
"""Credentials given to the S3 test server through the standard AWS variables (grepped for in logs)."""


@pytest.fixture(scope="session")
def s3_endpoint():  # type: ignore[no-untyped-def]
    """A real S3 HTTP server on 127.0.0.1 (moto's standalone server, in a thread): its endpoint URL.

    The AWS variables point every boto3 client of the test process and its children at test
    credentials (restored afterwards); tests create their own bucket (:func:`s3_bucket`).
    """
    pytest.importorskip("moto.server", reason="moto[server] is in the test extra")
    from moto.server import ThreadedMotoServer

    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION",
                                            "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL")}
    os.environ.update({"AWS_ACCESS_KEY_ID": TEST_AWS_KEY_ID, "AWS_SECRET_ACCESS_KEY": TEST_AWS_SECRET,
                       "AWS_DEFAULT_REGION": "us-east-1"})
    for key in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        os.environ.pop(key, None)
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one access line per S3 request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def s3_bucket(s3_endpoint, request):  # type: ignore[no-untyped-def]
    """A fresh bucket on :func:`s3_endpoint`: ``(endpoint_url, "s3://BUCKET/prefix")``."""
    import re
    import secrets

    from artifacts.remote import make_client

    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-") + "-" + secrets.token_hex(3)
    make_client(s3_endpoint).create_bucket(Bucket=name)
    return s3_endpoint, f"s3://{name}/gitrag"
