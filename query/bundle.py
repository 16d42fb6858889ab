"""An opened, immutable bundle: Whoosh index, hnswlib index, documents and chunks in memory.

Concurrency: every thread that searches gets its own Whoosh searcher (:meth:`OpenedBundle.thread_searcher`),
since a Whoosh searcher is not thread-safe but several readers of one index are; so searches on one
bundle run side by side instead of queueing on one lock.  What search derives from the bundle once
(filter sets, docnum sets, the longest indexed word) is computed on first use under
:attr:`OpenedBundle.derive_lock` and then only read.
"""

from __future__ import annotations

import json
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hnswlib
from whoosh import index as whoosh_index

from artifacts.embedding import Embedder, load_embedder
from artifacts.errors import EmbedderError
from artifacts.layout import CHUNKS_FILE, DOCS_FILE, HNSW_FILE, HNSW_SPACE, IDS_FILE, TEXT_DIR
from artifacts.manifest import Manifest, read_manifest
from artifacts.records import Chunk, Document, read_records
from artifacts.store import verify_bundle

from .contract import IndexVersion
from .errors import RetrievalUnavailableError


@dataclass
class OpenedBundle:
    """A published bundle opened for reading.  Never mutated after :func:`open_bundle` returns.

    ``chunks`` is in vector-label order (label ``i`` is ``chunks[i]``); ``chunk_index`` maps
    chunk id to that position; ``docs`` maps document path to :class:`Document` (without its
    ``body``, which search never needs: :meth:`document_body` reads it).
    ``text_index`` is the Whoosh index; use it through :meth:`thread_searcher`.
    ``embedder_future`` resolves to the query embedder (:attr:`embedder` waits for it).
    ``vector_lock`` guards hnswlib's search depth (``set_ef``), which is index state, with its query.
    ``derived`` holds what :mod:`query.hybrid` computes once per bundle (see :meth:`derive`).
    ``graph_lock`` serialises the lazily opened read-only graph connection (:meth:`graph_connection`);
    ``graph_cache`` holds what :mod:`query.graph` derives from it once per bundle.
    """

    path: Path
    manifest: Manifest
    docs: dict[str, Document]
    chunks: list[Chunk]
    chunk_index: dict[str, int]
    text_index: Any
    hnsw: hnswlib.Index
    embedder_future: Future[Embedder | None]
    derived: dict[str, Any] = field(default_factory=dict, repr=False)
    derive_lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    vector_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    graph_lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    graph_cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _local: threading.local = field(default_factory=threading.local, repr=False)
    _searchers: list[Any] = field(default_factory=list, repr=False)
    _closed: bool = field(default=False, repr=False)

    @property
    def bundle_id(self) -> str:
        return self.manifest.bundle_id

    @property
    def index_version(self) -> IndexVersion:
        m = self.manifest
        return IndexVersion(commit=m.commit, bundle_id=m.bundle_id, content_digest=m.content_digest)

    @property
    def embedder(self) -> Embedder | None:
        """The query embedder (``None`` when opened without a model); waits while it is still loading.

        Raises :class:`~artifacts.errors.EmbedderError` when it failed to load or differs from the
        bundle's model.
        """
        return self.embedder_future.result()

    def thread_searcher(self, weighting: Any) -> Any:
        """Return the calling thread's Whoosh searcher over ``text/``, opened on its first use.

        ``weighting`` is the Whoosh weighting model used when the searcher is created (one model per
        bundle in practice: :class:`query.hybrid.RSJBM25F`).  The searcher belongs to this thread
        only; all of them are closed by :meth:`close`.  Raises :class:`RetrievalUnavailableError`
        after :meth:`close`.
        """
        searcher = getattr(self._local, "searcher", None)
        if searcher is None or self._closed:
            with self.derive_lock:
                if self._closed:
                    raise RetrievalUnavailableError("bundle is closed")
                searcher = self.text_index.searcher(weighting=weighting)
                self._searchers.append(searcher)
            self._local.searcher = searcher
        return searcher

    def derive(self, key: str, compute: Any) -> Any:
        """Return ``derived[key]``, computing it with ``compute()`` once per bundle (thread-safe)."""
        value = self.derived.get(key)
        if value is None:
            with self.derive_lock:
                value = self.derived.get(key)
                if value is None:
                    value = compute()
                    self.derived[key] = value
        return value

    def document_body(self, path: str) -> str | None:
        """Return the Markdown body of document ``path`` read from ``docs.jsonl``, or ``None`` if absent."""
        for doc in read_records(self.path / DOCS_FILE, Document):
            if doc.path == path:
                return doc.body
        return None

    def graph_connection(self) -> Any:
        """Return the read-only ladybug connection to ``graph/``, opened on first use.

        Hold :attr:`graph_lock` while using it.  Raises
        :class:`~artifacts.errors.BundleIntegrityError` when the database cannot be opened.
        """
        with self.graph_lock:
            if "connection" not in self.graph_cache:
                from artifacts.graphschema import open_graph
                from artifacts.layout import GRAPH_DIR

                self.graph_cache["database"], self.graph_cache["connection"] = open_graph(self.path / GRAPH_DIR)
            return self.graph_cache["connection"]

    def close(self) -> None:
        """Release the Whoosh searchers and the graph connection (the rest is garbage-collected)."""
        with self.derive_lock:
            self._closed = True
            searchers, self._searchers = self._searchers, []
        for searcher in searchers:
            try:
                searcher.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        with self.graph_lock:
            for name in ("connection", "database"):
                handle = self.graph_cache.pop(name, None)
                try:
                    if handle is not None:
                        handle.close()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass


def _load_query_embedder(spec: Any, bundle_id: str, embedder: Embedder | None, load_model: bool) -> Embedder | None:
    model = embedder
    if model is None and load_model:
        model = load_embedder(spec.model_id)
        _single_thread_inference()
    if model is not None and model.spec.fingerprint != spec.fingerprint:
        raise EmbedderError(f"embedder {spec.model_id!r} here differs from the one bundle {bundle_id} was built with")
    return model


def _single_thread_inference() -> None:
    """Run torch inference on one intra-op thread (process-wide) once a torch model is loaded.

    A query is one short sequence: on two cores torch's default pool made MiniLM's query embedding
    6-10x slower than one thread (same vectors), and concurrent requests then compete for the
    same cores; with one thread per request, requests run side by side instead.
    """
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def open_bundle(bundle_dir: Path, *, verify: bool = True, load_model: bool = True,
                embedder: Embedder | None = None, wait_model: bool = True) -> OpenedBundle:
    """Open (and by default verify) the bundle in ``bundle_dir``.

    ``verify``: check every file's size and sha256 against the manifest before use (the deep checks
    of record counts, digests and chunk hashes are ``gitrag verify``'s).  Each record file is parsed
    once; document bodies are not kept (:meth:`OpenedBundle.document_body`).
    ``embedder`` overrides the model named in the manifest (tests); otherwise the manifest's model is
    loaded when ``load_model`` is true and its fingerprint must equal the manifest's.  The model
    loads in a background thread while the bundle is verified and read; ``wait_model`` false returns
    before it is ready (then :attr:`OpenedBundle.embedder` waits and raises its errors), so a CLI
    search runs its BM25 arm meanwhile.
    Raises :class:`~artifacts.errors.BundleIntegrityError`, :class:`~artifacts.errors.FormatVersionError`,
    :class:`~artifacts.errors.EmbedderError` or :class:`RetrievalUnavailableError` when an engine
    cannot be opened.
    """
    bundle_dir = Path(bundle_dir)
    manifest = read_manifest(bundle_dir)
    spec = manifest.config.embedder
    future: Future[Embedder | None] = Future()
    if embedder is None and load_model:
        def load() -> None:
            try:
                future.set_result(_load_query_embedder(spec, manifest.bundle_id, None, True))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the model
                future.set_exception(exc)

        threading.Thread(target=load, name="gitrag-load-embedder", daemon=True).start()
    else:
        future.set_result(_load_query_embedder(spec, manifest.bundle_id, embedder, load_model))
    if verify:
        manifest = verify_bundle(bundle_dir, records=False)
    try:
        docs = {}
        for doc in read_records(bundle_dir / DOCS_FILE, Document):
            doc.body = ""  # search never shows bodies; 40 MB on a large vault
            docs[doc.path] = doc
        by_id = {c.chunk_id: c for c in read_records(bundle_dir / CHUNKS_FILE, Chunk)}
        ids = json.loads((bundle_dir / IDS_FILE).read_text(encoding="utf-8"))
        chunks = [by_id[i] for i in ids]  # vector label order
        ix = whoosh_index.open_dir(str(bundle_dir / TEXT_DIR), readonly=True)
        hnsw = hnswlib.Index(space=HNSW_SPACE, dim=spec.dim)
        hnsw.load_index(str(bundle_dir / HNSW_FILE), max_elements=max(len(chunks), 1))
        hnsw.set_num_threads(1)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise RetrievalUnavailableError("bundle engines failed to open") from exc
    bundle = OpenedBundle(
        path=bundle_dir, manifest=manifest, docs=docs, chunks=chunks,
        chunk_index={c.chunk_id: i for i, c in enumerate(chunks)},
        text_index=ix, hnsw=hnsw, embedder_future=future,
    )
    if wait_model:
        bundle.embedder  # noqa: B018 - raises the loader's error here
    return bundle


__all__ = ["OpenedBundle", "open_bundle"]
