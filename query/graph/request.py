"""The ``POST /graph`` request: its model, limits and validation."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from query.contract import validate_request
from query.errors import InvalidRequestError

MAX_QUESTION_CHARS = 1000
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


class GraphRequest(BaseModel):
    """``POST /graph`` body: ``query`` (1-1000 characters; ``question`` is accepted as an alias,
    exactly one of the two), ``limit`` rows per list (1-1000, default 100), ``published_only``
    (default true: persons and documents with ``published: false`` do not exist for the answer),
    ``at`` (commit or bundle; resolved by the transport, not here)."""

    # strict like SearchRequest: "false" is not a boolean and "5" not an integer (no silent coercion)
    model_config = ConfigDict(extra="forbid", strict=True)

    query: str | None = None
    question: str | None = None
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    published_only: bool = True
    at: str | None = None

    @model_validator(mode="after")
    def _one_text(self) -> GraphRequest:
        if (self.query is None) == (self.question is None):
            raise ValueError("give exactly one of query and question")
        return self

    @property
    def text(self) -> str:
        """The question, whichever field carried it."""
        return self.query if self.query is not None else self.question or ""


def parse_graph_request(payload: Any) -> GraphRequest:
    """Validate a decoded JSON body.

    :raises InvalidQueryError: ``query`` (or ``question``) missing, not a string, blank or too long.
    :raises InvalidRequestError: not an object, both ``query`` and ``question``, unknown fields or
        wrong types.
    """
    if isinstance(payload, dict) and "query" in payload and "question" in payload:
        raise InvalidRequestError("give exactly one of query and question",
                                  fields=[{"field": "query", "problem": "query and question are aliases; give one"}])
    text_field = "question" if isinstance(payload, dict) and "question" in payload else "query"
    return validate_request(payload, GraphRequest, text_field, MAX_QUESTION_CHARS)
