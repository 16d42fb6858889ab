"""``gitrag mcp``: serve a store's bundles to an assistant over MCP on stdio (see :mod:`query.server.mcp`)."""

from __future__ import annotations

import logging
import sys

import click


@click.command("mcp")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False, exists=True),
              help="Bundle store directory.")
@click.option("--base-url", default=None, envvar="GITRAG_BASE_URL",
              help="Base URL for source_url (document path appended; {commit} becomes the answering commit).")
def mcp_command(store_dir: str, base_url: str | None) -> None:
    """Serve the tools search, graph, answer and list_bundles over MCP on stdin/stdout.

    For Claude Desktop, Claude Code and other MCP clients that start a local command.  The
    CURRENT bundle is opened (and verified) at start and re-read before a tool call when it
    changed; results are the same JSON as the HTTP API.  Logs go to stderr.
    """
    import anyio

    from artifacts.store import Store
    from query.search.request import SearchOptions
    from query.server.holder import BundleHolder
    from query.server.mcp import serve_stdio

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="gitrag mcp: %(message)s")
    holder = BundleHolder(Store(store_dir))
    holder.load_current()
    if holder.bundle is None:
        click.echo("gitrag mcp: no bundle is served yet; tools answer retrieval_unavailable until one is built",
                   err=True)
    try:
        anyio.run(serve_stdio, holder, SearchOptions(base_url=base_url))
    finally:
        holder.close()
