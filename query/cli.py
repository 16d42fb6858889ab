"""``gitrag search`` and ``gitrag serve``: thin click layers over :mod:`query.hybrid` and :mod:`query.server`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from artifacts.errors import ArtifactError

from .contract import error_body
from .errors import QueryError


@click.command("search")
@click.argument("query")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False),
              help="Bundle store directory.")
@click.option("--limit", default=10, show_default=True, help="Number of results.")
@click.option("--max-per-document", default=3, show_default=True, help="Results per document.")
@click.option("--all", "include_unpublished", is_flag=True, help="Include documents with published: false.")
@click.option("--base-url", default=None, envvar="GITRAG_BASE_URL",
              help="Base URL for source_url (document path appended).")
@click.option("--debug", is_flag=True, help="Show per-arm ranks and scores.")
@click.option("--no-verify", is_flag=True, help="Skip checking the bundle's file hashes against its manifest.")
@click.option("--json", "as_json", is_flag=True, help="Print the same JSON as POST /search.")
def search_command(query: str, store_dir: str, limit: int, max_per_document: int, include_unpublished: bool,
                   base_url: str | None, debug: bool, no_verify: bool, as_json: bool) -> None:
    """Search the CURRENT bundle of a store with hybrid retrieval (BM25 + vectors, RRF).

    The bundle's files are checked against the hashes in its manifest first (as the server does),
    unless --no-verify; `gitrag verify` also checks records, counts and digests.
    """
    from artifacts.store import Store

    from .bundle import open_bundle
    from .hybrid import SearchOptions, parse_search_request, search

    try:
        request = parse_search_request({"query": query, "limit": limit, "max_per_document": max_per_document,
                                        "published_only": not include_unpublished, "debug": debug})
        if not Path(store_dir).is_dir():
            raise click.ClickException(f"no store at {store_dir}")
        # The model loads while the bundle is verified and read and the BM25 arm runs.
        bundle = open_bundle(Store(store_dir).current_path(), verify=not no_verify, wait_model=False)
        body = search(bundle, request, SearchOptions(base_url=base_url))
    except (QueryError, ArtifactError) as exc:
        reason = exc.reason if isinstance(exc, QueryError) else "retrieval_unavailable"
        fields = exc.fields if isinstance(exc, QueryError) else []
        if as_json:
            body = error_body(reason)
            if fields:
                body["errors"] = fields
            click.echo(json.dumps(body, ensure_ascii=False, indent=2))
            sys.exit(1)
        detail = "; ".join(f"{f['field']}: {f['problem']}" for f in fields)
        raise click.ClickException(f"{reason}: {detail or exc}") from exc
    if as_json:
        click.echo(json.dumps(body, ensure_ascii=False, indent=2))
        return
    if not body["results"]:
        click.echo("no results")
        return
    for result in body["results"]:
        heading = " > ".join(result["heading_path"])
        click.echo(f"{result['rank']:>2}. {result['document_path']}  [{result['title']}]"
                   + (f"  § {heading}" if heading else "") + f"  score={result['score']:.4f}")
        snippet = " ".join(result["text"].split())[:160]
        click.echo(f"    {snippet}")
        if debug and "debug" in result:
            arms = result["debug"]
            click.echo(f"    bm25 rank={arms.get('bm25_rank')} score={arms.get('bm25_score')}  "
                       f"vector rank={arms.get('vector_rank')} score={arms.get('vector_score')}  "
                       f"fused={arms.get('fused_score')}" + ("  anchor" if arms.get("anchor") else ""))


@click.command("serve")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False),
              help="Bundle store directory.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind (loopback only without API keys).")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(1, 65535), help="TCP port.")
@click.option("--base-url", default=None, envvar="GITRAG_BASE_URL",
              help="Base URL for source_url (document path appended).")
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False), envvar="GITRAG_SERVER_CONFIG",
              help="TOML server config (keys, CORS, limits, webhook); GITRAG_*_KEY variables override it.")
@click.option("--poll-interval", default=None, type=float, help="Seconds between CURRENT checks (default 2).")
def serve_command(store_dir: str, host: str, port: int, base_url: str | None, config_file: str | None,
                  poll_interval: float | None) -> None:
    """Serve the HTTP API (see /openapi.json) over the store's CURRENT bundle, swapping when it changes."""
    from .config import load_config
    from .hybrid import SearchOptions
    from .server import run_server

    try:
        config = load_config(config_file)
        config.check(host)
        click.echo(f"gitrag serving {store_dir} on http://{host}:{port}", err=True)
        run_server(store_dir, host=host, port=port, options=SearchOptions(base_url=base_url), config=config,
                   poll_interval=poll_interval)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or 'address unavailable'}") from exc
