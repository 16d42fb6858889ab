"""Write the Whoosh BM25 index of a bundle (``text/``): one Whoosh document per chunk."""

from __future__ import annotations

from pathlib import Path

from whoosh import index as whoosh_index

from artifacts.analysis import text_schema
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


def write_text_index(chunks: list[Chunk], docs: dict[str, Document], text_dir: Path) -> int:
    """Create a Whoosh index in ``text_dir`` holding every chunk; return the number of documents written.

    Searchable fields: ``title`` (document title), ``headings`` (heading path), ``meta`` (tags,
    categories, authors), ``body`` (chunk text), each folded, plus ``title_exact`` and
    ``body_exact`` with diacritics kept.  ``published`` is 1/0 and ``year`` the document year.
    """
    text_dir.mkdir(parents=True, exist_ok=True)
    ix = whoosh_index.create_in(str(text_dir), text_schema())
    writer = ix.writer(limitmb=256)
    try:
        for chunk in chunks:
            writer.add_document(**_fields(chunk, docs[chunk.path]))
    except BaseException:
        writer.cancel()
        raise
    writer.commit()
    ix.close()
    return len(chunks)

