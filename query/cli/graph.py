"""``gitrag graph`` and ``gitrag graph-export``: thin click layers over :mod:`query.graph` and
:mod:`query.graph.export`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from artifacts.errors import ArtifactError
from query.cli.bundle_at import bundle_dir_at, open_bundle_at
from query.cli.main import echo_body, fail
from query.errors import QueryError


@click.command("graph")
@click.argument("question")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False), help="Bundle store directory.")
@click.option("--at", default=None, help="Revision as for `gitrag use` (default: CURRENT).")
@click.option("--limit", default=100, show_default=True, help="Rows per list (persons, works, documents).")
@click.option("--all", "include_unpublished", is_flag=True, help="Include pages with published: false.")
@click.option("--base-url", default=None, envvar="GITRAG_BASE_URL",
              help="Base URL for source_url (document path appended; {commit} becomes the answering commit).")
@click.option("--json", "as_json", is_flag=True, help="Print the same JSON as POST /graph.")
def graph_command(question: str, store_dir: str, at: str | None, limit: int, include_unpublished: bool,
                  base_url: str | None, as_json: bool) -> None:
    """Answer QUESTION from the knowledge graph: facts, counts, paths, documents (or say why not)."""
    from query.graph.dispatch import answer_graph

    try:
        with open_bundle_at(store_dir, at, load_model=False) as bundle:
            body = answer_graph(bundle, {"query": question, "limit": limit,
                                         "published_only": not include_unpublished}, base_url=base_url)
    except (QueryError, ArtifactError) as exc:
        fail(exc, as_json)
        return
    echo_body(body, as_json, _print_text)


def _print_text(body: dict[str, Any]) -> None:
    head = f"{body['status']}" + (f" ({body['reason']})" if body["reason"] else "") + f"  intent={body['intent']}"
    click.echo(head)
    if body.get("message"):
        click.echo(f"  {body['message']}")
    if body.get("aggregation"):
        agg = body["aggregation"]
        click.echo(f"  count: {agg['count']} (exact)" + ("  [list truncated]" if body["truncated"] else ""))
    for candidate in body.get("candidates", []):
        works = ", ".join(f"{w['type']} {w['year']}" for w in candidate["works"])
        click.echo(f"  candidate: {candidate['person']}  [{candidate['source_id']}] {candidate['path']}  {works}")
    for fact in body["facts"]:
        obj = fact["object"]
        if isinstance(obj, dict):
            label = obj.get("type_label") or obj.get("type")
            obj = f"{label} {obj.get('year')}: " + (obj.get("title") or "(no title on the page)")
        click.echo(f"  {fact['subject']} -{fact['predicate']}-> {obj}  [{fact['source_id']}]")
    for source in body["sources"]:
        click.echo(f"  [{source['source_id']}] {source['document_path']}")


@click.command("graph-export")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False), help="Bundle store directory.")
@click.option("--at", default=None, help="Revision as for `gitrag use` (default: CURRENT).")
@click.option("--format", "fmt", type=click.Choice(["graphml", "json"]), default="graphml", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None, help="File to write (default stdout).")
def graph_export_command(store_dir: str, at: str | None, fmt: str, output: str | None) -> None:
    """Export the graph of a bundle as GraphML or JSON (nodes and edges with all properties)."""
    from artifacts.graphschema import open_graph
    from artifacts.layout import GRAPH_DIR
    from query.graph.export import export_graph

    try:
        db, conn = open_graph(bundle_dir_at(store_dir, at) / GRAPH_DIR)
    except ArtifactError as exc:
        fail(exc, False)  # the reasons of `graph` and HTTP: unknown_revision, invalid_at, ...
        return
    try:
        text = export_graph(conn, fmt)
    finally:
        conn.close()
        db.close()
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
