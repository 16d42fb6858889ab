"""BM25 inputs of a bundle as arrays (``bm25/``), scored with numpy instead of Whoosh's matchers.

Whoosh stays the text index: analysis, term dictionary, typo expansion, highlighting.  This file
holds what Whoosh's per-field BM25 scorer (:class:`whoosh.scoring.BM25F`, which scores each field
on its own and sums) reads for every posting: the term's weight in a chunk (its term frequency)
and the chunk's length in that field.  They are recorded from the very postings the Whoosh writer
writes (:class:`PostingRecorder`), so the analysis is Whoosh's by construction, and they are raw
inputs, not impacts: the collection statistics (chunks ``N``, document frequency ``df``, average
field length) are computed when the file is loaded, from the rows it holds.

Layout of ``bm25/`` (matrix format :data:`MATRIX_VERSION`; listed and hashed in the manifest like
every bundle file; a bundle without it is searched through Whoosh):

* ``meta.json``: ``{"version": 1, "fields": [...], "rows": N, "terms": {field: T}, "postings":
  {field: nnz}}``;
* ``chunk_ids.json``: list of ``N`` chunk ids; row ``i`` is chunk ``chunk_ids[i]`` (in a scratch
  build, row ``i`` is also Whoosh document number ``i``, so ties break the same way);
* per field ``F``: ``F.terms``: the field's terms, UTF-8, one per line (``\n``-separated, no
  trailing newline; a token never holds a line break), sorted by code point (= Whoosh's UTF-8 byte
  order); term ``j`` is column ``j``;
* per field ``F``: ``F.indptr.npy`` int64 ``(T + 1,)``, ``F.rows.npy`` int32 ``(nnz,)``, ``F.tf.npy``
  float32 ``(nnz,)`` — compressed sparse columns: the postings of term ``j`` are
  ``rows[indptr[j]:indptr[j+1]]`` (ascending) with weights ``tf[...]`` (Whoosh's posting weight:
  the term frequency, as Whoosh stores it, float32);
* ``lengths.npy``: uint32 ``(len(fields), N)``, the exact length (tokens) of each field of each row.
  Whoosh's scorer reads a byte-quantised length per document (:func:`quantised_lengths`) and an
  average over the exact total; both are derived from these exact lengths at load time.

An incremental build (:func:`indexer.textindex.update_text_index`) assembles the matrix from the
base bundle's rows of unchanged chunks and the rows recorded for the new chunks
(:meth:`BM25Matrix.assemble`); ``N``, ``df`` and the average lengths then follow from the rows present,
so the result equals a scratch build's matrix.

Scoring (:meth:`BM25Matrix.evaluate`) walks a :mod:`whoosh.query` tree the way Whoosh's matchers
score it: ``Term`` (times its boost), ``Prefix`` with ``constantscore=False`` (the indexed terms
with that prefix, summed, times the prefix's boost; a single expansion scores as a bare term, as in
Whoosh), ``Or`` (sum over the children that match), ``And`` (the same sum, only where every child
matches; a compound of one child is that child, its boost dropped, as in Whoosh).  Any other node
raises :class:`UnsupportedQuery`, so callers fall back to Whoosh.  The per-posting formula and its
operation order are Whoosh's (``whoosh.scoring.bm25``), so a term's scores are bit-identical; sums
of several terms may differ in the last bit (Whoosh adds in matcher-tree order).
"""

from __future__ import annotations

import bisect
import json
import math
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from whoosh import query as wq
from whoosh.util.numeric import byte_to_length

MATRIX_VERSION = 1
META_FILE = "meta.json"
CHUNK_IDS_FILE = "chunk_ids.json"
LENGTHS_FILE = "lengths.npy"

_LENGTH_TABLE = np.array([byte_to_length(i) for i in range(256)], dtype=np.int64)
"""Whoosh's length byte -> length table (``whoosh.util.numeric``)."""


class UnsupportedQuery(Exception):
    """A query node the array scorer does not evaluate (the caller then asks Whoosh)."""


class MatrixFormatError(Exception):
    """``bm25/`` is missing, of another version, or inconsistent with itself."""


def rsj_idf(df: int, n: int) -> float:
    """Return the Robertson-Sparck Jones idf ``log(1 + (N - df + 0.5) / (df + 0.5))`` (natural log).

    ``df``: chunks containing the term in the field; ``n``: chunks in the collection.  Always > 0.
    """
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def quantised_lengths(lengths: np.ndarray) -> np.ndarray:
    """Return the field lengths Whoosh's scorer reads: each exact length rounded to its length byte.

    Whoosh stores a document's field length as one byte (``length_to_byte``: the first table entry
    >= the length, 255 from 106,374 tokens on) and reads it back with ``byte_to_length``; shape and
    units as ``lengths`` (tokens), int64.
    """
    codes = np.minimum(np.searchsorted(_LENGTH_TABLE, lengths, side="left"), 255)
    return _LENGTH_TABLE[codes]


@dataclass(frozen=True)
class BM25Params:
    """Parameters of per-field BM25: ``k1``, default ``b``, per-field ``b`` overrides, idf function ``idf(df, N)``."""

    k1: float = 1.2
    b: float = 0.75
    field_b: Mapping[str, float] = field(default_factory=dict)
    idf: Callable[[int, int], float] = rsj_idf

    def b_of(self, fieldname: str) -> float:
        return self.field_b.get(fieldname, self.b)


# -- writing ---------------------------------------------------------------------------------------


class _FieldPostings:
    """Postings of one field as recorded: term ids, document numbers, weights (parallel arrays)."""

    __slots__ = ("terms", "tids", "docs", "weights")

    def __init__(self) -> None:
        self.terms: dict[bytes, int] = {}
        self.tids = array("i")
        self.docs = array("i")
        self.weights = array("f")


class PostingRecorder:
    """Record the postings a Whoosh segment writer writes, for :meth:`matrix`.

    :meth:`attach` wraps the writer's posting pool: every posting ``(field, term bytes, docnum,
    weight, value)`` that Whoosh's ``add_document`` produces (after its own analysis) is copied
    here before it goes to Whoosh.  Only ``fields`` are kept (the scorable text fields).  Cost: one
    Python call and three array appends per posting; memory 12 bytes per posting plus the terms.
    """

    def __init__(self, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self._postings = {f: _FieldPostings() for f in self.fields}
        self.documents = 0

    def attach(self, writer: Any) -> None:
        """Start recording what ``writer`` (a ``whoosh.writing.SegmentWriter`` of a new index) writes.

        Raises :class:`MatrixFormatError` when the writer has no posting pool to observe.
        """
        pool = getattr(writer, "pool", None)
        add = getattr(pool, "add", None)
        if add is None:
            raise MatrixFormatError("this Whoosh writer has no posting pool to record")
        postings = self._postings

        def record(item: tuple[Any, ...], _add: Callable[[Any], None] = add) -> None:
            slot = postings.get(item[0])
            if slot is not None:
                tid = slot.terms.get(item[1])
                if tid is None:
                    tid = slot.terms[item[1]] = len(slot.terms)
                slot.tids.append(tid)
                slot.docs.append(item[2])
                slot.weights.append(item[3])
            _add(item)

        pool.add = record  # type: ignore[union-attr]  # pool is not None: it has an add

    def matrix(self, chunk_ids: Sequence[str]) -> BM25Matrix:
        """Return the recorded postings as a :class:`BM25Matrix`; row ``i`` is Whoosh document ``i`` = ``chunk_ids[i]``.

        Field lengths are the sums of the recorded weights per document and field: Whoosh's writer
        sums term frequencies, and a posting's weight is its frequency (the schema has no field
        or term boosts); :func:`check_against_index` confirms it against the written index.
        """
        n = len(chunk_ids)
        terms: dict[str, list[str]] = {}
        columns: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        lengths = np.zeros((len(self.fields), n), dtype=np.uint32)
        for i, name in enumerate(self.fields):
            slot = self._postings[name]
            btexts = list(slot.terms)
            order = sorted(range(len(btexts)), key=btexts.__getitem__)  # UTF-8 bytes order = code point order
            rank = np.empty(len(btexts), dtype=np.int64)
            rank[order] = np.arange(len(btexts))
            tids = rank[np.frombuffer(slot.tids, dtype=np.int32)] if btexts else np.zeros(0, np.int64)
            docs = np.frombuffer(slot.docs, dtype=np.int32)
            weights = np.frombuffer(slot.weights, dtype=np.float32)
            if docs.size and (docs.min() < 0 or docs.max() >= n):
                raise MatrixFormatError(f"field {name}: a posting names a document outside 0..{n - 1}")
            sort = np.lexsort((docs, tids))
            indptr = np.zeros(len(btexts) + 1, dtype=np.int64)
            np.cumsum(np.bincount(tids, minlength=len(btexts)), out=indptr[1:])
            columns[name] = (indptr, docs[sort].astype(np.int32), weights[sort].astype(np.float32))
            terms[name] = [btexts[j].decode("utf-8") for j in order]
            lengths[i] = np.rint(np.bincount(docs, weights=weights, minlength=n)).astype(np.uint32)
        return BM25Matrix(list(chunk_ids), self.fields, terms, columns, lengths)


def check_against_index(matrix: BM25Matrix, reader: Any) -> None:
    """Check ``matrix`` against the Whoosh index it was recorded from; raise :class:`MatrixFormatError` if it differs.

    Checked: the number of documents, the chunk id of every document, each field's total length
    (Whoosh's average-length numerator) and every document's quantised field length (what
    Whoosh's scorer reads), and the document frequency of the first, middle and last term of each
    field.  ``reader``: an open ``whoosh.reading.IndexReader`` of a single-segment index without
    deletions (a fresh build).
    """
    n = matrix.n_rows
    if reader.doc_count_all() != n or reader.has_deletions():
        raise MatrixFormatError("the index holds other documents than the matrix")
    for docnum, fields in reader.iter_docs():
        if fields.get("chunk_id") != matrix.chunk_ids[docnum]:
            raise MatrixFormatError(f"document {docnum} is not chunk {matrix.chunk_ids[docnum]!r}")
    for i, name in enumerate(matrix.fields):
        if int(matrix.lengths[i].sum(dtype=np.int64)) != reader.field_length(name):
            raise MatrixFormatError(f"field {name}: total length differs from the index")
        quantised = quantised_lengths(matrix.lengths[i])
        for docnum in range(n):
            stored = reader.doc_field_length(docnum, name, 0) or 0
            if stored != (quantised[docnum] if matrix.lengths[i, docnum] else 0):
                raise MatrixFormatError(f"field {name}: length of document {docnum} differs from the index")
        terms = matrix.terms[name]
        for j in {0, len(terms) // 2, len(terms) - 1} if terms else ():
            if reader.doc_frequency(name, terms[j]) != matrix.df(name)[j]:
                raise MatrixFormatError(f"field {name}: document frequency of {terms[j]!r} differs")


# -- the matrix ------------------------------------------------------------------------------------


Hits = tuple[np.ndarray, np.ndarray]
"""Rows (int32 or int64, ascending, unique) and their scores (float64), same length."""

_EMPTY: Hits = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


@dataclass
class BM25Matrix:
    """Per-field term frequencies and field lengths of ``N`` chunks (see the module docstring).

    ``chunk_ids``: row -> chunk id; ``fields``: field names, order of ``lengths``; ``terms``: field
    -> sorted terms (column order); ``columns``: field -> ``(indptr, rows, tf)``; ``lengths``: uint32
    ``(len(fields), N)`` exact field lengths in tokens.
    """

    chunk_ids: list[str]
    fields: tuple[str, ...]
    terms: dict[str, list[str]]
    columns: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
    lengths: np.ndarray
    _norms: dict[tuple[str, float, float], np.ndarray] = field(default_factory=dict, repr=False)
    _dfs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _scoring: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    @property
    def n_rows(self) -> int:
        return len(self.chunk_ids)

    # -- files

    def save(self, directory: Path) -> None:
        """Write the matrix to ``directory`` (created; the layout of the module docstring)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        meta = {"version": MATRIX_VERSION, "fields": list(self.fields), "rows": self.n_rows,
                "terms": {f: len(self.terms[f]) for f in self.fields},
                "postings": {f: int(self.columns[f][1].size) for f in self.fields}}
        (directory / META_FILE).write_text(json.dumps(meta, sort_keys=True) + "\n", encoding="utf-8")
        (directory / CHUNK_IDS_FILE).write_text(json.dumps(self.chunk_ids, ensure_ascii=False), encoding="utf-8")
        for name in self.fields:
            if any("\n" in term for term in self.terms[name]):
                raise MatrixFormatError(f"field {name}: a term holds a line break")
            (directory / f"{name}.terms").write_text("\n".join(self.terms[name]), encoding="utf-8")
            indptr, rows, tf = self.columns[name]
            np.save(directory / f"{name}.indptr.npy", np.ascontiguousarray(indptr, dtype=np.int64))
            np.save(directory / f"{name}.rows.npy", np.ascontiguousarray(rows, dtype=np.int32))
            np.save(directory / f"{name}.tf.npy", np.ascontiguousarray(tf, dtype=np.float32))
        np.save(directory / LENGTHS_FILE, np.ascontiguousarray(self.lengths, dtype=np.uint32))

    @classmethod
    def load(cls, directory: Path, *, mmap: bool = True, same_ids: tuple[bytes, list[str]] | None = None) -> BM25Matrix:
        """Read a matrix written by :meth:`save`; ``mmap``: map the posting arrays instead of reading them.

        ``same_ids``: ``(bytes of a JSON file, the list it holds)`` already read by the caller (the
        bundle's ``vectors/ids.json``); when ``chunk_ids.json`` holds the same bytes that list is
        used instead of parsing it again.
        Raises :class:`MatrixFormatError` when a file is missing, of another version or inconsistent.
        """
        directory = Path(directory)
        try:
            meta = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
            if meta.get("version") != MATRIX_VERSION:
                raise MatrixFormatError(f"bm25 matrix version {meta.get('version')!r} is not {MATRIX_VERSION}")
            fields = tuple(meta["fields"])
            raw = (directory / CHUNK_IDS_FILE).read_bytes()
            chunk_ids = same_ids[1] if same_ids is not None and raw == same_ids[0] else json.loads(raw)
            mode: Literal["r"] | None = "r" if mmap else None
            columns = {}
            terms = {}
            for name in fields:
                text = (directory / f"{name}.terms").read_text(encoding="utf-8")
                terms[name] = text.split("\n") if text else []
                indptr = np.load(directory / f"{name}.indptr.npy")
                # Plain ndarray views of the mapped files (numpy's memmap subclass costs per slice).
                rows = np.load(directory / f"{name}.rows.npy", mmap_mode=mode).view(np.ndarray)
                tf = np.load(directory / f"{name}.tf.npy", mmap_mode=mode).view(np.ndarray)
                columns[name] = (indptr, rows, tf)
            lengths = np.load(directory / LENGTHS_FILE)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MatrixFormatError("bm25 matrix is unreadable") from exc
        n = len(chunk_ids)
        if meta.get("rows") != n or lengths.shape != (len(fields), n):
            raise MatrixFormatError("bm25 matrix row counts disagree")
        for name in fields:
            indptr, rows, tf = columns[name]
            if len(terms.get(name, ())) + 1 != indptr.size or rows.size != tf.size or int(indptr[-1]) != rows.size:
                raise MatrixFormatError(f"bm25 matrix field {name} is inconsistent")
        return cls(chunk_ids, fields, terms, columns, lengths)

    # -- statistics

    def df(self, fieldname: str) -> np.ndarray:
        """Return the document frequency of every term of ``fieldname`` (int64, column order)."""
        dfs = self._dfs.get(fieldname)
        if dfs is None:
            dfs = self._dfs[fieldname] = np.diff(self.columns[fieldname][0])
        return dfs

    def average_length(self, fieldname: str) -> float:
        """Return the field's average length as Whoosh's scorer uses it: exact total / N (1 when 0)."""
        total = int(self.lengths[self.fields.index(fieldname)].sum(dtype=np.int64))
        return (total / (self.n_rows or 1)) or 1

    def _norm(self, fieldname: str, k1: float, b: float) -> np.ndarray:
        """Return ``k1 * ((1 - b) + b * fl / avgfl)`` per row (float64), Whoosh's operation order."""
        key = (fieldname, k1, b)
        norm = self._norms.get(key)
        if norm is None:
            fl = quantised_lengths(self.lengths[self.fields.index(fieldname)]).astype(np.float64)
            norm = self._norms[key] = k1 * ((1 - b) + b * fl / self.average_length(fieldname))
        return norm

    def _weights(self, fieldname: str, params: BM25Params) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(idf per column, tf part per posting)`` of ``fieldname``, computed once per field and params.

        The tf part is ``(tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * fl / avgfl))`` (float64), so a
        posting's score is ``idf * part`` exactly as Whoosh multiplies them; the idf is computed once
        per distinct document frequency with ``params.idf`` (``math.log``, as Whoosh).  Memory: 8
        bytes per posting and per term.
        """
        key = (fieldname, params.k1, params.b_of(fieldname), params.idf)
        found = self._scoring.get(key)
        if found is None:
            indptr, col_rows, col_tf = self.columns[fieldname]
            df = self.df(fieldname)
            distinct, inverse = np.unique(df, return_inverse=True)
            n = self.n_rows
            idf = np.array([params.idf(int(d), n) for d in distinct.tolist()], dtype=np.float64)[inverse]
            tf = col_tf.astype(np.float64)
            k1 = params.k1
            part = (tf * (k1 + 1)) / (tf + self._norm(fieldname, k1, params.b_of(fieldname))[col_rows])
            found = self._scoring[key] = (idf, part)
        return found

    def _weights_of(self, fieldname: str, params: BM25Params, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(idf of columns lo..hi-1, tf part of their postings)``, the slices of :meth:`_weights`.

        Sliced from the field's arrays when :meth:`prepare` computed them, else computed for these
        columns only, by the same operations (so the same values): a one-shot search scores a few
        terms and need not weigh every posting of the vault first.
        """
        key = (fieldname, params.k1, params.b_of(fieldname), params.idf)
        indptr, col_rows, col_tf = self.columns[fieldname]
        start, end = int(indptr[lo]), int(indptr[hi])
        found = self._scoring.get(key)
        if found is not None:
            return found[0][lo:hi], found[1][start:end]
        n = self.n_rows
        idf = np.array([params.idf(int(d), n) for d in self.df(fieldname)[lo:hi].tolist()], dtype=np.float64)
        tf = col_tf[start:end].astype(np.float64)
        k1 = params.k1
        part = (tf * (k1 + 1)) / (tf + self._norm(fieldname, k1, params.b_of(fieldname))[col_rows[start:end]])
        return idf, part

    def prepare(self, params: BM25Params) -> BM25Matrix:
        """Compute the scoring arrays of every field for ``params`` now (else on first use); return self."""
        for name in self.fields:
            self._weights(name, params)
        return self

    def column(self, fieldname: str, text: str) -> int | None:
        """Return the column of ``text`` in ``fieldname``, or ``None`` when it is not indexed there."""
        terms = self.terms.get(fieldname)
        if not terms:
            return None
        j = bisect.bisect_left(terms, text)
        return j if j < len(terms) and terms[j] == text else None

    def doc_frequency(self, fieldname: str, text: str) -> int:
        """Return how many rows hold ``text`` in ``fieldname`` (0 when it is not indexed)."""
        j = self.column(fieldname, text)
        return 0 if j is None else int(self.df(fieldname)[j])

    def _prefix_columns(self, fieldname: str, prefix: str) -> tuple[int, int]:
        """Return the column range ``[lo, hi)`` of the terms of ``fieldname`` that start with ``prefix``."""
        terms = self.terms.get(fieldname) or []
        lo = bisect.bisect_left(terms, prefix)
        # Every term >= prefix and < prefix + U+10FFFF... starts with prefix; find the end by bisection too.
        hi = bisect.bisect_left(terms, prefix + "\U0010ffff", lo)
        while hi < len(terms) and terms[hi].startswith(prefix):  # terms holding U+10FFFF itself
            hi += 1
        return lo, hi

    def prefix_count(self, fieldname: str, prefix: str) -> int:
        """Return how many terms of ``fieldname`` start with ``prefix`` and occur in some row (0 for an unknown field).

        Two bisections and a count over the prefix's column range: no term string is built.
        """
        lo, hi = self._prefix_columns(fieldname, prefix)
        return int(np.count_nonzero(self.df(fieldname)[lo:hi])) if hi > lo else 0

    def expand_prefix(self, fieldname: str, prefix: str) -> list[str]:
        """Return the terms of ``fieldname`` that start with ``prefix`` and occur in some row, in term order."""
        lo, hi = self._prefix_columns(fieldname, prefix)
        df = self.df(fieldname)
        return [self.terms[fieldname][j] for j in range(lo, hi) if df[j]]

    def term_rows(self, fieldname: str, text: str) -> np.ndarray:
        """Return the rows (int32, ascending) holding ``text`` in ``fieldname``."""
        j = self.column(fieldname, text)
        if j is None:
            return np.zeros(0, dtype=np.int32)
        indptr, rows, _ = self.columns[fieldname]
        return np.asarray(rows[indptr[j]:indptr[j + 1]])

    @classmethod
    def assemble(cls, chunk_ids: Sequence[str], sources: Sequence[BM25Matrix]) -> BM25Matrix:
        """Return the matrix of ``chunk_ids`` (in that order), each row copied from the first source holding it.

        For incremental builds: the rows of unchanged chunks come from the parent bundle's matrix,
        the rest from a matrix recorded for the new chunks only.  Terms that no chosen row holds are
        dropped, so the result equals the matrix a scratch build of the same chunks in the same
        order records (same arrays, same bytes).  Cost: every posting of every source (vectorised).
        Raises :class:`MatrixFormatError` when the sources have other fields or lack a chunk id.
        """
        if not sources:
            raise MatrixFormatError("no source matrix to assemble from")
        fields = sources[0].fields
        if any(src.fields != fields for src in sources):
            raise MatrixFormatError("source matrices have different fields")
        n = len(chunk_ids)
        dests = [np.full(src.n_rows, -1, dtype=np.int64) for src in sources]
        lengths = np.zeros((len(fields), n), dtype=np.uint32)
        where = [{cid: row for row, cid in enumerate(src.chunk_ids)} for src in sources]
        for i, cid in enumerate(chunk_ids):
            for k, rows_of in enumerate(where):
                row = rows_of.get(cid)
                if row is not None:
                    dests[k][row] = i
                    lengths[:, i] = sources[k].lengths[:, row]
                    break
            else:
                raise MatrixFormatError(f"no source matrix holds chunk {cid!r}")
        terms: dict[str, list[str]] = {}
        columns: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for name in fields:
            picked = []
            for src, dest in zip(sources, dests, strict=True):
                indptr, col_rows, col_tf = src.columns[name]
                cols = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
                new_rows = dest[np.asarray(col_rows)]
                keep = new_rows >= 0
                picked.append((src.terms[name], cols[keep], new_rows[keep], np.asarray(col_tf)[keep]))
            used = [np.unique(cols) for _, cols, _, _ in picked]
            vocabulary = sorted({part[0][j] for part, u in zip(picked, used, strict=True) for j in u.tolist()})
            number = {word: j for j, word in enumerate(vocabulary)}
            renumbered = []
            for (words, cols, _, _), u in zip(picked, used, strict=True):
                remap = np.zeros(len(words), dtype=np.int64)
                remap[u] = [number[words[j]] for j in u.tolist()]
                renumbered.append(remap[cols])
            all_cols = np.concatenate(renumbered)
            all_rows = np.concatenate([rows for _, _, rows, _ in picked])
            all_tf = np.concatenate([tf for _, _, _, tf in picked])
            order = np.lexsort((all_rows, all_cols))
            indptr = np.zeros(len(vocabulary) + 1, dtype=np.int64)
            np.cumsum(np.bincount(all_cols, minlength=len(vocabulary)), out=indptr[1:])
            columns[name] = (indptr, all_rows[order].astype(np.int32), all_tf[order].astype(np.float32))
            terms[name] = vocabulary
        return cls(list(chunk_ids), fields, terms, columns, lengths)

    # -- scoring

    def term_scores(self, fieldname: str, text: str, params: BM25Params, boost: float = 1.0) -> Hits:
        """Return the rows holding ``text`` in ``fieldname`` and their BM25 scores times ``boost``.

        ``idf(df, N) * (tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * fl / avgfl))`` with ``fl`` the
        quantised field length; raises :class:`UnsupportedQuery` for a field not in the matrix.
        """
        if fieldname not in self.columns:
            raise UnsupportedQuery(f"field {fieldname!r} is not in the bm25 matrix")
        j = self.column(fieldname, text)
        if j is None:
            return _EMPTY
        indptr, col_rows, _ = self.columns[fieldname]
        idf, part = self._weights_of(fieldname, params, j, j + 1)
        lo, hi = int(indptr[j]), int(indptr[j + 1])
        scores = idf[0] * part
        if boost != 1.0:
            scores = scores * boost
        return col_rows[lo:hi], scores

    def prefix_scores(self, fieldname: str, prefix: str, params: BM25Params, boost: float = 1.0) -> Hits:
        """Score ``Prefix(fieldname, prefix, boost, constantscore=False)`` as Whoosh does.

        Whoosh ORs the indexed terms with the prefix (scores summed per row) and applies ``boost`` to
        the sum; when exactly one term has the prefix it scores that term's bare matcher (no boost).
        The expanded terms are consecutive columns, so their postings are scored in one pass.
        Raises :class:`UnsupportedQuery` for a field not in the matrix or an empty prefix (Whoosh:
        every document).
        """
        if fieldname not in self.columns:
            raise UnsupportedQuery(f"field {fieldname!r} is not in the bm25 matrix")
        if not prefix:
            raise UnsupportedQuery("an empty prefix matches every document")
        lo, hi = self._prefix_columns(fieldname, prefix)
        df = self.df(fieldname)[lo:hi]
        expansions = int(np.count_nonzero(df))
        if expansions == 0:
            return _EMPTY
        indptr, col_rows, _ = self.columns[fieldname]
        idf, part = self._weights_of(fieldname, params, lo, hi)
        start, end = int(indptr[lo]), int(indptr[hi])
        rows = col_rows[start:end]
        scores = np.repeat(idf, df) * part
        if expansions == 1:
            return rows, scores
        return _scaled(_sum_by_row(rows, scores, self.n_rows), boost)

    def evaluate(self, q: Any, params: BM25Params, memo: dict[Any, Hits] | None = None) -> Hits:
        """Return the rows matching the Whoosh query ``q`` and their scores, as Whoosh would score them.

        ``memo``: results of subtrees already evaluated for this query (pass one dict to several
        calls whose trees share subqueries; the trees must stay alive while it is used).
        Raises :class:`UnsupportedQuery` for a node other than ``Term``, ``Prefix`` (not constant
        score), ``Or`` (no coordination ``scale``), ``And`` and ``NullQuery``.
        """
        return self._evaluate(q, params, {} if memo is None else memo)

    def _evaluate(self, q: Any, params: BM25Params, memo: dict[Any, Hits]) -> Hits:
        kind = type(q)
        if q is wq.NullQuery:
            return _EMPTY
        if kind is wq.Term:
            key: Any = ("term", q.fieldname, q.text, q.boost)
            hit = memo.get(key)
            if hit is None:
                text = q.text.decode("utf-8") if isinstance(q.text, bytes) else q.text
                hit = memo[key] = self.term_scores(q.fieldname, text, params, q.boost)
            return hit
        if kind is wq.Prefix and not q.constantscore:
            key = ("prefix", q.fieldname, q.text, q.boost)
            hit = memo.get(key)
            if hit is None:
                hit = memo[key] = self.prefix_scores(q.fieldname, q.text, params, q.boost)
            return hit
        if kind is wq.Or and not q.scale or kind is wq.And:
            key = ("compound", id(q))
            hit = memo.get(key)
            if hit is None:
                hit = memo[key] = self._compound(q, params, memo, every=kind is wq.And)
            return hit
        raise UnsupportedQuery(f"query node {kind.__name__} is not evaluated on the bm25 matrix")

    def _compound(self, q: Any, params: BM25Params, memo: dict[Any, Hits], *, every: bool) -> Hits:
        subs = list(q.subqueries)
        if not subs:
            return _EMPTY
        if len(subs) == 1:  # Whoosh: a compound of one child is that child's matcher, boost dropped
            return self._evaluate(subs[0], params, memo)
        parts = []
        for sub in subs:
            hit = self._evaluate(sub, params, memo)
            if every and not hit[0].size:
                return _EMPTY
            parts.append(hit)
        return _scaled(self._combine(parts, every=every), q.boost)

    def _combine(self, parts: list[Hits], *, every: bool) -> Hits:
        """Sum the scores of ``parts`` per row; ``every``: keep only rows present in every part."""
        parts = [p for p in parts if p[0].size] if not every else parts
        if not parts:
            return _EMPTY
        if len(parts) == 1:
            return parts[0]
        rows = np.concatenate([p[0] for p in parts])
        scores = np.concatenate([p[1] for p in parts])
        return _sum_by_row(rows, scores, self.n_rows, len(parts) if every else 0)


def _sum_by_row(rows: np.ndarray, scores: np.ndarray, n_rows: int, every: int = 0) -> Hits:
    """Sum ``scores`` per row; with ``every`` > 0 keep only rows that occur ``every`` times.

    Few postings are sorted (cost of the postings); many are added into arrays over all
    ``n_rows`` rows (cost of the collection, but no sort).
    """
    if rows.size * 8 < n_rows:
        unique, inverse = np.unique(rows, return_inverse=True)
        sums = np.bincount(inverse, weights=scores)
        if every:
            keep = np.bincount(inverse) == every
            return unique[keep], sums[keep]
        return unique, sums
    sums = np.bincount(rows, weights=scores, minlength=n_rows)
    if not every and scores.min() > 0:  # every matching row has a positive sum: no counts needed
        hit = np.flatnonzero(sums)
    else:
        counts = np.bincount(rows, minlength=n_rows)
        hit = np.flatnonzero(counts == every if every else counts)
    return hit, sums[hit]


def _scaled(hits: Hits, boost: float) -> Hits:
    return hits if boost == 1.0 else (hits[0], hits[1] * boost)


def top_rows(hits: Hits, k: int, allow: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Return the best ``k`` rows of ``hits`` (score descending, then row ascending) and how many matched.

    ``allow``: bool mask over all rows (``None``: every row).  Ties at the cut keep the lower rows,
    as Whoosh's collector keeps the lower document numbers.  Returns ``(rows, scores, matched)``.
    """
    rows, scores = hits
    if allow is not None and rows.size:
        keep = allow[rows]
        rows, scores = rows[keep], scores[keep]
    matched = int(rows.size)
    if matched > k:
        kth = np.partition(scores, matched - k)[matched - k]
        above = np.flatnonzero(scores > kth)
        ties = np.flatnonzero(scores == kth)[: k - above.size]
        pick = np.concatenate([above, ties])
        rows, scores = rows[pick], scores[pick]
    order = np.lexsort((rows, -scores))
    return rows[order], scores[order], matched


def write_bm25_matrix(matrix: BM25Matrix, directory: Path, reader: Any | None = None) -> None:
    """Check ``matrix`` against the index ``reader`` (when given, :func:`check_against_index`) and save it."""
    if reader is not None:
        check_against_index(matrix, reader)
    matrix.save(directory)


__all__ = [
    "BM25Matrix", "BM25Params", "MATRIX_VERSION", "MatrixFormatError", "PostingRecorder", "UnsupportedQuery",
    "check_against_index", "quantised_lengths", "rsj_idf", "top_rows", "write_bm25_matrix",
]
