"""Request/response models of the HTTP API and the OpenAPI 3.1 document served at ``/openapi.json``.

The document is generated from the server's route table (``query.server.routes.route_table``) and the
pydantic models below, so it cannot drift from the routes.  Each operation has an
``operationId``, a summary, a JSON request body where there is one, its success model and the
error envelope, which is what OpenWebUI needs to use the server as a tool server.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from artifacts import __version__
from query.answer.request import AnswerRequest
from query.contract import Envelope
from query.graph.request import GraphRequest
from query.search.request import SearchRequest

AT_DESCRIPTION = ("Answer from the bundle of this revision instead of the served one - what `gitrag use` accepts: "
                  "a bundle id, a full or short commit id, a branch or a tag of the source repository, optionally "
                  "with ~N / ^ steps (main~2, v1^). 400 invalid_at when malformed, 404 unknown_revision when it "
                  "names no commit, 404 bundle_not_found when that commit has no bundle.")


class SearchBody(SearchRequest):
    """Body of ``POST /search``."""

    query: str = Field(min_length=1, max_length=1000)
    at: str | None = Field(None, min_length=1, max_length=200, description=AT_DESCRIPTION)


class GraphBody(GraphRequest):
    """Body of ``POST /graph``: exactly one of ``query`` and ``question``."""

    model_config = {"json_schema_extra": {"oneOf": [{"required": ["query"]}, {"required": ["question"]}]}}

    query: str | None = Field(None, min_length=1, max_length=1000)
    question: str | None = Field(None, min_length=1, max_length=1000)
    at: str | None = Field(None, min_length=1, max_length=200, description=AT_DESCRIPTION)


class SearchResult(BaseModel):
    """One ranked chunk."""

    rank: int
    source_id: str
    chunk_id: str
    document_path: str
    title: str
    heading_path: list[str]
    text: str = Field(description="the whole chunk text")
    snippet: str = Field(description="best-matching passage of the chunk, matched words in **")
    source_url: str | None
    score: float = Field(description="fused reciprocal-rank score")
    match: Literal["lexical", "semantic", "both"] = Field(
        description="which retrieval arm found the chunk: lexical (BM25, its words), semantic (the vector arm "
                    "only, matched by meaning: the snippet then marks related word forms or shows the chunk "
                    "start) or both")
    debug: dict[str, Any] | None = None


ENGINES_DESCRIPTION = ('retrieval arms the served bundle has: ["bm25", "vector"], or ["bm25"] while it is a lexical '
                       "bundle (published before its vectors; the complete bundle follows by itself)")
WARNINGS_DESCRIPTION = "sentences about the answer's basis, e.g. that the vectors are still being computed"


class SearchResponse(Envelope):
    """The contract's envelope plus ``engines``, ``warnings`` and ``results``."""

    engines: list[str] = Field(default_factory=list, description=ENGINES_DESCRIPTION)
    warnings: list[str] = Field(default_factory=list, description=WARNINGS_DESCRIPTION)
    results: list[SearchResult] = Field(default_factory=list)


class AnswerBody(AnswerRequest):
    """Body of ``POST /answer``.  ``Accept: text/event-stream`` streams SSE events ``retrieval``,
    ``status`` (generating / checking / repairing), ``answer`` (the checked body below) and ``done``."""

    query: str = Field(min_length=1, max_length=1000)
    at: str | None = Field(None, min_length=1, max_length=200, description=AT_DESCRIPTION)


class ClaimEvidence(BaseModel):
    """Where a claim's quote stands: the evidence item, its source and chunk, and the verbatim quote."""

    evidence_id: str
    source_id: str
    chunk_id: str | None
    document_path: str
    heading_path: list[str] = Field(default_factory=list, description='headings the quote sits under; ["description"] '
                                    "for a document's front-matter description")
    quote: str


class AnswerClaim(BaseModel):
    """One delivered claim; it passed the checker against every evidence item it cites."""

    text: str
    source_ids: list[str]
    evidence: list[ClaimEvidence]


class AnswerCoverage(BaseModel):
    """What the answer covers: ``status`` supported | partial, ``warnings`` and ``limitations`` in words."""

    scope: str
    status: str
    warnings: list[str]
    limitations: list[str]
    coverage: float | None = Field(None, description="share of the question's content words covered by the evidence")
    claims: int
    answerability: dict[str, Any] | None = Field(
        None, description="{score: the best delivered claim's calibrated answerability (0..1), threshold, variant: "
                          "full | lexical | dense}; null on the graph route or without an installed model")


class AnswerResponse(Envelope):
    """The contract's envelope plus the checked answer (``mode=answer``) or the evidence (``mode=retrieve``)."""

    query: str
    engine: str = Field(description="graph, text or graph+text")
    answer: str | None = Field(description="claims joined, each followed by its [S1] markers; null when refused")
    claims: list[AnswerClaim] = Field(default_factory=list)
    answer_coverage: AnswerCoverage | None = None
    cached: bool
    engines: list[str] = Field(default_factory=list, description=ENGINES_DESCRIPTION)
    warnings: list[str] = Field(default_factory=list, description=WARNINGS_DESCRIPTION)
    timings: dict[str, float] = Field(description="milliseconds per stage")
    candidates: list[dict[str, Any]] | None = Field(None, description="ambiguous: the persons that fit")
    evidence: list[dict[str, Any]] | None = Field(None, description="mode=retrieve: E1..En with chunk id, path, "
                                                  "heading path, url, commit and text")
    debug: dict[str, Any] | None = Field(None, description="admin only: the checker's attempts and verdicts")


class ErrorResponse(Envelope):
    """Every error: ``status`` is ``error``, ``reason`` a stable code, ``message`` a fixed text."""

    message: str


class BundleSummary(BaseModel):
    commit: str
    bundle_id: str
    content_digest: str
    commit_summary: str
    counts: dict[str, Any]
    embedder: str


class HealthResponse(BaseModel):
    """Readiness.  ``auth`` says whether API keys are required; ``message`` says what to do when not ready.

    On a server with API keys, the details (``bundle``, ``last_reload_error``, ``failed_bundle``,
    ``swaps``, ``history_cache``, ``warm_s``) are present only for a request with a valid key (any role).
    """

    status: str
    ready: bool
    reason: str | None
    message: str | None = Field(None, description="what to do when not ready (e.g. run `gitrag build`)")
    auth: str
    last_reload_error: str | None = Field(None, description="why the last reload failed (files at fault)")
    failed_bundle: str | None = None
    swaps: int | None = None
    bundle: BundleSummary | None = None
    history_cache: dict[str, Any] | None = None
    warm_s: dict[str, float] | None = Field(None, description="seconds per warm-up probe (search, graph, document, "
                                            "answer, total) of the last bundle warmed before it was served")
    worker: dict[str, int] | None = Field(None, description="with `gitrag serve --workers N`: the answering "
                                          "worker's index (0..N-1) and N")


class BundleItem(BaseModel):
    bundle_id: str
    commit: str
    commit_time: int = Field(description="seconds since the Unix epoch")
    commit_summary: str
    ref: str | None
    content_digest: str
    documents: int
    chunks: int
    stage: str = Field("complete", description="complete, or lexical: BM25 + graph, published before its vectors")
    current: bool
    served: bool
    cached: bool | None = Field(None, description="on a replica (`serve --from`): whether its local cache holds "
                                "the bundle (the others are downloaded on the first `at=`)")


class BundlesResponse(BaseModel):
    status: str
    current: str | None
    served: str | None
    bundles: list[BundleItem]
    remote_error: str | None = Field(None, description="on a replica: the remote store could not be listed, "
                                     "so only the cached bundles are listed")


class UseBody(BaseModel):
    """Body of ``POST /admin/use``."""

    model_config = {"extra": "forbid"}

    bundle: str = Field(min_length=1, max_length=200,
                        description="a bundle id, or a commit id, branch or tag (as for `at`)")


class ReloadResponse(BaseModel):
    status: str
    swapped: bool
    served: str | None
    current: str | None
    last_reload_error: str | None


class JobAccepted(BaseModel):
    """A build job was queued (or an existing one matched): poll ``status_url``."""

    status: str = "accepted"
    job_id: int
    status_url: str
    coalesced: bool
    duplicate: bool


class JobInfo(BaseModel):
    id: int
    kind: str
    branch: str
    old_commit: str | None
    commit: str | None
    status: str = Field(description="queued, running, succeeded or failed")
    phase: str
    attempts: int
    error: str | None = Field(description="error class of the last failure")
    bundle_id: str | None
    created: float
    updated: float


class JobResponse(BaseModel):
    status: str
    job: JobInfo


_ERRORS = {"400": "Invalid request (invalid_at for a malformed `at`)", "401": "Missing or wrong API key",
           "403": "Key not allowed here, or a cross-site request to a state-changing route",
           "404": "Not found (unknown_revision / bundle_not_found for `at`)", "413": "Body too large",
           "415": "Body is not application/json, or its Content-Encoding is not supported",
           "421": "Host is not a loopback name (server without keys)",
           "422": "The bundle asked for fails verification (bundle_corrupt)",
           "429": "Rate limited (also after too many failed key attempts)",
           "503": "No bundle, store busy, or feature unavailable"}


def _operation_id(method: str, path: str) -> str:
    words = re.sub(r"\{[^}]*\}", "by_id", path).strip("/").replace(".json", "").replace("/", "_").replace("-", "_")
    words = words or "root"
    return f"{method.lower()}_{words}" if method != "POST" or path.startswith(("/admin", "/sync", "/webhook")) \
        else words


def build_document(routes: list[Any], keys: bool = True) -> dict[str, Any]:
    """Return the OpenAPI 3.1 document for ``routes`` (``query.server.routes.Route`` rows)."""
    schemas: dict[str, Any] = {}

    def ref(model: type[BaseModel]) -> dict[str, str]:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, sub in schema.pop("$defs", {}).items():
            schemas[name] = sub
        schemas[model.__name__] = schema
        return {"$ref": f"#/components/schemas/{model.__name__}"}

    error = {"content": {"application/json": {"schema": ref(ErrorResponse)}}}
    paths: dict[str, Any] = {}
    for route in routes:
        path = re.sub(r"\{(\w+):[^}]*\}", r"{\1}", route.path)
        op: dict[str, Any] = {
            "operationId": _operation_id(route.method, path),
            "summary": route.summary,
            "description": (route.handler.__doc__ or route.summary).strip(),
            "tags": [path.strip("/").split("/")[0] or "root"],
        }
        if route.request_model is not None:
            body = {"application/json": {"schema": ref(route.request_model)}}
            op["requestBody"] = {"required": True, "content": body}
        success: dict[str, Any] = {"description": "OK"}
        if route.response_model is not None:
            success["content"] = {"application/json": {"schema": ref(route.response_model)}}
        elif path == "/openapi.json":
            success["content"] = {"application/json": {"schema": {"type": "object"}}}
        op["responses"] = {str(route.status): success, **{code: {"description": text, **error}
                                                          for code, text in _ERRORS.items()}}
        params = re.findall(r"\{(\w+)\}", path)
        if params:
            op["parameters"] = [{"name": p, "in": "path", "required": True, "schema": {"type": "integer"}}
                                for p in params]
        if route.role in ("search", "sync", "admin") and keys:
            op["security"] = [{"ApiKey": []}, {"Bearer": []}]
        if route.role == "webhook":
            op["description"] += " The body is signed with the configured webhook secret; no API key."
        paths.setdefault(path, {})[route.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "gitrag", "version": __version__,
                 "description": "Search a Git-native Markdown knowledge base: hybrid retrieval over immutable, "
                                "commit-addressed bundles, with time travel (`at`)."},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                                "Bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
