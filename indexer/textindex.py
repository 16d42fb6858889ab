"""Write a bundle's Whoosh index (``text/``, one Whoosh document per chunk) and its BM25 matrix (``bm25/``)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from whoosh import index as whoosh_index

from artifacts.analysis import text_schema
from artifacts.bm25matrix import BM25Matrix, MatrixFormatError, PostingRecorder, check_against_index
from artifacts.layout import BM25_DIR, TEXT_DIR
from artifacts.records import Chunk, Document


def _fields(chunk: Chunk, doc: Document) -> dict[str, object]:
    """Return the Whoosh fields of one chunk (see :func:`artifacts.analysis.text_schema`)."""
    fields: dict[str, object] = {
        "chunk_id": chunk.chunk_id,
        "path": chunk.path,
        "ordinal": chunk.ordinal,
        "published": 1 if chunk.published else 0,
        "title": chunk.title,
        "title_exact": chunk.title,
        "headings": " / ".join(chunk.heading_path),
        "meta": " , ".join([*doc.tags, *doc.categories, *doc.authors]),
        "body": chunk.text,
        "body_exact": chunk.text,
    }
    if doc.year is not None:
        fields["year"] = doc.year
    return fields


def scored_fields() -> tuple[str, ...]:
    """Return the text fields BM25 scores (the scorable fields of :func:`artifacts.analysis.text_schema`)."""
    schema = text_schema()
    return tuple(name for name in schema.names() if schema[name].scorable)


def write_text_index(chunks: list[Chunk], docs: dict[str, Document], text_dir: Path,
                     recorder: PostingRecorder | None = None,
                     progress: Callable[[str, int, int], None] | None = None) -> int:
    """Create a Whoosh index in ``text_dir`` holding every chunk; return the number of documents written.

    Searchable fields: ``title`` (document title), ``headings`` (heading path), ``meta`` (tags,
    categories, authors), ``body`` (chunk text), each folded, plus ``title_exact`` and
    ``body_exact`` with diacritics kept.  ``published`` is 1/0 and ``year`` the document year.
    Whoosh document ``i`` is ``chunks[i]``.  ``recorder`` (optional) receives every posting Whoosh
    writes, for the bundle's BM25 matrix (:meth:`artifacts.bm25matrix.PostingRecorder.matrix`).
    """
    text_dir.mkdir(parents=True, exist_ok=True)
    ix = whoosh_index.create_in(str(text_dir), text_schema())
    writer = ix.writer(limitmb=256)
    if recorder is not None:
        recorder.attach(writer)
    report = progress or (lambda stage, done, total: None)
    try:
        for i, chunk in enumerate(chunks, 1):
            writer.add_document(**_fields(chunk, docs[chunk.path]))
            if i % 256 == 0 or i == len(chunks):
                report("text_index", i, len(chunks))
    except BaseException:
        writer.cancel()
        raise
    report("text_commit", 0, 1)  # sorting and writing the segment: about half of the time, no counts
    writer.commit()
    report("text_commit", 1, 1)
    ix.close()
    return len(chunks)



def write_bm25_matrix(recorder: PostingRecorder, chunks: list[Chunk], text_dir: Path, bm25_dir: Path) -> None:
    """Write the BM25 matrix of the postings ``recorder`` saw while :func:`write_text_index` wrote ``text_dir``.

    The matrix is checked against the written index first (:func:`artifacts.bm25matrix.check_against_index`);
    raises :class:`artifacts.bm25matrix.MatrixFormatError` when it differs (a bug, never bad input).
    """
    matrix = recorder.matrix([c.chunk_id for c in chunks])
    ix = whoosh_index.open_dir(str(text_dir), readonly=True)
    try:
        with ix.reader() as reader:
            check_against_index(matrix, reader)
    finally:
        ix.close()
    matrix.save(bm25_dir)


# -- incremental update ----------------------------------------------------------------------------

MAX_SEGMENTS = 8
"""An updated Whoosh index with more segments than this (one is added per incremental build) is rebuilt."""
MAX_DELETED_FRACTION = 0.2
"""An updated Whoosh index whose deleted documents would exceed this fraction of its live ones is rebuilt."""


def update_text_index(base_bundle: Path, chunks: list[Chunk], docs: dict[str, Document], changed: set[str],
                      removed: list[str], text_dir: Path, bm25_dir: Path) -> dict[str, object] | None:
    """Write ``text_dir`` and ``bm25_dir`` from the base bundle's, changed only for the documents in ``changed``.

    ``changed``: paths whose chunks differ from the base's (parsed in this build, or gone);
    ``removed``: the base's chunk ids of those paths.
    The base's Whoosh segment files are copied (the base bundle is never opened for writing), the
    ``removed`` chunks are deleted by chunk id, the new chunks of ``changed`` paths are added as
    one new segment, and the commit merges nothing, so no existing segment file is rewritten.  Whoosh's
    own statistics then count deleted documents, which is why BM25 is scored from the matrix only:
    its rows are the base's rows of unchanged chunks plus the rows recorded from the new segment,
    in ``chunks`` order, so the matrix (and every BM25 score) equals a scratch build's.
    Returns ``{"from": base id, "segments", "deleted", "added"}``, or ``None`` without writing
    (then rebuild) when the base has no BM25 matrix, or the result would exceed
    :data:`MAX_SEGMENTS` / :data:`MAX_DELETED_FRACTION`.
    Raises :class:`artifacts.bm25matrix.MatrixFormatError` when the result disagrees with itself.
    """
    base_text, base_bm25 = base_bundle / TEXT_DIR, base_bundle / BM25_DIR
    try:
        parent = BM25Matrix.load(base_bm25)
    except MatrixFormatError:
        return None
    base_ix = whoosh_index.open_dir(str(base_text), readonly=True)
    try:
        with base_ix.reader() as reader:
            segments = len(base_ix._segments())  # noqa: SLF001 - Whoosh has no public segment count
            deleted_before = reader.doc_count_all() - reader.doc_count()
    finally:
        base_ix.close()
    fresh = [c for c in chunks if c.path in changed]
    deleted_after = deleted_before + len(removed)
    if segments + 1 > MAX_SEGMENTS or deleted_after > MAX_DELETED_FRACTION * max(len(chunks), 1):
        return None
    text_dir.mkdir(parents=True, exist_ok=True)
    for item in base_text.iterdir():
        if item.is_file() and not item.name.endswith("WRITELOCK"):
            shutil.copyfile(item, text_dir / item.name)  # a copy: the base's files stay untouched
    recorder = PostingRecorder(parent.fields)
    ix = whoosh_index.open_dir(str(text_dir))
    writer = ix.writer(limitmb=64)
    recorder.attach(writer)
    try:
        for cid in removed:
            writer.delete_by_term("chunk_id", cid)
        for chunk in fresh:
            writer.add_document(**_fields(chunk, docs[chunk.path]))
    except BaseException:
        writer.cancel()
        raise
    writer.commit(merge=False)
    try:
        with ix.reader() as reader:
            if reader.doc_count() != len(chunks):
                raise MatrixFormatError("the updated index holds another number of live documents than chunks")
    finally:
        ix.close()
    # a chunk's row from the new segment's postings when it has one, else the parent's (one owner:
    # BM25Matrix.assemble, byte-identical to a scratch build's matrix)
    matrix = BM25Matrix.assemble([c.chunk_id for c in chunks], [recorder.matrix([c.chunk_id for c in fresh]), parent])
    matrix.save(bm25_dir)
    return {"from": base_bundle.name, "segments": segments + 1, "deleted": deleted_after, "added": len(fresh)}
