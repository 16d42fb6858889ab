"""Errors raised by the query side, each with the contract's stable ``reason`` and HTTP status.

Tree::

    QueryError
    ├── InvalidQueryError        empty, oversized or malformed query            400 invalid_query
    ├── InvalidRequestError      request body not JSON / wrong field types       400 invalid_request
    ├── PayloadTooLargeError     request body over the size limit                413 payload_too_large
    ├── RequestTimeoutError      request body not received within body_timeout   408 request_timeout
    ├── InvalidRequestError
    │   └── InvalidAtError       ``at`` is not a revision (see artifacts.store)  400 invalid_at
    ├── NotFoundError            unknown route or bundle                         404 bundle_not_found
    │   └── UnknownRevisionError ``at`` names no commit in any source repository 404 unknown_revision
    ├── BundleCorruptError       the chosen bundle fails verification            422 bundle_corrupt
    ├── StoreBusyError           the store lock is held by a build               503 store_busy
    ├── StoreWriteFailedError    CURRENT could not be written (disk full...)     503 store_write_failed
    ├── ClientDisconnectedError  the client went away while sending the body     (no response is read)
    ├── MisdirectedRequestError  no keys and a Host that is not loopback (DNS rebinding)  421 misdirected_request
    ├── UnauthorizedError        missing or wrong API key                        401 unauthorized
    ├── ForbiddenError           key lacks the role for the endpoint             403 forbidden
    ├── RateLimitedError         per-key request rate exceeded                   429 rate_limited
    ├── MediaTypeError           body is not application/json                    415 unsupported_media_type
    ├── ServiceNotConfiguredError webhooks / sync not configured                 503 (reason per use)
    ├── PlainNotFoundError       no such job or resource                          404 (reason per use)
    └── RetrievalUnavailableError no bundle open, or an engine failed to open    503 retrieval_unavailable
"""

from __future__ import annotations

from artifacts import errors as artifact_errors


class QueryError(Exception):
    """Base class; ``reason`` and ``status`` say how transports report it."""

    reason = "internal_error"
    status = 500

    def __init__(self, message: str, *, reason: str | None = None, fields: list[dict[str, str]] | None = None,
                 public_message: str | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason
        # ``public_message``: a fixed sentence chosen by the server (e.g. "a build is running now") that
        # replaces the reason's table message; never built from submitted values or exception text.
        self.public_message = public_message
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


class RequestTimeoutError(QueryError):
    """The request body did not arrive within the server's ``body_timeout``."""

    reason = "request_timeout"
    status = 408


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


class InvalidAtError(InvalidRequestError):
    reason = "invalid_at"


class UnknownRevisionError(NotFoundError):
    reason = "unknown_revision"


class BundleCorruptError(QueryError):
    """The bundle asked for fails verification; ``fields`` name the bad files (bundle-relative)."""

    reason = "bundle_corrupt"
    status = 422


class StoreBusyError(QueryError):
    reason = "store_busy"
    status = 503


class StoreWriteFailedError(QueryError):
    reason = "store_write_failed"
    status = 503


class ClientDisconnectedError(QueryError):
    """The client closed the connection before its body arrived; logged quietly, never a 500."""

    reason = "invalid_request"
    status = 400


class MisdirectedRequestError(QueryError):
    reason = "misdirected_request"
    status = 421


def from_artifact_error(exc: artifact_errors.ArtifactError) -> QueryError:
    """Map an ``artifacts`` error to the transport error with its status and reason (the one mapping).

    ``BundleIntegrityError`` keeps its ``problems`` (bundle-relative file names, never filesystem paths)
    as ``fields``; every other detail stays in the server log.
    """
    if isinstance(exc, artifact_errors.InvalidRevisionError):
        return InvalidAtError("bad revision")
    if isinstance(exc, artifact_errors.UnknownRevisionError):
        return UnknownRevisionError("unknown revision")
    if isinstance(exc, artifact_errors.BundleNotFoundError):
        commit = getattr(exc, "commit", None)
        if commit is not None and all(c in "0123456789abcdef" for c in commit):
            # the resolved commit is the store's data, not the submitted value: it shows why nothing matched
            return NotFoundError("no bundle", public_message=(
                f"The revision resolves to commit {commit[:12]}, which has no bundle (revisions are resolved in "
                "the served bundle's source repository first; build that commit or ask for a bundle id)."))
        return NotFoundError("no bundle")
    if isinstance(exc, artifact_errors.BundleIntegrityError):
        return BundleCorruptError("bundle fails verification",
                                  fields=[{"field": "bundle", "problem": p} for p in exc.problems[:20]])
    if isinstance(exc, artifact_errors.StoreLockedError):
        return StoreBusyError("store locked")
    if isinstance(exc, artifact_errors.StoreWriteError):
        return StoreWriteFailedError("store write failed")
    return RetrievalUnavailableError("bundle unavailable")
