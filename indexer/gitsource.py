"""Read Markdown files from a commit's tree through pygit2 (never from the working tree)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pygit2

from artifacts.gittree import markdown_entries, unindexable_entries

from .errors import SourceError


@dataclass(frozen=True)
class CommitInfo:
    """The commit being indexed: full sha, tree sha, parent shas, committer time (s since epoch), summary."""

    commit: str
    tree: str
    parents: list[str]
    time: int
    summary: str


@dataclass(frozen=True)
class SourceFile:
    """A ``*.md`` blob of the tree: NFC path, blob sha (hex), size in bytes; ``data`` read lazily.

    ``symlink`` is true for a symbolic link named ``*.md`` (never followed; the build skips it).
    """

    path: str
    blob_id: str
    size: int
    repo: pygit2.Repository
    symlink: bool = False

    def read(self) -> bytes:
        """Return the blob's bytes."""
        return cast(pygit2.Blob, self.repo[self.blob_id]).data


def open_repo(path: Path | str) -> pygit2.Repository:
    """Open a Git repository (bare or not) at ``path``; raises :class:`SourceError`."""
    try:
        return pygit2.Repository(str(path))
    except (pygit2.GitError, KeyError) as exc:
        raise SourceError(f"not a Git repository: {path}") from exc


def resolve_commit(repo: pygit2.Repository, rev: str = "HEAD") -> CommitInfo:
    """Resolve a revision (sha, short sha, branch, tag, ``HEAD~2``...) to its commit.

    Raises :class:`SourceError` if ``rev`` names no commit.
    """
    try:
        obj = repo.revparse_single(rev)
        commit = obj.peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
        raise SourceError(f"revision {rev!r} names no commit") from exc
    return CommitInfo(
        commit=str(commit.id),
        tree=str(commit.tree_id),
        parents=[str(p) for p in commit.parent_ids],
        time=int(commit.commit_time),
        summary=(commit.message or "").strip().splitlines()[0][:200] if commit.message else "",
    )


def iter_markdown(repo: pygit2.Repository, tree_sha: str) -> Iterator[SourceFile]:
    """Yield every ``*.md`` blob of a tree (recursively), sorted by NFC path.

    Paths use ``/`` separators; a path that is not valid UTF-8 and submodules (commit entries) are
    left out (:func:`unindexable_files` names them); symlinks are yielded with ``symlink=True``
    (see :func:`artifacts.gittree.markdown_entries`).
    """
    for path, entry in markdown_entries(repo, cast(pygit2.Tree, repo[tree_sha])):
        yield SourceFile(path=path, blob_id=str(entry.id), size=entry.size, repo=repo,
                         symlink=entry.filemode == pygit2.GIT_FILEMODE_LINK)


def unindexable_files(repo: pygit2.Repository, tree_sha: str) -> list[tuple[str, str, str]]:
    """``[(path, reason, detail)]`` of the tree's submodules and non-UTF-8 ``*.md`` paths (recorded as skipped)."""
    return unindexable_entries(repo, cast(pygit2.Tree, repo[tree_sha]))
