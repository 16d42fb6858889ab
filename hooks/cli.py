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


def install_hook(repo: Path | str, store: Path | str, branch: str = "main", embedder: str | None = None,
                 force: bool = False) -> Path:
    """Write ``<repo>/hooks/post-receive`` (executable) and return its path.

    Raises :class:`click.ClickException` when ``repo`` is not a bare repository, or when a hook not
    written by gitrag exists and ``force`` is false.
    """
    repo = Path(repo).resolve()
    if not (repo / "HEAD").is_file() or not (repo / "objects").is_dir():
        raise click.ClickException("--repo must be a bare Git repository (a directory with HEAD and objects/)")
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
@click.option("--branch", default="main", show_default=True, help="Branch whose pushes are indexed.")
@click.option("--embedder", default=None, help="Embedding model for the worker (default: $GITRAG_EMBEDDER at push).")
@click.option("--force", is_flag=True, help="Replace a post-receive hook not written by gitrag.")
def install_hook_command(repo: str, store_dir: str, branch: str, embedder: str | None, force: bool) -> None:
    """Install the post-receive hook: each push to BRANCH queues a build and wakes a worker."""
    hook = install_hook(repo, store_dir, branch, embedder, force)
    click.echo(f"installed {hook}")
