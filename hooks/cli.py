"""``gitrag install-hook``: install the ``post-receive`` hook into a bare repository."""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path

import click

HOOK_MARK = "# installed by gitrag install-hook"
TEMPLATE = """#!/bin/sh
{mark}
# Reads <old> <new> <ref> lines on stdin, queues a gitrag build and returns at once.
{env}exec {python} -P -m hooks.post_receive --repo {repo} --store {store} --branch {branch}
"""


def render_hook(repo: Path, store: Path, branch: str, embedder: str | None = None) -> str:
    """Return the text of the hook script for a repository, store and branch (absolute paths)."""
    env = f"GITRAG_EMBEDDER={shlex.quote(embedder)} export GITRAG_EMBEDDER\n" if embedder else ""
    return TEMPLATE.format(mark=HOOK_MARK, env=env, python=shlex.quote(sys.executable),
                           repo=shlex.quote(str(repo)), store=shlex.quote(str(store)),
                           branch=shlex.quote(branch))


def default_branch(repo: Path | str) -> str | None:
    """Return the branch the repository's ``HEAD`` names (``master``, ``main``...), or ``None`` if detached."""
    import pygit2

    try:
        head = pygit2.Repository(str(repo)).references.get("HEAD")
    except pygit2.GitError:
        return None
    target = head.target if head is not None else None
    if isinstance(target, str) and target.startswith("refs/heads/"):
        return target.removeprefix("refs/heads/")
    return None


def check_branch(repo: Path | str, branch: str) -> str | None:
    """Return a warning when ``branch`` does not exist yet in an empty repository, else ``None``.

    Raises :class:`click.ClickException` when the repository has branches but not this one
    (naming the ones it has): a hook for a branch nobody pushes to would silently do nothing.
    """
    import pygit2

    branches = sorted(pygit2.Repository(str(repo)).branches.local)
    if branch in branches:
        return None
    if branches:
        raise click.ClickException(f"branch {branch!r} does not exist in {Path(repo).name}; it has: "
                                   f"{', '.join(branches[:10])}. Pass --branch NAME")
    return f"branch {branch!r} does not exist yet (empty repository); the first push to it will be indexed"


def install_hook(repo: Path | str, store: Path | str, branch: str | None = None, embedder: str | None = None,
                 force: bool = False) -> Path:
    """Write ``<repo>/hooks/post-receive`` (executable) and return its path.

    ``branch`` defaults to the repository's default branch (the one its ``HEAD`` names).
    Raises :class:`click.ClickException` when ``repo`` is not a bare repository, when the branch
    does not exist in a repository that has other branches (see :func:`check_branch`), or when a
    hook not written by gitrag exists and ``force`` is false.
    """
    repo = Path(repo).resolve()
    if not (repo / "HEAD").is_file() or not (repo / "objects").is_dir():
        raise click.ClickException("--repo must be a bare Git repository (a directory with HEAD and objects/)")
    branch = branch or default_branch(repo) or "main"
    check_branch(repo, branch)
    hook = repo / "hooks" / "post-receive"
    if hook.exists() and HOOK_MARK not in hook.read_text(encoding="utf-8", errors="replace") and not force:
        raise click.ClickException("a post-receive hook exists and was not installed by gitrag; use --force")
    hook.parent.mkdir(exist_ok=True)
    store = Path(store).resolve()
    store.mkdir(parents=True, exist_ok=True)
    tmp = hook.with_name(".post-receive.tmp")
    tmp.write_text(render_hook(repo, store, branch, embedder), encoding="utf-8")
    tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH | stat.S_IRUSR)
    os.replace(tmp, hook)
    return hook


@click.command("install-hook")
@click.option("--repo", required=True, type=click.Path(exists=True, file_okay=False), help="Bare Git repository.")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False), help="Bundle store directory.")
@click.option("--branch", default=None, help="Branch whose pushes are indexed (default: the repository's HEAD branch).")
@click.option("--embedder", default=None, help="Embedding model for the worker (default: $GITRAG_EMBEDDER at push).")
@click.option("--force", is_flag=True, help="Replace a post-receive hook not written by gitrag.")
def install_hook_command(repo: str, store_dir: str, branch: str | None, embedder: str | None, force: bool) -> None:
    """Install the post-receive hook: each push to BRANCH queues a build and wakes a worker.

    Pushes to other refs are recorded as ignored jobs, so `gitrag jobs` says why they did nothing.
    The worker builds with the store's remembered options (see `gitrag build`) unless --embedder.
    """
    branch = branch or default_branch(repo) or "main"
    warning = check_branch(repo, branch) if Path(repo, "objects").is_dir() else None
    hook = install_hook(repo, store_dir, branch, embedder, force)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"installed {hook}: pushes to branch {branch!r} are indexed into {Path(store_dir).resolve()}")
