"""Backfill: build a bundle for every commit of a range, oldest first, each from its parent's bundle."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pygit2

from artifacts.config import ChunkConfig
from artifacts.embedding import Embedder, open_build_embedder
from artifacts.store import Store
from artifacts.storeconfig import resolve_options

from .build import BuildResult, build_bundle, current_move_blocked
from .errors import SourceError
from .gitsource import open_repo, resolve_commit


def list_range(repo: pygit2.Repository, rev_range: str | None, tip: str = "HEAD") -> list[str]:
    """Return the commits of ``A..B`` (reachable from B, not from A), or of all history of ``tip``
    when ``rev_range`` is None, in topological order, oldest first.

    Raises :class:`SourceError` for a malformed range or unknown revisions.
    """
    if rev_range is None:
        hide = None
    else:
        if ".." not in rev_range or "..." in rev_range:
            raise SourceError("a range must look like A..B")
        hide, tip = rev_range.split("..", 1)
        tip = tip or "HEAD"
    walker = repo.walk(resolve_commit(repo, tip).commit,
                       pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    if hide:
        walker.hide(resolve_commit(repo, hide).commit)
    return [str(c.id) for c in walker]


def backfill(repo_path: Path | str, store_dir: Path | str, rev_range: str | None, *, tip: str = "HEAD",
             embedder: str | Embedder | None = None, chunking: ChunkConfig | None = None,
             max_file_bytes: int | None = None, graph_schema: str | None = None,
             include: list[str] | None = None,
             on_commit: Callable[[int, int, BuildResult], None] | None = None,
             force_current: bool = False) -> list[BuildResult]:
    """Build every commit of ``rev_range`` (``A..B``; ``None`` = all of ``tip``'s history).

    Commits that already have a bundle are skipped, so an interrupted backfill resumes where it
    stopped.  ``CURRENT`` moves once, to the range's last commit, at the end (unless pinned, or that
    commit is not a descendant of the current one and ``force_current`` is false; see
    :func:`~indexer.build.current_move_blocked`).  Options left ``None`` come from the store's defaults.
    ``graph_schema`` and ``include`` are passed to each build.  ``on_commit(done, total, result)`` is called after each
    commit.  Raises what
    :func:`build_bundle` raises.
    """
    repo = open_repo(repo_path)
    commits = list_range(repo, rev_range, tip)
    if embedder is None or isinstance(embedder, str):
        embedder = resolve_options(store_dir, embedder=embedder, chunking=None, include=None, graph_schema=None,
                                   max_file_bytes=None).embedder
    model = embedder if embedder is not None and not isinstance(embedder, str) else open_build_embedder(embedder)
    results = []
    for i, commit in enumerate(commits):
        result = build_bundle(repo_path, store_dir, commit, embedder=model, chunking=chunking,
                              max_file_bytes=max_file_bytes, update_current=False, wait_for_lock=True,
                              graph_schema=graph_schema, include=include)
        results.append(result)
        if on_commit is not None:
            on_commit(i + 1, len(commits), result)
    if results:
        store = Store(store_dir)
        note = current_move_blocked(store, repo, results[-1].manifest.commit) if not force_current else None
        if store.is_pinned():
            results[-1].current_note = "store is pinned: CURRENT not moved (gitrag unpin)"
        elif note is not None:
            results[-1].current_note = note
        else:
            store.set_current(results[-1].bundle_id)
            results[-1].current = True
    return results
