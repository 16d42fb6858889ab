"""Records stored in a bundle: documents (``docs.jsonl``) and chunks (``chunks.jsonl``).

Both are written one JSON object per line with sorted keys, in a deterministic order
(documents by path, chunks by path then ordinal), so that equal content gives equal bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

SUMMARY_KEYS = ("description", "summary", "excerpt", "abstract")
"""Front-matter keys whose string value is prose about the page (Hugo, Jekyll, Decap CMS, Grav, Obsidian
Publish ``description``; Hugo ``summary``; Jekyll ``excerpt``; ``abstract`` of papers and theses): the indexer
keeps each as a chunk of its own whose ``heading_path`` is the key alone (``("description",)``); such a text
summarises the whole document, so its section is the document (its title), not a heading."""


class Link(BaseModel):
    """A link found in a document body.

    ``kind`` is ``"wikilink"`` (``[[Target|alias]]``) or ``"markdown"`` (relative ``.md`` link);
    ``target`` is the raw target without alias or heading; ``heading`` the ``#heading`` part if any;
    ``resolved`` the repository path the link resolves to, or ``None`` when it resolves to no
    document of the commit.
    """

    kind: str
    target: str
    heading: str | None = None
    alias: str | None = None
    resolved: str | None = None


class Document(BaseModel):
    """One parsed Markdown file of the indexed commit.

    ``path`` is the NFC-normalised repository path; ``blob_id`` the Git blob sha (hex) it was read
    from; ``size`` in bytes.  ``body`` is the Markdown text after the front matter (NFC, ``\\n``
    line endings).  ``published`` is false only when the front matter says ``published: false``
    (or ``publish: false``).  ``date`` is an ISO 8601 string or ``None``; ``year`` is derived from
    ``date`` when present.  ``front_matter`` is the JSON-safe front matter mapping.
    """

    path: str
    blob_id: str
    size: int
    title: str
    title_source: str = Field(description="front_matter | heading | filename")
    authors: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=list)
    published: bool = True
    date: str | None = None
    year: int | None = None
    dates: dict[str, str] = Field(default_factory=dict)
    front_matter: dict[str, Any] = Field(default_factory=dict)
    links: list[Link] = Field(default_factory=list)
    body: str = ""
    outline: dict[str, Any] | None = Field(
        default=None,
        description="what the graph needs of the body's one CommonMark parse, recorded at parse time so "
                    "that no later stage or incremental build parses the body again: ``headings`` "
                    "(``[level, line, end, text]`` per top-level heading) and ``urls`` (web/site link "
                    "destinations); ``None`` in bundles written before it (then the body is parsed)")


class Chunk(BaseModel):
    """A retrievable piece of a document.

    Identity is ``(path, ordinal)``; ``chunk_id`` is ``"<path>#<ordinal>"``.  ``text`` is the chunk's
    Markdown text (never empty); ``tokens`` its length in tiktoken ``cl100k_base`` tokens (never
    above the configured maximum); ``sha256`` the hex digest of ``text`` encoded as UTF-8.
    ``heading_path`` lists the headings enclosing the chunk, outermost first.
    """

    chunk_id: str
    path: str
    ordinal: int
    title: str
    heading_path: list[str] = Field(default_factory=list)
    text: str
    tokens: int
    sha256: str
    published: bool = True


class SkippedFile(BaseModel):
    """A file of the commit that was not indexed, with a stable ``reason`` code and detail.

    Reasons: ``not_utf8``, ``binary``, ``too_large``, ``invalid_front_matter``, ``not_a_blob``.
    """

    path: str
    reason: str
    detail: str = ""


def make_chunk_id(path: str, ordinal: int) -> str:
    """Return the chunk id ``"<path>#<ordinal>"`` for a document path and 0-based ordinal."""
    return f"{path}#{ordinal}"


def chunk_path(chunk_id: str) -> str:
    """Return the document path of a chunk id made by :func:`make_chunk_id` (the text before its last ``#``).

    Lets a reader group chunk ids by document without reading the chunk records.
    """
    return chunk_id.rpartition("#")[0]


RecordT = TypeVar("RecordT", bound=BaseModel)


def read_records(path: Path, model: type[RecordT]) -> Iterator[RecordT]:
    """Yield the records of a JSON-lines file (``docs.jsonl``, ``chunks.jsonl``) validated as ``model``.

    Blank lines are ignored; raises ``pydantic.ValidationError`` for a malformed line and
    ``OSError`` when the file cannot be read.
    """
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield model.model_validate_json(line)
