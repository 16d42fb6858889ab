"""Write a bundle's Whoosh index (``text/``, one Whoosh document per chunk) and its BM25 matrix (``bm25/``)."""

from __future__ import annotations

from pathlib import Path

from whoosh import index as whoosh_index

from artifacts.analysis import text_schema
from artifacts.bm25matrix import PostingRecorder, check_against_index
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
                     recorder: PostingRecorder | None = None) -> int:
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
    try:
        for chunk in chunks:
            writer.add_document(**_fields(chunk, docs[chunk.path]))
    except BaseException:
        writer.cancel()
        raise
    writer.commit()
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
