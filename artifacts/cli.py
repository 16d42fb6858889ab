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
from typing import Any

import click

from . import __version__
from .errors import ArtifactError, BundleIntegrityError
from .store import Store, verify_bundle

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
        return ep.load() if ep is not None else None


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
def verify_command(store_dir: str, bundle: str | None, as_json: bool) -> None:
    """Re-hash every file of BUNDLE (default: CURRENT) against its manifest; exit 1 on mismatch."""
    store = Store(store_dir)
    report: dict[str, Any]
    try:
        path = store.bundle_path(bundle) if bundle else store.current_path()
        manifest = verify_bundle(path)
        report = {"ok": True, "bundle_id": manifest.bundle_id, "files": len(manifest.files), "problems": []}
    except BundleIntegrityError as exc:
        report = {"ok": False, "bundle_id": bundle, "problems": exc.problems or [str(exc)]}
    except ArtifactError as exc:
        report = {"ok": False, "bundle_id": bundle, "problems": [str(exc)]}
    if as_json:
        click.echo(json.dumps(report, indent=2))
    elif report["ok"]:
        click.echo(f"ok: {report['bundle_id']} ({report['files']} files verified)")
    else:
        for problem in report["problems"]:
            click.echo(problem, err=True)
    sys.exit(0 if report["ok"] else 1)
