"""The bundle's record files, read on demand: ``chunks.jsonl`` and ``docs.jsonl`` memory-mapped.

A record is parsed the first time it is asked for (:class:`ChunkRecords`, :class:`DocumentRecords`);
what every search needs from all documents (path, tags, categories, year, published: the
*facets*, :class:`DocumentFacets`) is read from each line without parsing its body, links or front
matter.  :func:`query.bundle.open_bundle` opens them.
"""

from __future__ import annotations

import json
import mmap
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np

from artifacts.records import Chunk, Document
from query.errors import RetrievalUnavailableError


class Lines:
    """The non-blank lines of an immutable JSON-lines file, memory-mapped: ``line(i)`` -> bytes.

    Raises :class:`OSError` when the file cannot be read.
    """

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            self.buf: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        view = np.frombuffer(self.buf, dtype=np.uint8)
        ends = np.flatnonzero(view == 10)
        if size and (not len(ends) or ends[-1] != size - 1):
            ends = np.append(ends, size)  # a last line without its newline
        starts = np.concatenate(([0], ends[:-1] + 1)) if len(ends) else ends
        keep = ends - starts > 0
        if not keep.all():  # blank lines (only "\n"; whitespace-only lines are rejected when parsed)
            starts, ends = starts[keep], ends[keep]
        del view  # release the buffer export, so that the map can be closed
        self.starts: list[int] = starts.tolist()
        self.ends: list[int] = ends.tolist()

    def __len__(self) -> int:
        return len(self.starts)

    def line(self, i: int) -> bytes:
        return bytes(self.buf[self.starts[i]:self.ends[i]])


class ChunkRecords(Sequence[Chunk]):
    """The chunks in vector-label order (label ``i`` -> :class:`Chunk`), each parsed on first access.

    ``ids`` is ``vectors/ids.json`` (the chunk id of every vector label; a chunk split into several
    vectors appears once per vector).  The writer stores ``chunks.jsonl`` in the same order, so label
    ``i`` is read from the line of its chunk; the parsed chunk's id is checked against ``ids[i]`` and,
    if they ever differ (another writer), every line's id is read once to map ids to lines.
    Thread-safe: a record parsed twice by two threads is the same value.
    Raises :class:`RetrievalUnavailableError` for a line that does not parse as the chunk it should be.
    """

    def __init__(self, lines: Lines, ids: list[str]) -> None:
        self._lines = lines
        self.ids = ids
        self._parsed: list[Chunk | None] = [None] * len(lines)
        self._line_of: Sequence[int] = self._guess_lines(ids)
        self._lock = threading.Lock()
        self._mapped = False  # every label's line is known to be right (prepare / _remap)
        if (self._line_of[-1] + 1 if ids else 0) != len(lines):
            self._remap()  # not one line per run of equal ids: map every id now (raises if one is missing)

    @staticmethod
    def _guess_lines(ids: list[str]) -> Sequence[int]:
        if len(set(ids)) == len(ids):
            return range(len(ids))  # one vector per chunk: label i is line i
        line_of, line = [], -1
        for i, cid in enumerate(ids):
            if i == 0 or cid != ids[i - 1]:
                line += 1
            line_of.append(line)
        return line_of

    def _remap(self) -> None:
        """Map every label to its chunk's line, once (a second caller that waited on the lock finds it done)."""
        if self._mapped:
            return
        with self._lock:
            if self._mapped:
                return
            by_id = {cid: n for n, cid in enumerate(chunk_ids(self._lines))}
            self._line_of = [by_id[cid] for cid in self.ids]
            self._mapped = True

    def prepare(self) -> None:
        """Check once that label ``i`` is read from the line of chunk ``ids[i]`` and map the labels if not.

        An incremental build keeps its parent's label order but writes ``chunks.jsonl`` in its own, so
        without this the first lookup after a swap would map the whole file while requests wait.  A
        server calls it before the bundle is served (:func:`query.search.weighting.warm_up`); it reads each
        line's id only (about 0.1 s for 50k chunks).  Raises :class:`RetrievalUnavailableError` when an
        id of ``ids`` has no line.
        """
        if self._mapped:
            return
        try:
            line_ids = chunk_ids(self._lines)
            matches = all(line_ids[line] == cid for cid, line in zip(self.ids, self._line_of, strict=True))
        except (ValueError, KeyError, IndexError) as exc:
            raise RetrievalUnavailableError("chunks.jsonl does not match vectors/ids.json") from exc
        if matches:
            with self._lock:
                self._mapped = True
            return
        try:
            self._remap()
        except (ValueError, KeyError, IndexError) as exc:
            raise RetrievalUnavailableError("chunks.jsonl does not match vectors/ids.json") from exc

    def __len__(self) -> int:
        return len(self.ids)

    def _get(self, label: int) -> Chunk:
        line = self._line_of[label]
        chunk = self._parsed[line] if line < len(self._parsed) else None
        if chunk is None:
            try:
                chunk = Chunk.model_validate_json(self._lines.line(line))
            except (ValueError, IndexError) as exc:
                raise RetrievalUnavailableError("chunk record unreadable") from exc
            if chunk.chunk_id != self.ids[label]:
                if self._mapped:
                    if self._line_of[label] != line:  # mapped by another thread since this one looked
                        return self._get(label)
                    raise RetrievalUnavailableError("chunks.jsonl does not match vectors/ids.json")
                try:
                    self._remap()
                except (ValueError, KeyError, IndexError) as exc:
                    raise RetrievalUnavailableError("chunks.jsonl does not match vectors/ids.json") from exc
                return self._get(label)
            self._parsed[line] = chunk
        return chunk

    @overload
    def __getitem__(self, index: int) -> Chunk: ...

    @overload
    def __getitem__(self, index: slice) -> list[Chunk]: ...

    def __getitem__(self, index: int | slice) -> Chunk | list[Chunk]:
        if isinstance(index, slice):
            return [self._get(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._get(index)

    def __iter__(self) -> Iterator[Chunk]:
        return (self._get(i) for i in range(len(self)))

    def all_published(self) -> bool:
        """Return whether every chunk is published, from the bytes of ``chunks.jsonl`` (no line parsed).

        True only when each line holds ``"published": true`` exactly once and no line holds
        ``"published": false``: the writer dumps flat objects with ``json.dumps``' separators, and in a
        JSON string every ``"`` is escaped, so the text of a chunk cannot fake either.  Any other
        shape gives False (callers then read the documents' facets).
        """
        buf = self._lines.buf
        if not len(self._lines) or buf.find(b'"published": false') >= 0:
            return False
        return len(_PUBLISHED.findall(buf)) == len(self._lines)


_PUBLISHED = re.compile(rb'"published": true')


@dataclass(frozen=True)
class DocumentFacets:
    """What every search needs of a document (filters, the published rule): read at open."""

    path: str
    tags: list[str]
    categories: list[str]
    year: int | None
    published: bool


_DECODER = json.JSONDecoder()
_CATEGORIES = b'", "categories": ['
_DATE = b'], "date": '
_PATH = b', "path": "'


def _read_facets(buf: Any, start: int, end: int) -> DocumentFacets:
    """Read a ``docs.jsonl`` line's facets without parsing its body, links or front matter.

    The writer dumps every document with sorted keys and ``json.dumps``' separators, so the line is
    ``{"authors": .., "blob_id": .., "body": "..", "categories": [..], "date": .., "dates": ..,
    "front_matter": .., "links": .., "path": .., "published": .., "size": .., "tags": .., "title": ..,
    ...}``.  Inside a JSON string every ``"`` is escaped, so ``", "categories": [`` and the first
    ``], "date": `` after it, and the last ``, "path": "``, occur only as those keys: the categories
    list and the object from ``path`` on are parsed, nothing else.  A line not in that shape is
    parsed whole.  ``buf[start:end]`` is the line (``buf``: bytes or the file's memory map).
    """
    at = buf.find(_CATEGORIES, start, end)
    close = buf.find(_DATE, at, end) if at > start else -1
    tail = buf.rfind(_PATH, start, end)
    if start < at < close < tail:
        try:  # one small object: {"categories": [...], "path": ..., "published": ..., "tags": ..., ...}
            text = (b'{"categories": ' + buf[at + len(_CATEGORIES) - 1:close + 1] + buf[tail:end]).decode("utf-8")
            rest = _DECODER.decode(text)
            if isinstance(rest, dict) and isinstance(rest.get("path"), str) and isinstance(rest["categories"], list):
                return DocumentFacets(path=rest["path"], tags=rest.get("tags", []), categories=rest["categories"],
                                      year=rest.get("year"), published=rest.get("published", True))
        except ValueError:
            pass
    doc = Document.model_validate_json(bytes(buf[start:end]))
    return DocumentFacets(doc.path, doc.tags, doc.categories, doc.year, doc.published)


class DocumentRecords(Mapping[str, Document]):
    """Document path -> :class:`Document` (``body`` left empty), each parsed on first access.

    The paths and :attr:`facets` are read at open (:func:`_read_facets`); :meth:`body` returns a
    document's Markdown body.  Thread-safe like :class:`ChunkRecords`.
    Raises :class:`RetrievalUnavailableError` for a line that does not parse.
    """

    def __init__(self, lines: Lines) -> None:
        self._lines = lines
        self._facets: dict[str, DocumentFacets] | None = None
        self._line_of: dict[str, int] = {}
        self._lock = threading.Lock()
        self._parsed: dict[str, Document] = {}

    @property
    def facets(self) -> dict[str, DocumentFacets]:
        """Document path -> :class:`DocumentFacets`, read from every line on first use (then kept)."""
        if self._facets is None:
            with self._lock:
                if self._facets is None:
                    lines = self._lines
                    facets = [_read_facets(lines.buf, lines.starts[n], lines.ends[n]) for n in range(len(lines))]
                    self._line_of = {f.path: n for n, f in enumerate(facets)}
                    self._facets = {f.path: f for f in facets}  # set last: readers check it first
        return self._facets

    def _full(self, path: str) -> Document:
        try:
            return Document.model_validate_json(self._lines.line(self._line_of[path]))
        except ValueError as exc:
            raise RetrievalUnavailableError("document record unreadable") from exc

    def __getitem__(self, path: str) -> Document:
        doc = self._parsed.get(path)
        if doc is None:
            if path not in self.facets:
                raise KeyError(path)
            doc = self._full(path)
            doc.body = ""  # search never shows bodies; body() reads one
            self._parsed[path] = doc
        return doc

    def __contains__(self, path: object) -> bool:
        return path in self.facets

    def __iter__(self) -> Iterator[str]:
        return iter(self.facets)

    def __len__(self) -> int:
        return len(self._lines)

    def body(self, path: str) -> str | None:
        """The Markdown body of ``path``, or ``None`` when there is no such document."""
        return self._full(path).body if path in self.facets else None


_CHUNK_ID = b'{"chunk_id": '


def chunk_ids(lines: Lines) -> list[str]:
    """The chunk id of every line of ``chunks.jsonl`` (a lexical bundle has no ``vectors/ids.json``).

    The writer dumps each chunk with sorted keys, so a line starts with ``{"chunk_id": "..."``: only
    that string is decoded; a line in another shape is parsed whole.
    Raises :class:`ValueError` for a line that is not a chunk record.
    """
    ids: list[str] = []
    buf = lines.buf
    for start, end in zip(lines.starts, lines.ends, strict=True):
        if buf[start:start + len(_CHUNK_ID)] == _CHUNK_ID:
            value, _ = _DECODER.raw_decode(bytes(buf[start + len(_CHUNK_ID):end]).decode("utf-8"))
        else:
            value = json.loads(bytes(buf[start:end])).get("chunk_id")
        if not isinstance(value, str):
            raise ValueError("chunks.jsonl line without a chunk id")
        ids.append(value)
    return ids


__all__ = ["ChunkRecords", "DocumentFacets", "DocumentRecords", "Lines", "chunk_ids"]
