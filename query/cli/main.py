"""``gitrag search`` and ``gitrag serve``: click layers over :mod:`query.search` and
:mod:`query.server.runner`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from artifacts.errors import ArtifactError, BundleIntegrityError
from query.contract import error_body
from query.errors import QueryError, from_artifact_error

if TYPE_CHECKING:  # the server is imported when a command runs, not when the CLI starts
    from artifacts.remote import RemoteStore
    from query.server.replica import Replica


def fail(exc: QueryError | ArtifactError, as_json: bool) -> None:
    """Exit a query command on ``exc``: the contract's error envelope on stdout with ``--json``
    (exit 1), else a one-line click error.  ``artifacts`` errors are mapped by the one mapping,
    :func:`query.errors.from_artifact_error` (``unknown_revision``, ``invalid_at``, ...)."""
    mapped = from_artifact_error(exc) if isinstance(exc, ArtifactError) else exc
    reason, fields = mapped.reason, mapped.fields
    if as_json:
        body = error_body(reason)
        if fields:
            body["errors"] = fields
        click.echo(json.dumps(body, ensure_ascii=False, indent=2))
        sys.exit(1)
    if isinstance(exc, BundleIntegrityError):  # name the files at fault, as `gitrag verify` does
        raise click.ClickException(f"{reason}: {exc}: " + "; ".join(exc.problems)) from exc
    detail = "; ".join(f"{f['field']}: {f['problem']}" for f in fields)
    raise click.ClickException(f"{reason}: {detail or exc}") from exc


def echo_body(body: dict[str, Any], as_json: bool, print_text: Callable[[dict[str, Any]], None]) -> None:
    """Print a command's response ``body``: with ``--json`` the same JSON as its HTTP endpoint, else
    ``print_text(body)``."""
    if as_json:
        click.echo(json.dumps(body, ensure_ascii=False, indent=2))
    else:
        print_text(body)


@click.command("search")
@click.argument("query")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False),
              help="Bundle store directory.")
@click.option("--limit", default=10, show_default=True, help="Number of results.")
@click.option("--max-per-document", default=1, show_default=True,
              help="Results per document (the HTTP API's default is 3).")
@click.option("--all", "include_unpublished", is_flag=True, help="Include documents with published: false.")
@click.option("--base-url", default=None, envvar="GITRAG_BASE_URL",
              help="Base URL for source_url (document path appended; {commit} becomes the answering commit).")
@click.option("--debug", is_flag=True, help="Show per-arm ranks and scores.")
@click.option("--no-verify", is_flag=True, help="Skip checking the bundle's file hashes against its manifest.")
@click.option("--json", "as_json", is_flag=True, help="Print the same JSON as POST /search.")
def search_command(query: str, store_dir: str, limit: int, max_per_document: int, include_unpublished: bool,
                   base_url: str | None, debug: bool, no_verify: bool, as_json: bool) -> None:
    """Search the CURRENT bundle of a store with hybrid retrieval (BM25 + vectors, RRF).

    Shows one result per document (--max-per-document N for more) with the best-matching passage
    of each, matched words highlighted.  The bundle's files are checked against the hashes in its
    manifest first (as the server does), unless --no-verify; `gitrag verify` also checks records,
    counts and digests.  Each call opens the bundle and loads the embedding model (seconds); for
    repeated queries run `gitrag serve` and POST /search.
    """
    from artifacts.store import Store, verify_in_background

    try:
        if not Path(store_dir).is_dir():
            raise click.ClickException(f"no store at {store_dir}")
        bundle_dir = Store(store_dir).current_path()
        # The file hashes are checked while the search stack is imported (numpy, Whoosh, hnswlib: most of
        # a CLI search's time); open_bundle waits for them before it returns.
        verification = None if no_verify else verify_in_background(bundle_dir)
        from query.bundle import open_bundle
        from query.search.request import SearchOptions, parse_search_request
        from query.search.response import search

        request = parse_search_request({"query": query, "limit": limit, "max_per_document": max_per_document,
                                        "published_only": not include_unpublished, "debug": debug})
        # The model loads while the bundle is read and the BM25 arm runs.
        bundle = open_bundle(bundle_dir, verify=not no_verify, wait_model=False, verification=verification)
        body = search(bundle, request, SearchOptions(base_url=base_url))
    except (QueryError, ArtifactError) as exc:
        fail(exc, as_json)
    if as_json:
        click.echo(json.dumps(body, ensure_ascii=False, indent=2))
        return
    manifest = bundle.manifest
    click.echo(f"searched {manifest.commit[:12]} \"{manifest.commit_summary or ''}\" "
               f"(bundle {manifest.bundle_id}, {manifest.counts.documents} documents)")
    for warning in body.get("warnings", []):
        click.echo(f"note: {warning}")
    if not body["results"]:
        click.echo("no results")
        return
    color = sys.stdout.isatty()
    for result in body["results"]:
        heading = " > ".join(result["heading_path"])
        click.echo(f"{result['rank']:>2}. {result['document_path']}  [{result['title']}]"
                   + (f"  § {heading}" if heading else "") + f"  score={result['score']:.4f}"
                   + ("  (matched by meaning)" if result.get("match") == "semantic" else ""))
        click.echo(f"    {_emphasise(result['snippet'], color)}")
        if debug and "debug" in result:
            arms = result["debug"]
            click.echo(f"    bm25 rank={arms.get('bm25_rank')} score={arms.get('bm25_score')}  "
                       f"vector rank={arms.get('vector_rank')} score={arms.get('vector_score')}  "
                       f"fused={arms.get('fused_score')}" + ("  anchor" if arms.get("anchor") else ""))


def _gitrag_argv() -> list[str]:
    from artifacts.jobs import gitrag_command

    return gitrag_command()


def _emphasise(snippet: str, color: bool) -> str:
    """Render ``**word**`` marks of a snippet bold on a terminal (kept as ``**`` otherwise)."""
    if not color:
        return snippet
    parts = snippet.split("**")
    return "".join(click.style(p, bold=True) if i % 2 else p for i, p in enumerate(parts))


@click.command("serve")
@click.option("--store", "store_dir", default=None, type=click.Path(file_okay=False),
              help="Bundle store directory (or --from and --cache).")
@click.option("--from", "remote_url", default=None,
              help="Replica: follow the remote CURRENT of s3://BUCKET/PREFIX (published by `gitrag publish`).")
@click.option("--cache", "cache_dir", default=None, type=click.Path(file_okay=False),
              help="Replica: local directory for the bundles fetched from --from (a bundle store).")
@click.option("--cache-max-gb", default=10.0, show_default=True, type=click.FloatRange(min=0.001),
              help="Replica: bound of the cache (GB, least recently used bundles evicted first).")
@click.option("--endpoint-url", default=None, envvar="GITRAG_S3_ENDPOINT_URL",
              help="Replica: S3-compatible server (MinIO, R2, Ceph RGW...); default AWS or $AWS_ENDPOINT_URL_S3.")
@click.option("--remote-poll-interval", default=2.0, show_default=True, type=click.FloatRange(min=0.05),
              help="Replica: seconds between conditional GETs of the remote CURRENT.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind (loopback only without API keys).")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(1, 65535), help="TCP port.")
@click.option("--base-url", default=None, envvar="GITRAG_BASE_URL",
              help="Base URL for source_url (document path appended; {commit} becomes the answering commit).")
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False), envvar="GITRAG_SERVER_CONFIG",
              help="TOML server config (keys, CORS, limits, webhook); GITRAG_*_KEY variables override it.")
@click.option("--poll-interval", default=None, type=float, help="Seconds between CURRENT checks (default 2).")
@click.option("--log-level", default=None, envvar="GITRAG_LOG_LEVEL",
              type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
              help="Log level of the JSON log lines on stderr (default info; env GITRAG_LOG_LEVEL).")
@click.option("--workers", default=None, type=click.IntRange(1, 64), envvar="GITRAG_WORKERS",
              help="Server processes sharing the port (SO_REUSEPORT, Linux); each opens the bundle "
                   "(memory x N) and searches on its own core.  Default: the usable cores, capped by "
                   "the available memory (see docs/server.md).")
@click.option("--fallback-verified", is_flag=True, default=None,
              help="If CURRENT fails verification, serve the newest older bundle that verifies (TOML: "
                   "fallback_verified); /health says which and why.")
def serve_command(store_dir: str | None, remote_url: str | None, cache_dir: str | None, cache_max_gb: float,
                  endpoint_url: str | None, remote_poll_interval: float, host: str, port: int, base_url: str | None,
                  config_file: str | None, poll_interval: float | None, log_level: str | None, workers: int | None,
                  fallback_verified: bool | None) -> None:
    """Serve the HTTP API (see /openapi.json) over the store's CURRENT bundle, swapping when it changes.

    Logs one JSON line per request (route, status, duration_ms, bundle_id), one per bundle swap
    (the served commit and bundle, also at start) and one per failed reload, on stderr.
    With --workers N, N processes serve (one search uses about one core); each follows CURRENT,
    rate limits are split between them, and /metrics sums their request counters.  Without it, one
    process per usable core, as many as the available memory holds (each opens the bundle).
    With --from s3://BUCKET/PREFIX --cache DIR the server is a replica: it polls the remote CURRENT,
    downloads and verifies each new bundle into DIR and swaps by the same rule (see docs/deploy.md).
    """
    from artifacts.logs import configure_logging
    from query.config import load_config
    from query.server.workers import WorkerSlot, default_worker_count, run_workers

    try:
        configure_logging(log_level)
        # the remote first (URL, endpoint, AWS profile): a bad one is one error line, before any listening
        remote = _open_remote(remote_url, endpoint_url) if remote_url else None
        replica_argv, store_dir = _replica_args(store_dir, remote_url, cache_dir, cache_max_gb,
                                                remote.endpoint_url if remote is not None else None,
                                                remote_poll_interval)
        what = f"{remote_url} (replica, cache {store_dir})" if remote_url else store_dir
        config = load_config(config_file)
        if fallback_verified:
            config.fallback_verified = True
        config.check(host)
        slot = WorkerSlot.from_env()
        auto = ""
        if slot is None and workers is None:
            count = default_worker_count(_current_bundle_dir(store_dir))
            workers, auto = count.count, f" (default: {count.describe()})"
        if slot is None and workers is not None and workers > 1:
            click.echo(f"gitrag serving {what} on http://{host}:{port} with {workers} workers{auto}", err=True)
            argv = [*_gitrag_argv(), "serve", *replica_argv, "--host", host, "--port", str(port)]
            for flag, value in (("--base-url", base_url), ("--config", config_file),
                                ("--poll-interval", poll_interval), ("--log-level", log_level)):
                if value is not None:
                    argv += [flag, str(value)]
            if fallback_verified:
                argv.append("--fallback-verified")
            sys.exit(run_workers(argv, workers, host, port))
        from query.search.request import SearchOptions
        from query.server.runner import run_server

        if slot is None:
            click.echo(f"gitrag serving {what} on http://{host}:{port}", err=True)
        replica = _make_replica(remote, store_dir, cache_max_gb, remote_poll_interval) if remote is not None else None
        run_server(store_dir, host=host, port=port, options=SearchOptions(base_url=base_url), config=config,
                   poll_interval=poll_interval, worker=slot, replica=replica)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or 'address unavailable'}") from exc


def _current_bundle_dir(store_dir: str) -> str | None:
    """The directory of the store's ``CURRENT`` bundle, or ``None`` (no store, no ``CURRENT`` yet)."""
    from artifacts.store import Store

    try:
        path = Store(store_dir).current_path()
    except (ArtifactError, OSError):
        return None
    return str(path) if path.is_dir() else None


def _replica_args(store_dir: str | None, remote_url: str | None, cache_dir: str | None, cache_max_gb: float,
                  endpoint_url: str | None, remote_poll_interval: float) -> tuple[list[str], str]:
    """Check ``--store`` / ``--from --cache``; return the worker argv naming them and the local store to serve."""
    if remote_url is None:
        if store_dir is None:
            raise click.UsageError("give --store DIR, or --from s3://BUCKET/PREFIX --cache DIR (a replica)")
        if cache_dir is not None:
            raise click.UsageError("--cache goes with --from")
        return ["--store", store_dir], store_dir
    if store_dir is not None or cache_dir is None:
        raise click.UsageError("a replica takes --from s3://BUCKET/PREFIX and --cache DIR (not --store)")
    argv = ["--from", remote_url, "--cache", cache_dir, "--cache-max-gb", str(cache_max_gb),
            "--remote-poll-interval", str(remote_poll_interval)]
    return argv + (["--endpoint-url", endpoint_url] if endpoint_url else []), cache_dir


def _open_remote(remote_url: str, endpoint_url: str | None) -> RemoteStore:
    """The :class:`artifacts.remote.RemoteStore` of ``serve --from``; a bad URL or endpoint, an unknown
    ``AWS_PROFILE`` or a missing boto3 is a click error (one line, exit 1)."""
    from artifacts.remote import RemoteStore

    try:
        return RemoteStore(remote_url, endpoint_url=endpoint_url)
    except ArtifactError as exc:
        raise click.ClickException(str(exc)) from exc


def _make_replica(remote: RemoteStore, cache_dir: str, cache_max_gb: float, remote_poll_interval: float) -> Replica:
    """The :class:`query.server.replica.Replica` of ``serve --from`` over ``remote`` (:func:`_open_remote`)."""
    from artifacts.store import Store
    from query.server.replica import Replica

    return Replica(remote, Store(cache_dir), poll_interval=remote_poll_interval,
                   cache_bytes=int(cache_max_gb * 1e9))
