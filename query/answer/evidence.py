"""Types shared by the checked-answer pipeline: evidence items, claims, generator replies, verdicts.

Pipeline (DESIGN.md, "Checked answers")::

    route (graph / text / graph+text) -> context: list[EvidenceItem] (E1..En, token budget)
      -> Generator.generate(question, evidence) -> GeneratorReply (claims citing E-ids + verbatim quotes)
      -> checker: one ClaimVerdict per claim -> at most one repair round -> deliver or refuse

The generator only *selects and phrases* evidence: every claim names evidence ids and carries a
``quote`` that must occur verbatim in the cited evidence text.  The application resolves ids to
the exact chunk text and source; it never trusts the generator's idea of where a quote came from.

Owners: :mod:`query.answer.attribution` (verdicts), :mod:`query.answer.relevance` (relevance, coverage),
:mod:`query.answer.checker` (generate -> check -> repair), :mod:`query.answer.generators` (extractive, OpenAI-
compatible, Anthropic), :mod:`query.answer.rag` (context packing), :mod:`query.answer.pipeline` (router, pipeline,
cache).  Nothing here imports those modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from artifacts.records import SUMMARY_KEYS
from query.errors import QueryError

CLAIM_FAILURES = (
    "unknown_evidence",    # an evidence id not in this request's context
    "missing_evidence",    # a claim that cites no evidence at all
    "misattributed",       # the quote is verbatim in another evidence item, not the cited one
    "fabricated",          # the quote occurs in no evidence item
    "frankenquote",        # the quote's pieces occur in the evidence, but not contiguously
    "unsupported_detail",  # a number, year, date or capitalised name/title of the claim is not in its evidence
    "graph_mismatch",      # a count or list differs from the graph aggregation
    "instruction_text",    # the quote overlaps evidence text addressing the reader or a model ("ignore …")
    "unbound_detail",      # a number, date, name, title of the claim text is not in its own quote (answer/binding.py)
    "polarity",            # the claim text negates what its quote states, or the reverse
    "off_question",        # the quote is supported, but it does not answer what the question asks
)
"""Stable reasons a claim fails the checker (``ClaimVerdict.reasons``)."""


FRONT_MATTER_SECTIONS = SUMMARY_KEYS
"""``heading_path`` labels of chunks that hold a front-matter text field of their document
(:data:`artifacts.records.SUMMARY_KEYS`, one owner for the indexer and the query side)."""


@dataclass(frozen=True)
class EvidenceItem:
    """One numbered piece of evidence given to a generator.

    ``evidence_id``: ``E1``, ``E2``...; ``kind``: ``chunk`` (the exact text of a chunk, or of its
    document's lead section) or ``graph`` (one graph fact rendered as a sentence, with the document
    it came from); ``text``: exactly what the generator sees and what quotes are checked against;
    ``source_id``: the ``S1``.. id of ``document_path`` in the response's ``sources``;
    ``facts``: for ``graph`` items, the structured facts (as in ``/graph``'s ``facts``) behind
    ``text``; ``tokens``: tiktoken ``cl100k_base`` tokens of ``text``.
    """

    evidence_id: str
    kind: Literal["chunk", "graph"]
    text: str
    document_path: str
    source_id: str
    commit: str
    chunk_id: str | None = None
    title: str | None = None
    heading_path: tuple[str, ...] = ()
    source_url: str | None = None
    facts: tuple[dict[str, Any], ...] = ()
    tokens: int = 0


@dataclass(frozen=True)
class Claim:
    """A generator's claim: ``text`` (one sentence for the reader), ``evidence`` (E-ids it rests on)
    and ``quote`` (a verbatim span of the cited evidence that supports it).

    A claim whose text merges several items carries one quote per item in ``quotes`` (``quote`` is then
    the first of them); each part of its text must be bound to its own quote (:mod:`query.answer.binding`).
    """

    text: str
    evidence: tuple[str, ...]
    quote: str
    quotes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GeneratorReply:
    """What a generator returned: its claims, and ``insufficient`` when it says the evidence does not
    answer the question.  ``raw`` is the provider's reply text (for the admin debug report only)."""

    claims: tuple[Claim, ...]
    insufficient: bool = False
    raw: str | None = None


@dataclass(frozen=True)
class ClaimVerdict:
    """The checker's verdict on one claim: ``ok`` or the ``reasons`` (from :data:`CLAIM_FAILURES`)
    with a short ``details`` line each (our own words, never echoing provider text verbatim)."""

    claim: Claim
    ok: bool
    reasons: tuple[str, ...] = ()
    details: tuple[str, ...] = ()


@dataclass
class GenerationOutcome:
    """Result of generate -> check -> (repair) for one question.

    ``claims``: delivered claims (all passed the checker); ``status``/``reason``: ``ok``/None, or
    ``no_answer`` with ``insufficient_evidence`` (generator said so, or coverage below threshold) or
    ``unsupported_answer`` (no claim survived); ``coverage``: share (0..1) of the question's content
    words covered by the delivered claims' evidence; ``attempts``: per attempt, the reply and its
    verdicts (for the admin debug report; never delivered in ``mode=answer`` otherwise);
    ``repaired``: a repair round ran.
    """

    claims: list[Claim]
    status: str
    reason: str | None
    coverage: float
    attempts: list[dict[str, Any]] = field(default_factory=list)
    repaired: bool = False


class GeneratorUnavailableError(QueryError):
    """The generator's provider failed (HTTP error, timeout, malformed reply twice, not configured).

    Transports report it as 503 ``generator_unavailable``; ``mode=retrieve`` never raises it.
    """

    reason = "generator_unavailable"
    status = 503


class Generator(Protocol):
    """A claim generator.  ``name``: ``extractive``, ``openai`` or ``anthropic``."""

    name: str

    def fingerprint(self) -> str:
        """Return a stable id of what changes its output (kind, model, base URL host, prompt version).

        Part of the answer cache key; never contains a secret.
        """
        ...

    async def generate(self, question: str, evidence: list[EvidenceItem], *,
                       repair: list[ClaimVerdict] | None = None) -> GeneratorReply:
        """Return claims for ``question`` citing ``evidence``; ``repair``: the failed verdicts of the
        previous attempt (the repair round).  Raises :class:`GeneratorUnavailableError`."""
        ...
