"""The answer request: the body of ``POST /answer`` and the options of ``gitrag ask`` (:class:`AnswerRequest`),
validated and with its question normalised (:func:`parse_answer_request`, :func:`normalise_question`).
"""

from __future__ import annotations

import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from query.contract import validate_request
from query.errors import InvalidQueryError
from query.search.request import SearchFilter

MAX_QUERY_CHARS = 1000


class AnswerRequest(BaseModel):
    """Body of ``POST /answer`` and the options of ``gitrag ask``.

    ``query``: the question (1..1000 characters with at least one letter or digit);
    ``mode``: ``answer`` (checked answer) or ``retrieve`` (the evidence only, no generator);
    ``generator``: ``extractive``, ``openai`` or ``anthropic`` (default: the server's);
    ``max_context_tokens``: evidence budget in tiktoken ``cl100k_base`` tokens (500..12000);
    ``filter``: restrict text retrieval (see :class:`~query.search.request.SearchFilter`);
    ``published_only``: as for ``/search``; ``debug``: add the checker's report (admin only).
    """

    model_config = {"extra": "forbid", "strict": True}

    query: str
    filter: SearchFilter | None = None
    mode: Literal["answer", "retrieve"] = "answer"
    generator: Literal["extractive", "openai", "anthropic"] | None = None
    max_context_tokens: int = Field(3000, ge=500, le=12000)
    published_only: bool = True
    debug: bool = False

    @field_validator("query", mode="before")
    @classmethod
    def _query_is_text(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError("query must be a string")
        return value


def normalise_question(text: str) -> str:
    """Return ``text`` in NFC with invisible format characters (zero-width space, BOM, bidi marks...)
    removed and whitespace collapsed.

    :raises InvalidQueryError: nothing left, no letter or digit (only punctuation or symbols), or
        more than :data:`MAX_QUERY_CHARS` characters.
    """
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidQueryError("query too long")
    text = unicodedata.normalize("NFC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Cc", "Cs", "Co", "Cn")
                   or ch in "\t\n")
    text = " ".join(text.split())
    if not text or not any(unicodedata.category(ch)[0] in "LN" for ch in text):
        raise InvalidQueryError("query has no words")
    return text


def parse_answer_request(payload: Any) -> AnswerRequest:
    """Validate a decoded JSON body as an :class:`AnswerRequest` with a normalised ``query``.

    :raises InvalidQueryError: missing, non-string, blank, invisible-only, punctuation-only or
        oversized query.
    :raises InvalidRequestError: anything else (unknown fields, wrong types, out of range).
    """
    request = validate_request(payload, AnswerRequest, "query", MAX_QUERY_CHARS)
    return request.model_copy(update={"query": normalise_question(request.query)})
