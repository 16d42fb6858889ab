"""``POST /document``: one page's Markdown as the bundle holds it, for checking a cited source.

Answers and search results cite documents by path (``S1`` -> ``document_path``); without a
``--base-url`` there is nowhere to click.  This endpoint returns the page itself from the same
bundle (``at`` like ``/search``), so a citation of an older commit shows that commit's text.
A page with ``published: false`` does not exist for the request unless ``published_only`` is false
(the same rule as ``/search`` and ``/graph``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from query.bundle import OpenedBundle
from query.contract import Envelope, Source, source_url, validate_request
from query.errors import NotFoundError

MAX_PATH_CHARS = 1000
"""Longest ``path`` accepted (characters)."""


class DocumentNotFoundError(NotFoundError):
    """No document with that path in the bundle (or only an unpublished one and ``published_only``)."""

    reason = "document_not_found"


class DocumentRequest(BaseModel):
    """``POST /document`` body: ``path`` (a document path as in ``document_path``, 1-1000
    characters), ``published_only`` (default true), ``at`` (resolved by the transport)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    path: str = Field(min_length=1, max_length=MAX_PATH_CHARS)
    published_only: bool = True
    at: str | None = Field(None, min_length=1, max_length=200)


def parse_document_request(payload: Any) -> DocumentRequest:
    """Validate a ``POST /document`` body; raises InvalidQueryError / InvalidRequestError (see validate_request)."""
    return validate_request(payload, DocumentRequest, "path", MAX_PATH_CHARS)


def get_document(bundle: OpenedBundle, request: DocumentRequest, base_url: str | None = None) -> dict[str, Any]:
    """Return the contract envelope with ``document``: ``path``, ``title``, ``published``, ``commit``
    and ``markdown`` (the body after the front matter, NFC, ``\\n`` line endings), and the page as
    source ``S1``.

    :raises DocumentNotFoundError: no such path, or an unpublished page with ``published_only``.
    """
    doc = bundle.docs.get(request.path)
    if doc is None or (request.published_only and not doc.published):
        raise DocumentNotFoundError("no such document")
    body = bundle.document_body(request.path)
    if body is None:
        raise DocumentNotFoundError("no such document")
    url = source_url(base_url, request.path, bundle.manifest.commit)
    envelope = Envelope(
        sources=[Source(source_id="S1", document_path=request.path, source_url=url, title=doc.title)],
        index_version=bundle.index_version, complete=True,
    )
    out = envelope.model_dump(mode="json")
    out["document"] = {"path": request.path, "title": doc.title, "published": doc.published,
                       "commit": bundle.manifest.commit, "markdown": body}
    return out
