"""The response contract shared by every retrieval endpoint (see DESIGN.md, "Response contract").

Every response, success or error, is one JSON object with ``status``, ``reason``, ``sources``,
``index_version``, ``complete``, ``truncated`` and ``truncation_reasons``; endpoints add their own
fields (``results`` for search).  Errors never echo submitted values, exception text, secrets or
filesystem paths: ``message`` is chosen from a fixed table by ``reason``.
"""

from __future__ import annotations

import unicodedata
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, Field, ValidationError

from query.errors import InvalidQueryError, InvalidRequestError

ERROR_MESSAGES = {
    "invalid_query": "The query is empty, too long or not a string.",
    "invalid_request": "The request body is not a valid JSON object for this endpoint.",
    "payload_too_large": "The request body is larger than the server accepts.",
    "request_timeout": "The request body did not arrive in time; the connection is closed.",
    "too_many_connections": "Too many open connections from this address or in total; retry later.",
    "bundle_not_found": "No bundle matches the request.",
    "not_found": "No such endpoint.",
    "method_not_allowed": "This method is not allowed on this endpoint.",
    "retrieval_unavailable": "No index is available to answer right now.",
    "unauthorized": "A valid API key is required.",
    "internal_error": "The server failed to handle the request.",
    "forbidden": "This API key may not use this endpoint.",
    "unpublished_forbidden": "Pages with published: false need the admin key (published_only: false).",
    "rate_limited": "Too many requests for this API key; retry later.",
    "cors_forbidden": "This origin is not allowed.",
    "invalid_signature": "The webhook signature is missing or wrong.",
    "webhook_unavailable": "Webhooks are not configured on this server.",
    "sync_unavailable": "Sync is not configured on this server.",
    "job_not_found": "No such job.",
    "document_not_found": "No published document has this path in the bundle.",
    "invalid_at": "The 'at' value is not a commit id, branch, tag, REV~N or REV^.",
    "unknown_revision": "The 'at' revision names no commit of the source repository.",
    "bundle_corrupt": "The bundle fails verification against its manifest; run `gitrag verify`.",
    "store_busy": "Another writer holds the store lock; retry later.",
    "store_write_failed": "The store pointer could not be written (for example, the disk is full).",
    "misdirected_request": "This server answers only requests addressed to a loopback host name.",
    "cross_site_forbidden": "Cross-site requests may not change this server's state.",
    "unsupported_content_encoding": "The request body's Content-Encoding is not supported; send it uncompressed.",
    "unsupported_media_type": "The request body must be application/json.",
    "generator_unavailable": "The answer generator is unavailable right now; mode=retrieve still works.",
}

STATUSES = ("ok", "no_answer", "ambiguous", "error")
TRUNCATION_REASONS = (
    "candidate_limit", "per_document_limit", "result_limit", "entity_limit", "fact_limit",
    "path_limit", "evidence_limit", "llm_context_budget",
)


class IndexVersion(BaseModel):
    """The bundle that answered: commit sha, bundle id and logical content digest."""

    commit: str
    bundle_id: str
    content_digest: str


class Source(BaseModel):
    """A cited document: ``source_id`` is ``S1``, ``S2``...; url and title may be null, never invented."""

    source_id: str
    document_path: str
    source_url: str | None = None
    title: str | None = None


class Envelope(BaseModel):
    """Fields every retrieval response carries."""

    status: str = "ok"
    reason: str | None = None
    sources: list[Source] = Field(default_factory=list)
    index_version: IndexVersion | None = None
    complete: bool | None = None
    truncated: bool = False
    truncation_reasons: list[str] = Field(default_factory=list)


def error_body(reason: str, message: str | None = None) -> dict[str, Any]:
    """Return the contract's error envelope for a stable ``reason``.

    ``message`` defaults to the reason's sentence in :data:`ERROR_MESSAGES`; a caller may pass a more
    specific fixed sentence of its own (never one built from the request or an exception).
    """
    body = Envelope(status="error", reason=reason).model_dump(mode="json")
    body["message"] = message or ERROR_MESSAGES.get(reason, ERROR_MESSAGES["internal_error"])
    return body


ModelT = TypeVar("ModelT", bound=BaseModel)


def validate_request(payload: Any, model: type[ModelT], text_field: str, max_chars: int = 1000) -> ModelT:
    """Validate a decoded JSON body whose ``text_field`` holds the user's query or question.

    The one request validator of the HTTP API and the CLI.  Raises
    :class:`~query.errors.InvalidQueryError` when that field is missing, not a string, longer than
    ``max_chars`` characters, not valid Unicode (lone surrogates) or *visibly* empty (only
    whitespace, control or format characters such as a zero-width space or a BOM), and
    :class:`~query.errors.InvalidRequestError` for anything else (not an object, unknown fields, wrong
    types, out of range, a lone surrogate in any other string, key included) with ``fields``
    naming each field and the constraint it breaks.
    """
    if not isinstance(payload, dict):
        raise InvalidRequestError("body must be a JSON object")
    text = payload.get(text_field)
    if not isinstance(text, str) or len(text) > max_chars or not is_visible_text(text):
        raise InvalidQueryError(f"{text_field} must be a non-empty string of at most {max_chars} characters")
    bad = [where for where in _invalid_unicode(payload, "")]
    if text_field in bad:
        raise InvalidQueryError(f"{text_field} is not valid Unicode text")
    if bad:
        raise InvalidRequestError("invalid Unicode", fields=[{"field": where or "body", "problem": "not valid Unicode "
                                                              "text (lone surrogate)"} for where in bad[:20]])
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        fields = [{"field": ".".join(str(p) for p in err["loc"]) or "body", "problem": err["msg"]}
                  for err in exc.errors(include_input=False, include_url=False)]
        raise InvalidRequestError(f"invalid {model.__name__}", fields=fields) from exc


def is_visible_text(text: str) -> bool:
    """True when ``text`` has at least one character that is not whitespace, control or format (Cc, Cf, Zs...).

    A query made only of zero-width spaces, BOMs or direction marks is as empty as one of spaces.
    """
    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
               for ch in text)


def _invalid_unicode(value: Any, where: str) -> list[str]:
    """Dotted paths (``filter.path_prefix``, ``filter.tags.2``) of strings, keys included, with lone surrogates.

    Iterative, so a deeply nested body cannot exhaust the interpreter's recursion limit.
    """
    found: list[str] = []
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if not _encodable(item):
                found.append(path)
        elif isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str) and not _encodable(key):
                    found.append(path or "body")
                    continue
                stack.append((sub, f"{path}.{key}" if path else str(key)))
        elif isinstance(item, list):
            stack.extend((sub, f"{path}.{i}" if path else str(i)) for i, sub in enumerate(item))
    return sorted(found)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def source_url(base_url: str | None, path: str, commit: str | None = None) -> str | None:
    """Return ``base_url`` joined with the URL-quoted document path, or ``None`` without a base URL.

    ``{commit}`` in ``base_url`` is replaced by ``commit`` (the full sha of the bundle that answered),
    so a result of an older commit links to that commit's version of the page
    (``https://github.com/org/wiki/blob/{commit}/``).
    """
    if not base_url:
        return None
    if "{commit}" in base_url and commit:
        base_url = base_url.replace("{commit}", commit)
    return base_url.rstrip("/") + "/" + quote(path)
