"""Build one commit-addressed bundle: Git tree -> documents -> chunks -> embeddings -> indexes -> publish."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import resource
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from artifacts import __version__
from artifacts.config import BuildConfig, ChunkConfig
from artifacts.embedding import Embedder, load_embedder
from artifacts.hashing import combine_digests
from artifacts.layout import CHUNKS_FILE, DOCS_FILE, GRAPH_DIR, TEXT_DIR, VECTORS_DIR
from artifacts.manifest import BuildStats, Counts, Manifest, SourceInfo
from artifacts.records import Chunk, Document, SkippedFile, make_chunk_id
from artifacts.store import Store, make_bundle_id

from .chunking import chunk_document, count_tokens
from .errors import BuildError, SkipFile
from .gitsource import iter_markdown, open_repo, resolve_commit
from .graph import write_graph
from .markdown import parse_markdown, resolve_links
from .textindex import write_text_index
from .vectors import write_vectors

Progress = Callable[[str, int, int], None]
"""Progress callback: (stage name, items done, items total)."""


@dataclass
class BuildResult:
    """What :func:`build_bundle` did.  ``reused`` is true when the bundle already existed."""

    bundle_id: str
    bundle_path: Path
    manifest: Manifest
    reused: bool = False
    current: bool = False
    timings: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, object]:
        """Return the JSON summary printed by ``gitrag build --json``."""
        m = self.manifest
        return {
            "bundle_id": self.bundle_id,
            "bundle_path": str(self.bundle_path),
            "commit": m.commit,
            "documents": m.counts.documents,
            "chunks": m.counts.chunks,
            "vectors": m.counts.vectors,
            "skipped": [s.model_dump() for s in m.skipped],
            "timings": m.stats.timings,
            "peak_rss_mb": m.stats.peak_rss_mb,
            "content_digest": m.content_digest,
            "reused": self.reused,
            "current": self.current,
        }


def embedding_text(chunk: Chunk) -> str:
    """Return the text embedded for a chunk: title, heading path, then the chunk text."""
    head = chunk.title
    if chunk.heading_path:
        head += "\n" + " > ".join(chunk.heading_path)
    return f"{head}\n\n{chunk.text}"


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
) -> BuildResult:
    """Build (or find) the bundle of commit ``rev`` and point ``CURRENT`` at it unless pinned.

    Reads the commit's tree through pygit2, parses every ``*.md`` (bad files are skipped with a
    recorded reason), chunks, embeds, writes Whoosh, hnswlib and graph indexes in a staging
    directory and publishes it atomically.  Raises :class:`~indexer.errors.SourceError` for a bad
    repository or revision, :class:`~artifacts.errors.EmbedderError` when the model cannot load,
    :class:`~artifacts.errors.StoreLockedError` when another build holds the store, and
    :class:`BuildError` when writing fails; in every error case ``CURRENT`` is unchanged.
    """
    report = progress or (lambda stage, done, total: None)
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[stage] = round(timings.get(stage, 0.0) + now - clock, 3)
        clock = now

    repo = open_repo(repo_path)
    info = resolve_commit(repo, rev)
    model = embedder if embedder is not None and not isinstance(embedder, str) else load_embedder(embedder)
    config = BuildConfig(embedder=model.spec, chunking=chunking or ChunkConfig())
    if max_file_bytes is not None:
        config.max_file_bytes = max_file_bytes
    fingerprint = config.fingerprint()
    bundle_id = make_bundle_id(info.commit, fingerprint)
    lap("load_model")

    store = Store(store_dir).ensure()
    with store.writer_lock(wait=wait_for_lock):
        store.clean_staging()
        existing = store.bundles_dir / bundle_id
        if existing.exists():
            from artifacts.manifest import read_manifest

            manifest = read_manifest(existing)
            current = _maybe_set_current(store, bundle_id)
            return BuildResult(bundle_id, existing, manifest, reused=True, current=current)

        staging = store.new_staging()
        try:
            docs, skipped = _parse_tree(repo, info.tree, config.max_file_bytes, report)
            lap("parse")
            chunks = _chunk_all(docs, config.chunking)
            lap("chunk")
            vectors = _embed(model, chunks, report)
            lap("embed")
            _write_records(staging, docs, chunks)
            write_text_index(chunks, {d.path: d for d in docs}, staging / TEXT_DIR)
            lap("text_index")
            write_vectors(vectors, [c.chunk_id for c in chunks], staging / VECTORS_DIR)
            lap("vector_index")
            chunk_ids: dict[str, list[str]] = {}
            for chunk in chunks:
                chunk_ids.setdefault(chunk.path, []).append(chunk.chunk_id)
            work = staging / "_work"
            work.mkdir()
            graph = write_graph(docs, chunk_ids, staging / GRAPH_DIR, work_dir=work)
            shutil.rmtree(work)
            lap("graph")
            digests = {
                "documents": _digest_lines(f"{d.path}\t{d.blob_id}" for d in docs),
                "chunks": _digest_lines(f"{c.chunk_id}\t{c.sha256}" for c in chunks),
                "vectors": _vector_digest(vectors),
                "graph": graph.digest,
            }
            manifest = Manifest(
                bundle_id=bundle_id,
                commit=info.commit,
                tree=info.tree,
                parent_commits=info.parents,
                commit_time=info.time,
                commit_summary=info.summary,
                source=SourceInfo(repo=str(Path(repo.path).resolve()), ref=branch),
                config=config,
                config_fingerprint=fingerprint,
                built_from=None,
                counts=Counts(
                    documents=len(docs), chunks=len(chunks), vectors=int(vectors.shape[0]),
                    nodes=graph.nodes, relationships=graph.relationships, skipped=len(skipped),
                ),
                skipped=skipped,
                content_digest=combine_digests(digests),
                digests=digests,
                graph_engine=_graph_engine(),
                tool_version=__version__,
                built_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                stats=BuildStats(embeddings_computed=len(chunks), embeddings_reused=0),
            )
            lap("digest")
            manifest.stats.timings = timings
            manifest.stats.peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
            final = store.publish(staging, manifest)
            lap("publish")
        except BaseException as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, Exception) and not isinstance(exc, BuildError):
                raise BuildError(f"building {info.commit[:12]} failed: {type(exc).__name__}") from exc
            raise
        current = _maybe_set_current(store, bundle_id)
        return BuildResult(bundle_id, final, manifest, current=current, timings=timings)


def _maybe_set_current(store: Store, bundle_id: str) -> bool:
    if store.is_pinned():
        return store.current_id() == bundle_id
    store.set_current(bundle_id)
    return True


def _parse_tree(repo, tree: str, max_bytes: int, report: Progress) -> tuple[list[Document], list[SkippedFile]]:  # type: ignore[no-untyped-def]
    files = list(iter_markdown(repo, tree))
    docs: list[Document] = []
    skipped: list[SkippedFile] = []
    for i, source in enumerate(files):
        try:
            if source.size > max_bytes:
                raise SkipFile("too_large", f"{source.size} bytes > limit {max_bytes}")
            docs.append(parse_markdown(source.path, source.read(), blob_id=source.blob_id, max_bytes=max_bytes))
        except SkipFile as skip:
            skipped.append(SkippedFile(path=source.path, reason=skip.reason, detail=skip.detail))
        except Exception as exc:  # noqa: BLE001 - a bad file never aborts the build
            skipped.append(SkippedFile(path=source.path, reason="parse_error", detail=type(exc).__name__))
        report("parse", i + 1, len(files))
    # Two files may normalise to the same NFC path; keep the first, record the other.
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
    return unique, skipped


def _chunk_all(docs: list[Document], config: ChunkConfig) -> list[Chunk]:
    chunks: list[Chunk] = []
    for doc in docs:
        pieces = chunk_document(doc, config)
        if not pieces:
            # A document with no body text (front matter only) stays findable by its title.
            text = f"# {doc.title}"
            pieces = [Chunk(
                chunk_id=make_chunk_id(doc.path, 0), path=doc.path, ordinal=0, title=doc.title,
                heading_path=[], text=text, tokens=count_tokens(text),
                sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), published=doc.published,
            )]
        chunks.extend(pieces)
    return chunks


def _embed(model: Embedder, chunks: list[Chunk], report: Progress, batch: int = 64) -> np.ndarray:
    parts = []
    total = len(chunks)
    for start in range(0, total, batch):
        texts = [embedding_text(c) for c in chunks[start : start + batch]]
        parts.append(model.embed_passages(texts))
        report("embed", min(start + batch, total), total)
    if not parts:
        return np.zeros((0, model.spec.dim), dtype=np.float32)
    return np.concatenate(parts).astype(np.float32, copy=False)


def _write_records(staging: Path, docs: list[Document], chunks: list[Chunk]) -> None:
    with open(staging / DOCS_FILE, "w", encoding="utf-8") as handle:
        for doc in docs:
            handle.write(json.dumps(doc.model_dump(mode="json"), sort_keys=True, ensure_ascii=False) + "\n")
    with open(staging / CHUNKS_FILE, "w", encoding="utf-8") as handle:
        for chunk in chunks:
            handle.write(json.dumps(chunk.model_dump(mode="json"), sort_keys=True, ensure_ascii=False) + "\n")


def _digest_lines(lines) -> str:  # type: ignore[no-untyped-def]
    digest = hashlib.sha256()
    for line in sorted(lines):
        digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()


def _vector_digest(vectors: np.ndarray) -> str:
    """sha256 over vectors rounded to 4 decimals (float noise between batchings must not count)."""
    rounded = np.round(vectors.astype(np.float64), 4) + 0.0  # + 0.0 turns -0.0 into 0.0
    return hashlib.sha256(np.ascontiguousarray(rounded).tobytes()).hexdigest()


def _graph_engine() -> dict[str, str]:
    from importlib.metadata import version

    return {"name": "ladybug", "version": version("ladybug")}
