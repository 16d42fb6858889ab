"""``gitrag publish``: upload a store's bundles to S3-compatible storage, the remote ``CURRENT`` last.

A thin click layer over :func:`artifacts.remote.publish_store`; ``gitrag use REV --to URL``
(:mod:`artifacts.cli`) is the remote rollback.  Credentials come from the standard AWS chain and are
never printed.
"""

from __future__ import annotations

import json
from typing import Any

import click

from .errors import ArtifactError, BundleIntegrityError

ENDPOINT_OPTION = click.option(
    "--endpoint-url", default=None, envvar="GITRAG_S3_ENDPOINT_URL",
    help="S3-compatible server (MinIO, R2, Ceph RGW...); default $AWS_ENDPOINT_URL_S3 / $AWS_ENDPOINT_URL, else AWS.")
PATH_STYLE_OPTION = click.option(
    "--path-style/--virtual-hosted", "path_style", default=None,
    help="Addressing: https://host/BUCKET/key (default with --endpoint-url) or https://BUCKET.host/key (AWS default).")


def open_remote(url: str, endpoint_url: str | None, path_style: bool | None) -> Any:
    """Return a :class:`~artifacts.remote.RemoteStore`; a bad URL or a missing boto3 is a click error."""
    from .remote import RemoteStore

    try:
        return RemoteStore(url, endpoint_url=endpoint_url, path_style=path_style)
    except ArtifactError as exc:
        raise click.ClickException(str(exc)) from exc


@click.command("publish")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False), help="Bundle store directory.")
@click.option("--to", "url", required=True, help="Remote store: s3://BUCKET/PREFIX.")
@ENDPOINT_OPTION
@PATH_STYLE_OPTION
@click.option("--bundle", "bundle_ids", multiple=True,
              help="Publish only this bundle id (repeatable; CURRENT's is always included). Default: every bundle.")
@click.option("--no-current", is_flag=True, help="Upload bundles but leave the remote CURRENT where it is.")
@click.option("--force-current", is_flag=True,
              help="Move the remote CURRENT even when the local CURRENT is not a descendant of it, "
                   "or when it names no bundle (overwritten).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def publish_command(store_dir: str, url: str, endpoint_url: str | None, path_style: bool | None,
                    bundle_ids: tuple[str, ...], no_current: bool, force_current: bool, as_json: bool) -> None:
    """Upload the store's bundles to object storage, then point the remote CURRENT at the local CURRENT.

    Content-addressed: a file whose sha256 is already stored with its size is not uploaded again
    (bytes uploaded and reused are reported); every blob of every published bundle is checked (one
    HEAD: present, right size), so running it again repairs a missing or truncated blob.  The
    content of a stored blob is not read: replicas re-hash every file and refuse a bundle that fails.
    Blobs first, then each manifest, then the remote CURRENT, so replicas
    (`gitrag serve --from URL`) never see a CURRENT naming an incomplete bundle, and a failed or
    killed publish leaves the remote CURRENT unchanged: run it again to finish.  The remote CURRENT
    moves only forward (to a descendant commit) unless --force-current, which also overwrites a
    remote CURRENT that names no bundle; `gitrag use REV --to URL` rolls back.  --json reports
    `current` (the remote CURRENT afterwards), `current_moved` and, when it did not move,
    `current_reason` (not_requested, already_current, not_a_descendant) and `note`.
    Credentials: the standard AWS chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE,
    ~/.aws, instance roles), never printed.
    """
    from .remote import publish_store
    from .store import Store

    store = Store(store_dir)
    if not store.root.is_dir():
        raise click.ClickException(f"no store at {store_dir}")
    remote = open_remote(url, endpoint_url, path_style)
    try:
        report = publish_store(store, remote, bundle_ids=list(bundle_ids) or None, move_current=not no_current,
                               force_current=force_current)
    except BundleIntegrityError as exc:
        raise click.ClickException(f"{exc}: " + "; ".join(exc.problems)) from exc
    except ArtifactError as exc:
        raise click.ClickException(f"{exc} (the remote CURRENT is unchanged)") from exc
    if as_json:
        click.echo(json.dumps({"url": remote.url, **report.as_dict()}, indent=2))
        return
    repaired = f" ({report.files_repaired} missing or damaged, uploaded again)" if report.files_repaired else ""
    click.echo(f"published {len(report.bundles)} bundle(s) to {remote.url}: uploaded {report.files_uploaded} "
               f"file(s){repaired}, {report.bytes_uploaded / 1e6:.2f} MB; reused {report.files_reused} file(s), "
               f"{report.bytes_reused / 1e6:.2f} MB already stored (checked: present, right size)")
    if report.current_moved:
        click.echo(f"remote CURRENT -> {report.current}")
    elif report.current_reason == "already_current":
        click.echo(f"remote CURRENT already at {report.current}")
    elif report.note:
        click.echo(report.note)
