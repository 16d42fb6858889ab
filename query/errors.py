"""Errors raised by the query side, each with the contract's stable ``reason`` and HTTP status.

Tree::

    QueryError
    ├── InvalidQueryError        empty, oversized or malformed query            400 invalid_query
    ├── InvalidRequestError      request body not JSON / wrong field types       400 invalid_request
    ├── PayloadTooLargeError     request body over the size limit                413 payload_too_large
    ├── NotFoundError            unknown route or bundle                         404 bundle_not_found
    └── RetrievalUnavailableError no bundle open, or an engine failed to open    503 retrieval_unavailable
"""

from __future__ import annotations


class QueryError(Exception):
    """Base class; ``reason`` and ``status`` say how transports report it."""

    reason = "internal_error"
    status = 500

    def __init__(self, message: str, *, reason: str | None = None, fields: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason
        # ``fields``: [{"field": "limit", "problem": "Input should be less than or equal to 100"}] — names
        # and constraints from our own schema, never the submitted values.
        self.fields = fields or []


class InvalidQueryError(QueryError):
    reason = "invalid_query"
    status = 400


class InvalidRequestError(QueryError):
    reason = "invalid_request"
    status = 400


class PayloadTooLargeError(QueryError):
    reason = "payload_too_large"
    status = 413


class NotFoundError(QueryError):
    reason = "bundle_not_found"
    status = 404


class RetrievalUnavailableError(QueryError):
    reason = "retrieval_unavailable"
    status = 503
