"""Shared fixtures: tiny real Git repositories built in tmp_path, and the offline model settings."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

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
