"""Errors raised by the query side, each with the contract's stable ``reason`` and HTTP status.

Tree::

    QueryError
    ├── InvalidQueryError        empty, oversized or malformed query            400 invalid_query
    ├── InvalidRequestError      request body not JSON / wrong field types       400 invalid_request
    ├── PayloadTooLargeError     request body over the size limit                413 payload_too_large
    ├── NotFoundError            unknown route or bundle                         404 bundle_not_found
    ├── UnauthorizedError        missing or wrong API key                        401 unauthorized
    ├── ForbiddenError           key lacks the role for the endpoint             403 forbidden
    ├── RateLimitedError         per-key request rate exceeded                   429 rate_limited
    ├── MediaTypeError           body is not application/json                    415 unsupported_media_type
    ├── ServiceNotConfiguredError webhooks / sync not configured                 503 (reason per use)
    ├── PlainNotFoundError       no such job or resource                          404 (reason per use)
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


class UnauthorizedError(QueryError):
    reason = "unauthorized"
    status = 401


class ForbiddenError(QueryError):
    reason = "forbidden"
    status = 403


class RateLimitedError(QueryError):
    reason = "rate_limited"
    status = 429

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after  # seconds


class MediaTypeError(QueryError):
    reason = "unsupported_media_type"
    status = 415


class ServiceNotConfiguredError(QueryError):
    """A feature (webhooks, sync) the server was not configured for; ``reason`` is set per use."""

    status = 503


class PlainNotFoundError(QueryError):
    """A missing resource other than a bundle (e.g. a job); ``reason`` is set per use."""

    status = 404


class RetrievalUnavailableError(QueryError):
    reason = "retrieval_unavailable"
    status = 503
