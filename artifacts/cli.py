"""The ``gitrag`` command: a click group whose subcommands come from entry points.

``indexer`` and ``query`` register their commands in the ``gitrag.commands`` entry-point group
(see pyproject.toml), so this root never imports them and the package dependency direction
(hooks -> indexer -> artifacts <- query) holds.  Commands are imported only when invoked, which
keeps ``gitrag --help`` fast.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import entry_points
from typing import Any, NoReturn

import click

from . import __version__
from .compare import diff_bundles
from .errors import ArtifactError, BundleIntegrityError
from .store import LEXICAL_SUFFIX, Store, gc_bundles, pin, resolve_bundle_ref, unpin, use_bundle, verify_bundle
from .store import repair_current as repair_store_current

ENTRY_POINT_GROUP = "gitrag.commands"


class PluginGroup(click.Group):
    """A click group that lists and loads subcommands from :data:`ENTRY_POINT_GROUP` lazily."""

    def _plugins(self) -> dict[str, Any]:
        return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._plugins()))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None:
            return command
        ep = self._plugins().get(name)
        if ep is None:
            return None
        try:
            return ep.load()  # type: ignore[no-any-return]
        except ImportError as exc:
            # A plugin whose module is missing (an install out of step with the source tree) must not
            # take `gitrag --help` and every other command down with it; invoking it says why.
            problem = f"{type(exc).__name__}: {exc}"

            def _broken() -> None:
                raise click.ClickException(f"command {name!r} failed to load ({problem}); reinstall gitrag")

            return click.Command(name, callback=_broken, help=f"(unavailable: {problem})")


@click.group(cls=PluginGroup)
@click.version_option(__version__, prog_name="gitrag")
def main() -> None:
    """gitrag: Git-native search over Markdown knowledge bases.

    Build immutable, commit-addressed bundles from a Git repository and search them.
    """


@main.command("verify")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False), help="Bundle store directory.")
@click.argument("bundle", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report.")
@click.option("--repair-current", is_flag=True,
              help="If CURRENT fails verification, point it at the newest older bundle that verifies.")
def verify_command(store_dir: str, bundle: str | None, as_json: bool, repair_current: bool) -> None:
    """Re-hash every file of BUNDLE (default: CURRENT) against its manifest; exit 1 on mismatch.

    With --repair-current (no BUNDLE): a CURRENT that fails is replaced by the newest older bundle
    that verifies (files and records); exit 0 when CURRENT verifies afterwards, 1 when no bundle does.
    """
    store = _existing_store(store_dir)
    report: dict[str, Any]
    if repair_current:
        if bundle:
            _fail("--repair-current checks CURRENT: give no BUNDLE")
        try:
            report = repair_store_current(store)
        except ArtifactError as exc:
            _fail(f"cannot repair CURRENT: {exc}")
        if as_json:
            click.echo(json.dumps(report, indent=2))
        elif report["repaired"]:
            click.echo(f"CURRENT was {report['was']} (fails: {'; '.join(report['problems'][:3])}); "
                       f"now {report['current']}")
        elif report["ok"]:
            click.echo(f"ok: CURRENT {report['current']} verifies; nothing to repair")
        else:
            click.echo(f"CURRENT {report['current']} fails and no older bundle verifies", err=True)
            for problem in report["problems"] + report["skipped"]:
                click.echo(problem, err=True)
        sys.exit(0 if report["ok"] else 1)
    try:
        path = resolve_bundle_ref(store, bundle).path if bundle else store.current_path()
        manifest = verify_bundle(path)
        report = {"ok": True, "bundle_id": manifest.bundle_id, "files": len(manifest.files), "problems": []}
    except BundleIntegrityError as exc:
        report = {"ok": False, "bundle_id": bundle or store.current_id(), "problems": exc.problems or [str(exc)]}
    except ArtifactError as exc:
        report = {"ok": False, "bundle_id": bundle or store.current_id(), "problems": [str(exc)]}
    if as_json:
        click.echo(json.dumps(report, indent=2))
    elif report["ok"]:
        click.echo(f"ok: {report['bundle_id']} ({report['files']} files verified)")
    else:
        for problem in report["problems"]:
            click.echo(problem, err=True)
    sys.exit(0 if report["ok"] else 1)


STORE_OPTION = click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False),
                            help="Bundle store directory.")
REPO_OPTION = click.option("--repo", "repo", default=None, type=click.Path(exists=True, file_okay=False),
                           help="Source repository to resolve branches, tags and REV~N (default: the ones "
                                "recorded in the bundles' manifests, CURRENT's first).")


def _fail(message: str) -> NoReturn:
    raise click.ClickException(message)


def _existing_store(store_dir: str) -> Store:
    """Return the store at ``store_dir``; a missing directory is an error, never created by a read."""
    store = Store(store_dir)
    if not store.root.is_dir():
        _fail(f"no store at {store_dir}")
    return store


@main.command("bundles")
@STORE_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def bundles_command(store_dir: str, as_json: bool) -> None:
    """List the store's bundles, newest commit first, marking the current and pinned ones."""
    store = _existing_store(store_dir)
    current = store.current_id()
    pinned = store.is_pinned()
    rows: list[dict[str, Any]] = []
    infos = store.list_bundles()
    current_config = next((i.manifest.config_fingerprint for i in infos if i.bundle_id == current), None)
    complete = {i.bundle_id for i in infos if i.manifest.stage == "complete"}
    for info in infos:
        m = info.manifest
        size = sum(f.size for f in m.files)
        rows.append({
            "commit": m.commit, "bundle_id": info.bundle_id, "bundle_path": str(info.path),
            "summary": m.commit_summary, "commit_time": m.commit_time, "size_bytes": size,
            "documents": m.counts.documents, "built_from": m.built_from, "stage": m.stage, "engines": m.engines,
            # a lexical bundle's complete successor (same commit and configuration), once published
            "completed_by": (info.bundle_id.removesuffix(LEXICAL_SUFFIX)
                             if m.stage == "lexical" and info.bundle_id.removesuffix(LEXICAL_SUFFIX) in complete
                             else None),
            "current": info.bundle_id == current, "pinned": pinned and info.bundle_id == current,
            "other_config": current_config is not None and m.config_fingerprint != current_config,
        })
    broken = store.unreadable_bundles()
    rows += [{"commit": None, "bundle_id": name, "bundle_path": str(store.bundles_dir / name), "summary": None,
              "commit_time": None, "size_bytes": None, "documents": None, "built_from": None,
              "current": name == current, "pinned": pinned and name == current, "error": "unreadable manifest"}
             for name in broken]
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    import datetime as dt

    if not rows:
        click.echo("no bundles (run `gitrag build --repo REPO --store STORE`)")
        return
    click.echo(f"{'*P':<2} {'COMMIT':<12} {'COMMITTED (UTC)':<16} {'SIZE':>10}  {'BUNDLE':<49}  SUMMARY")
    for row in rows:
        mark = ("*" if row["current"] else " ") + ("P" if row["pinned"] else " ")
        if row.get("error"):
            click.echo(f"{mark} {'!' * 12} {row['bundle_id']}  {row['error']} (run `gitrag verify`)")
            continue
        when = dt.datetime.fromtimestamp(int(row["commit_time"]), dt.UTC).strftime("%Y-%m-%d %H:%M")
        other = "  [other configuration than CURRENT's]" if row["other_config"] else ""
        stage = ("" if row["stage"] != "lexical" else "  [lexical: BM25 + graph; complete bundle published]"
                 if row["completed_by"] else "  [lexical: BM25 + graph, vectors pending]")
        click.echo(f"{mark} {row['commit'][:12]} {when} {row['size_bytes'] / 1e6:7.1f} MB  "
                   f"{row['bundle_id']}  {row['summary'][:60]}{stage}{other}")
    click.echo("(* = CURRENT, P = pinned; a lexical bundle was published before its vectors and is followed by "
               "the complete bundle of its commit; a bundle of another configuration (embedder, chunking, includes, "
               "an older gitrag) is never a base for CURRENT's builds)")


@main.command("use")
@click.argument("ref")
@click.option("--store", "store_dir", default=None, type=click.Path(file_okay=False),
              help="Bundle store directory (or --to).")
@REPO_OPTION
@click.option("--to", "remote_url", default=None,
              help="Move the remote CURRENT of s3://BUCKET/PREFIX instead (replicas follow it); REF is then a "
                   "bundle id or commit id, or any revision of --repo.")
@click.option("--endpoint-url", default=None, envvar="GITRAG_S3_ENDPOINT_URL", help="S3-compatible server (with --to).")
@click.option("--force-current", is_flag=True,
              help="With --to: overwrite a remote CURRENT that names no bundle (another tool's, or damaged).")
def use_command(ref: str, store_dir: str | None, repo: str | None, remote_url: str | None,
                endpoint_url: str | None, force_current: bool) -> None:
    """Point CURRENT at the bundle of REF: rollback and roll-forward.

    REF is a bundle id, a full or short commit id, a branch or tag, optionally with ~N / ^ (main~2).
    The bundle is verified first; one that fails verification never becomes CURRENT.  With --to, the
    remote CURRENT moves (after checking that the bundle's manifest and every file are stored with
    their sizes; replicas re-hash the content and refuse a bundle that fails).
    """
    if remote_url is not None:
        _use_remote(ref, remote_url, endpoint_url, repo, force_current)
        return
    if store_dir is None:
        _fail("give --store DIR (a local store) or --to s3://BUCKET/PREFIX (a published one)")
    store = _existing_store(store_dir)
    try:
        info = use_bundle(store, ref, repo)  # resolve, verify, lock, write: the same function as POST /admin/use
    except BundleIntegrityError as exc:
        _fail(f"{exc}: " + "; ".join(exc.problems))
    except ArtifactError as exc:
        _fail(str(exc))
    note = " (store is pinned: new builds will not move it)" if store.is_pinned() else ""
    click.echo(f"CURRENT -> {info.bundle_id}{note}")


def _use_remote(ref: str, url: str, endpoint_url: str | None, repo: str | None, force_current: bool) -> None:
    from .remote import use_remote
    from .remote_cli import open_remote
    from .store import check_revision, resolve_revision

    try:
        if repo is not None:  # a branch, tag or REV~N resolved in the named repository first
            ref = resolve_revision(repo, check_revision(ref)) or ref
        bundle_id = use_remote(open_remote(url, endpoint_url, None), ref, force_current=force_current)
    except BundleIntegrityError as exc:
        _fail(f"{exc}: " + "; ".join(exc.problems))
    except ArtifactError as exc:
        _fail(str(exc))
    click.echo(f"remote CURRENT of {url.rstrip('/')} -> {bundle_id}")


@main.command("pin")
@STORE_OPTION
def pin_command(store_dir: str) -> None:
    """Pin CURRENT: new builds are published but do not move CURRENT until `gitrag unpin`."""
    try:
        click.echo(f"pinned at {pin(_existing_store(store_dir))}")
    except ArtifactError as exc:
        _fail(str(exc))


@main.command("unpin")
@STORE_OPTION
def unpin_command(store_dir: str) -> None:
    """Remove the pin: the next build moves CURRENT again."""
    store = _existing_store(store_dir)
    unpin(store)
    newest = next(iter(store.list_bundles()), None)  # newest commit first
    current = store.current_id()
    if newest is not None and newest.bundle_id != current:
        click.echo(f"unpinned; CURRENT stays at {current}; the newest bundle is {newest.bundle_id} "
                   f"(switch with `gitrag use {newest.manifest.commit[:12]}`; the next build moves CURRENT)")
    else:
        click.echo("unpinned; the next build moves CURRENT again")


@main.command("gc")
@STORE_OPTION
@click.option("--keep", required=True, type=click.IntRange(min=0), help="Number of newest bundles to keep.")
def gc_command(store_dir: str, keep: int) -> None:
    """Delete old bundles and stale staging directories; never the current or pinned bundle."""
    store = _existing_store(store_dir)
    try:
        with store.writer_lock(wait=True, timeout=60):
            removed = gc_bundles(store, keep)
    except ArtifactError as exc:
        _fail(str(exc))
    for bundle_id in removed:
        click.echo(f"deleted {bundle_id}")
    click.echo(f"{len(removed)} bundle(s) deleted")


@main.command("diff")
@click.argument("old")
@click.argument("new")
@STORE_OPTION
@REPO_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def diff_command(old: str, new: str, store_dir: str, repo: str | None, as_json: bool) -> None:
    """Report documents added, removed, renamed and changed between bundles OLD and NEW."""
    store = _existing_store(store_dir)
    try:
        a = resolve_bundle_ref(store, old, repo)
        b = resolve_bundle_ref(store, new, repo)
    except ArtifactError as exc:
        _fail(str(exc))
    report = {"old": a.bundle_id, "new": b.bundle_id, **diff_bundles(a.path, b.path)}
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    if not any(report[key] for key in ("added", "removed", "renamed", "changed")):
        click.echo("no document changes")
    for path in report["added"]:
        click.echo(f"A {path}")
    for path in report["removed"]:
        click.echo(f"D {path}")
    for item in report["renamed"]:
        click.echo(f"R {item['from']} -> {item['to']}")
    for item in report["changed"]:
        click.echo(f"M {item['path']} ({item['chunks_changed']} of {item['chunks_after']} chunks changed)")
