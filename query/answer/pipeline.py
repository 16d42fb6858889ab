"""Checked answers: route a question (graph / text / graph+text), build evidence, generate, check, deliver.

Router (:func:`route_question`), graph first:

=============================================  ==========================================================
graph answer                                   what ``/answer`` does
=============================================  ==========================================================
``ok`` with facts                              evidence = the facts (one item per document), phrased
                                               deterministically (:class:`GraphPhrasing`), still checked
``ok`` without facts / other ``no_answer``     ``no_answer`` with the graph's reason (``engine: graph``)
``unknown_person``                             ``no_answer`` / ``unknown_person`` (also for a content
                                               question about someone the wiki does not know: it is
                                               never answered from another person's page)
``ambiguous_person``                           ``ambiguous`` with the graph's ``candidates``
``unsupported_question``, structure question  ``no_answer`` / ``unsupported_question``: persons or
                                               documents selected by front matter or links ("Ktorí
                                               študenti majú tag X?", ``entities.structure_question``)
                                               are never answered by a text sentence
``unsupported_question`` naming known persons  text retrieval restricted to their pages (``graph+text``)
anything else                                  text retrieval over the whole bundle (``text``)
=============================================  ==========================================================

A definition question ("Co je X?", "What is X?", "Kdo je X?";
:func:`query.question.definition_question`) is answered only by a sentence that defines X
(evidence with such sentences first, claims checked by :func:`query.answer.relevance.claim_relevance`); when
the best one only says what kind of thing X is (a relative clause, a noun of its kind),
``answer_coverage`` is ``partial`` with a warning.

Then (``mode=answer``): no evidence above the relevance gate (:data:`query.answer.rag.MIN_SUPPORT`) ->
``no_answer`` / ``insufficient_evidence`` without calling a generator; otherwise
:func:`query.answer.checker.run_generation` (generate -> check, incl. the claim-level relevance gate
:func:`query.answer.relevance.claim_relevance` -> one repair -> drop what still fails -> coverage gate over
the delivered claims).  ``mode=retrieve`` stops after the evidence and never calls a generator.

Answers are cached (:class:`AnswerCache`) by bundle ``content_digest``, generator fingerprint,
normalised question, filter, mode and budget, so a swap to another bundle never serves a stale
answer.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from artifacts.analysis import fold, normalize_text
from query.answer.answerability import UnitScorer, default_model
from query.answer.evidence import Claim, EvidenceItem, GenerationOutcome, Generator, GeneratorReply
from query.answer.rag import MIN_SUPPORT, MIN_SUPPORT_RESTRICTED, Context, graph_context, text_context
from query.answer.sentences import defines
from query.bundle import OpenedBundle
from query.contract import Envelope, Source, validate_request
from query.errors import InvalidQueryError
from query.graph.assembly import answer_list, shown_entries
from query.graph.dispatch import answer_graph
from query.graph.index import graph_index
from query.graph.request import MAX_LIMIT as GRAPH_MAX_LIMIT
from query.graph.words import phrasing
from query.question import analyse_question, definition_question
from query.search.request import SearchFilter, SearchOptions
from query.search.response import engine_warnings, engines_used
from query.search.snippets import display_text

MAX_QUERY_CHARS = 1000
Emit = Callable[[str, dict[str, Any]], Awaitable[None]]
"""SSE hook: ``await emit(event, data)`` with events ``retrieval``, ``status``, ``answer``."""


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


# -- routing ---------------------------------------------------------------------------------------


@dataclass
class Routed:
    """Where a question went: ``engine`` (graph | text | graph+text), the evidence ``context``, and,
    when the route already decided, ``status``/``reason`` (no_answer, ambiguous) and ``candidates``."""

    engine: str
    context: Context
    status: str = "ok"
    reason: str | None = None
    graph_body: dict[str, Any] | None = None
    candidates: list[dict[str, Any]] | None = None
    complete: bool | None = None
    timings: dict[str, float] = field(default_factory=dict)
    resolved_words: tuple[str, ...] = ()


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def _resolved_paths(bundle: OpenedBundle, entities: dict[str, Any]) -> set[str]:
    """Pages the graph resolved the question to: the pages of its persons and the pages it names by title."""
    paths: set[str] = {str(p["path"]) for p in entities.get("pages") or [] if p.get("path")}
    persons = entities.get("persons") or []
    index = graph_index(bundle) if persons else None
    for p in persons:
        path = p.get("path")
        if path is None and index is not None and p.get("id") in index.persons:
            path = index.persons[p["id"]].path
        if path:
            paths.add(path)
    return paths


def route_question(bundle: OpenedBundle, request: AnswerRequest, options: SearchOptions,
                   min_support: float | None = None) -> Routed:
    """Route ``request.query`` (see the module table) and build its evidence.

    ``min_support``: relevance gate for text evidence (default :data:`query.answer.rag.MIN_SUPPORT`, or
    :data:`query.answer.rag.MIN_SUPPORT_RESTRICTED` when retrieval is restricted to the pages of persons
    the graph resolved).

    :raises RetrievalUnavailableError: the graph or the text index cannot be queried.
    """
    started = time.perf_counter()
    # the whole list: what the answer shows of it is decided by the evidence budget (max_context_tokens)
    body = answer_graph(bundle, {"question": request.query, "published_only": request.published_only,
                                 "limit": GRAPH_MAX_LIMIT}, base_url=options.base_url)
    timings = {"graph": _ms(started)}
    status, reason = body.get("status"), body.get("reason")
    entities = body.get("entities") or {}
    budget = request.max_context_tokens
    definition = definition_question(request.query)
    if status == "ok" and definition is not None and definition.kind == "thing" \
            and body.get("intent") in ("persons_with_tag", "documents_with_tag"):
        # "Čo je téma Syntéza reči?" asks what X is; the graph's list of the students of topic X is no
        # definition: the text (a sentence defining X) answers it, or nothing does
        status, reason = "no_answer", "unsupported_question"
    if status == "ok":
        context = graph_context(bundle, body, max_tokens=budget, base_url=options.base_url)
        if not context.items:
            return Routed("graph", context, "no_answer", "no_matching_sources", graph_body=body,
                          complete=body.get("complete"), timings=timings)
        return Routed("graph", context, graph_body=body, complete=body.get("complete"), timings=timings)
    if status == "ambiguous":
        return Routed("graph", Context(), "ambiguous", reason or "ambiguous_person", graph_body=body,
                      candidates=body.get("candidates") or [], timings=timings)
    if status == "no_answer" and reason != "unsupported_question":
        return Routed("graph", Context(), "no_answer", reason or "no_matching_sources", graph_body=body,
                      complete=body.get("complete"), timings=timings)
    if entities.get("structure_question"):
        # persons or documents selected by front matter or links ("Ktorí študenti majú tag X?"): only
        # the graph answers them, and it did not understand this one; a text sentence would name
        # none of the asked persons or documents, so the question is refused
        return Routed("graph", Context(), "no_answer", "unsupported_question", graph_body=body, timings=timings)
    # unsupported_question: the graph did not answer; text retrieval may, within what it recognised.
    started = time.perf_counter()
    paths = _resolved_paths(bundle, entities)
    engine = "graph+text" if paths else "text"
    if min_support is None:
        min_support = MIN_SUPPORT_RESTRICTED if paths else MIN_SUPPORT
    names = [w for p in entities.get("persons") or [] for w in str(p.get("matched") or "").split()]
    # "Kdo je X?": X is what the pages must be searched for, even when the graph knows X as a person
    search_names = [] if definition is not None else names
    context = text_context(bundle, request.query, max_tokens=budget, options=options, flt=request.filter,
                           published_only=request.published_only, paths=paths or None, min_support=min_support,
                           resolved_words=search_names)
    timings["retrieval"] = _ms(started)
    return Routed(engine, context, graph_body=body, timings=timings, resolved_words=tuple(names))


# -- graph phrasing --------------------------------------------------------------------------------


LIST_SHOWN = 10
"""Fact lines a graph answer's text shows before it sums up the rest ("A další 42."); every line
stays a checked claim in ``claims`` with its source."""
SUMMARISED_INTENTS = frozenset({"documents_of_author", "documents_with_tag", "links_to", "links_from"})
"""Graph intents whose answer is a list of documents, summed up after :data:`LIST_SHOWN` titles; a list
of persons (students of a year, of a supervisor, with a tag) is the answer itself and is shown whole."""


class GraphPhrasing:
    """Deterministic phrasing of graph evidence, used in place of a generator for ``engine: graph``.

    One claim per evidence line (each line renders graph facts in the question's language, quoted
    verbatim); when the graph answer holds an exact ``count`` (count questions), a first claim states
    it (``"Počet: N."``, ``"Count: N."``) citing the first item (every item carries the aggregation).
    Checked by :func:`check_graph`.
    """

    name = "graph"

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.words = phrasing((body.get("entities") or {}).get("language"))

    def fingerprint(self) -> str:
        return "graph-phrasing/2"

    def count_claim(self, evidence: list[EvidenceItem]) -> Claim | None:
        """Return the exact-count claim, or ``None`` when the graph answer has no count."""
        answer = self.body.get("answer")
        agg = self.body.get("aggregation")
        if not (isinstance(answer, dict) and "count" in answer and isinstance(agg, dict)
                and isinstance(agg.get("count"), int) and evidence):
            return None
        first = next(line.strip() for line in evidence[0].text.splitlines() if line.strip())
        return Claim(text=self.words.count.format(count=agg["count"]), evidence=(evidence[0].evidence_id,),
                     quote=first)

    def line_claims(self, evidence: list[EvidenceItem]) -> list[Claim]:
        """Return one claim per evidence line (text = quote = the line)."""
        return [Claim(text=line.strip(), evidence=(item.evidence_id,), quote=line.strip())
                for item in evidence for line in item.text.splitlines() if line.strip()]

    def text(self, claims: list[dict[str, Any]], missing: int = 0) -> str:
        """The answer text of delivered ``claims`` (``_deliver``'s JSON): the count claim and, for a list of
        documents (:data:`SUMMARISED_INTENTS`), the first :data:`LIST_SHOWN` fact lines with their
        ``[S..]`` markers, then the rest summed up in one
        sentence ("A další 42.") followed by the markers of their sources (nothing is cut silently:
        every claim stays in ``claims``).  ``missing``: entries of the list no delivered claim names (cut
        by a limit or the evidence budget, or left out by the checker): the text ends with "A ďalšie N."
        for them, and then shows every delivered line."""
        count = self.words.count.split("{count}")[0]
        head = 1 if claims and count and claims[0]["text"].startswith(count) else 0
        shown = claims[: head + LIST_SHOWN]
        rest = claims[head + LIST_SHOWN:]
        if len(rest) == 1 or self.body.get("intent") not in SUMMARISED_INTENTS or missing:
            # "and 1 more" says no less than the line itself; a list of persons is shown whole
            shown, rest = claims, []
        parts = [f"{c['text']} " + "".join(f"[{s}]" for s in c["source_ids"]) for c in shown]
        premise = _premise_of(self.body)
        if premise is not None:  # "Je pravda, že ...?": confirmed ("Áno.") or corrected ("Nie, ...:")
            parts.insert(0, self.words.premise_holds if premise["holds"] else self.words.premise_fails)
        if rest:
            sids = dict.fromkeys(s for c in rest for s in c["source_ids"])
            parts.append(self.words.more.format(count=len(rest)) + " " + "".join(f"[{s}]" for s in sids))
        if missing:
            parts.append(self.words.more.format(count=missing))
        return " ".join(parts)


def check_graph(question: str, evidence: list[EvidenceItem], body: dict[str, Any]) -> GenerationOutcome:
    """Check the graph phrasing of ``body`` and return what may be delivered.

    Fact lines are checked like any claim (quote verbatim in the cited item, numbers and names in
    it); the count claim is checked with the graph body too, so a count that differs from the
    aggregation is dropped.  (Numbers inside titles, e.g. ``GPT-2``, are not counts: only the count
    claim gets the graph-count check.)  Coverage counts the question words the graph's analysis
    explained (``entities.explained_words``) as covered: the graph answered for them.
    """
    from query.answer.attribution import MAX_CLAIMS, check_reply
    from query.answer.relevance import coverage

    phrasing_ = GraphPhrasing(body)
    count = phrasing_.count_claim(evidence)
    lines = phrasing_.line_claims(evidence)
    verdicts = check_reply(question, [count], evidence, graph=body) if count is not None else []
    # check_reply checks at most MAX_CLAIMS claims of a generator's reply; a graph list is longer
    # (every fact line is a claim), so it is checked in batches rather than cut
    for start in range(0, len(lines), MAX_CLAIMS):
        verdicts += check_reply(question, lines[start:start + MAX_CLAIMS], evidence, graph=None)
    attempts = [{"attempt": 1, "insufficient": False, "error": None, "raw": None, "verdicts": [
        {"text": v.claim.text, "evidence": list(v.claim.evidence), "quote": v.claim.quote, "ok": v.ok,
         "reasons": list(v.reasons), "details": list(v.details)} for v in verdicts]}]
    passed = [v.claim for v in verdicts if v.ok]
    if not passed or (count is not None and not verdicts[0].ok):
        # a count answer whose count fails is not delivered as a bare list
        return GenerationOutcome([], "no_answer", "unsupported_answer", 0.0, attempts)
    explained = (body.get("entities") or {}).get("explained_words") or []
    return GenerationOutcome(passed, "ok", None, coverage(question, passed, evidence, resolved=explained), attempts)


# -- delivery --------------------------------------------------------------------------------------


def _fold_ws(text: str) -> str:
    return " ".join(normalize_text(text).casefold().split())


def _front_matter(item: EvidenceItem) -> list[Any]:
    """Values of a graph item's facts that only the front matter states (``[]`` for a chunk item)."""
    if item.kind != "graph":
        return []
    return list(dict.fromkeys(v for f in item.facts for v in f.get("front_matter") or []))


def _deliver(claims: list[Claim], context: Context, *, display: bool = False) -> tuple[str, list[dict[str, Any]],
                                                                                    list[Source]]:
    """Return ``(answer text with [S..] markers, claims JSON, cited sources renumbered S1..)``.

    Each claim's ``evidence`` entry names where its quote stands: ``document_path``, ``chunk_id`` and
    ``heading_path`` (the headings above the quote; ``["description"]`` for a document's front-matter
    description, :data:`artifacts.records.SUMMARY_KEYS`).

    ``display``: claim texts are shown as a reader sees them (:func:`query.search.snippets.display_text`:
    no ``**``, link destinations or other Markdown); each evidence ``quote`` stays verbatim, as
    the checker verified it against the source.
    """
    from query.answer.relevance import quote_section

    by_id = {e.evidence_id: e for e in context.items}
    old_sources = {s.source_id: s for s in context.sources}
    renumber: dict[str, str] = {}
    sources: list[Source] = []
    out: list[dict[str, Any]] = []
    parts: list[str] = []
    for claim in claims:
        evidence = []
        sids: list[str] = []
        for eid in claim.evidence:
            item = by_id.get(eid)
            if item is None:
                continue
            if item.source_id not in renumber:
                renumber[item.source_id] = f"S{len(renumber) + 1}"
                src = old_sources.get(item.source_id) or Source(source_id=item.source_id,
                                                                document_path=item.document_path,
                                                                source_url=item.source_url, title=item.title)
                sources.append(src.model_copy(update={"source_id": renumber[item.source_id]}))
            sid = renumber[item.source_id]
            if sid not in sids:
                sids.append(sid)
            for quote in claim.quotes or (claim.quote,):  # one quote per merged item (query.answer.binding)
                if _fold_ws(quote) in _fold_ws(item.text):
                    evidence.append({"evidence_id": eid, "source_id": sid, "chunk_id": item.chunk_id,
                                     "document_path": item.document_path,
                                     "heading_path": list(quote_section(quote, item)), "quote": quote,
                                     # values of a graph fact the cited chunk does not state: the page's
                                     # front matter does (heading_path ["front matter"] when no chunk does)
                                     **({"front_matter": values} if (values := _front_matter(item)) else {})})
                    break
        text = " ".join(display_text(claim.text).split()) if display else claim.text
        out.append({"text": text, "source_ids": sids, "evidence": evidence})
        parts.append(f"{text} " + "".join(f"[{s}]" for s in sids))
    return " ".join(parts), out, sources


# -- cache -----------------------------------------------------------------------------------------


def _scorer(bundle: OpenedBundle, question: str, context: Context) -> UnitScorer | None:
    """The answerability scorer of one text-route request (None when no model is installed)."""
    if default_model() is None:
        return None
    try:
        embedder = bundle.scoring_embedder()
    except Exception:  # noqa: BLE001 - a bundle whose model cannot load is scored lexically
        embedder = None
    return UnitScorer(analyse_question(question), context.items, embedder, weights=context.word_weights)


class AnswerCache:
    """LRU of answer bodies bounded by ``max_entries`` and ``max_bytes`` (UTF-8 JSON size); thread-safe.

    The key holds the bundle's ``content_digest``, so answers of another bundle are never served.
    """

    def __init__(self, max_entries: int = 256, max_bytes: int = 16 * 1024 * 1024) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._data: OrderedDict[tuple[str, ...], tuple[str, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(content_digest: str, generator_fingerprint: str, request: AnswerRequest) -> tuple[str, ...]:
        """Return the cache key of a request answered from a bundle by a generator."""
        question = fold(request.query)
        flt = json.dumps(request.filter.model_dump(mode="json") if request.filter else None, sort_keys=True)
        return (content_digest, generator_fingerprint, question, flt, request.mode,
                str(request.max_context_tokens), str(request.published_only))

    def get(self, key: tuple[str, ...]) -> dict[str, Any] | None:
        """Return a copy of the cached body, or ``None``."""
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return json.loads(entry[0])  # type: ignore[no-any-return]

    def put(self, key: tuple[str, ...], body: dict[str, Any]) -> None:
        """Store ``body``; evict least recently used entries beyond the bounds (a body larger than
        ``max_bytes`` is not stored)."""
        text = json.dumps(body, ensure_ascii=False)
        size = len(text.encode("utf-8"))
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._data[key] = (text, size)
            self._bytes += size
            while len(self._data) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, dropped) = self._data.popitem(last=False)
                self._bytes -= dropped

    def info(self) -> dict[str, int]:
        """Return ``{entries, bytes, hits, misses}``."""
        with self._lock:
            return {"entries": len(self._data), "bytes": self._bytes, "hits": self.hits, "misses": self.misses}


# -- the pipeline ----------------------------------------------------------------------------------


class _Observed:
    """Wraps a generator to report ``status`` events (generating / checking / repairing)."""

    def __init__(self, inner: Generator, emit: Emit) -> None:
        self.inner = inner
        self.emit = emit
        self.name = inner.name

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    async def generate(self, question: str, evidence: list[EvidenceItem], *, repair: Any = None) -> GeneratorReply:
        await self.emit("status", {"stage": "repairing" if repair else "generating"})
        reply = await self.inner.generate(question, evidence, repair=repair)
        await self.emit("status", {"stage": "checking"})
        return reply


async def _no_emit(event: str, data: dict[str, Any]) -> None:
    return None


def _envelope(bundle: OpenedBundle, status: str, reason: str | None, sources: list[Source], *,
              complete: bool | None, truncation: list[str]) -> dict[str, Any]:
    return Envelope(status=status, reason=reason, sources=sources, index_version=bundle.index_version,
                    complete=complete, truncated=bool(truncation),
                    truncation_reasons=sorted(set(truncation))).model_dump(mode="json")


def _premise_of(body: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``{stated, holds}`` premise of a graph answer (:func:`query.graph.dispatch._premise`), or ``None``."""
    answer = (body or {}).get("answer")
    premise = answer.get("premise") if isinstance(answer, dict) else None
    return premise if isinstance(premise, dict) and isinstance(premise.get("holds"), bool) else None


def _missing_entries(routed: Routed, claims: list[Claim], truncation: list[str]) -> int:
    """Entries of a graph list answer that no delivered claim names; when there are any, the answer is
    not ``complete`` and ``truncation`` names why (the graph's limit, the evidence budget, or
    ``claims_left_out`` when the checker dropped lines)."""
    body = routed.graph_body or {}
    listed = answer_list(body)
    if listed is None:
        return 0
    by_id = {item.evidence_id: item for item in routed.context.items}
    shown = shown_entries(body, (f for c in claims for eid in c.evidence if eid in by_id for f in by_id[eid].facts))
    missing = max(0, listed[1] - (shown or 0))
    if missing:
        routed.complete = False
        if not truncation:
            truncation.append("claims_left_out")
    return missing


def _weak_definition(question: str, claims: list[Claim]) -> str | None:
    """A warning when ``question`` asks what (who) X is and no delivered quote defines X plainly
    (:func:`query.answer.sentences.defines` below 3: only a relative clause or a noun of its kind says what it is)."""
    definition = definition_question(question)
    if definition is None or not claims or max(defines(definition, c.quote) for c in claims) >= 3:
        return None
    return (f"No sentence of the pages defines {definition.subject}; the answer only says what kind of "
            f"{'person' if definition.kind == 'person' else 'thing'} it is or what it does.")


def _coverage_block(routed: Routed, outcome: GenerationOutcome | None, delivered: int,
                    weak: str | None = None, scorer: UnitScorer | None = None,
                    claims: list[Claim] | None = None) -> dict[str, Any]:
    warnings: list[str] = [weak] if weak else []
    limitations = [f"Only the pages of commit {routed.context.items[0].commit[:12]} were used."
                   if routed.context.items else "No evidence was used."]
    if routed.engine == "graph":
        scope = "graph facts of the served bundle"
        limitations.append("Facts come from front matter and page structure as mapped into the graph.")
    elif routed.engine == "graph+text":
        scope = "text of the pages of the persons named in the question"
    else:
        scope = "text retrieval over the served bundle"
    if routed.context.truncation_reasons:
        warnings.append("Some evidence did not fit: " + ", ".join(routed.context.truncation_reasons) + ".")
    dropped = _dropped(outcome)
    if dropped:
        warnings.append(f"{dropped} claim(s) failed the evidence check and were left out.")
    if routed.complete is False:
        warnings.append("The graph list is cut; the count is exact.")
    partial = bool(warnings) and (dropped > 0 or routed.complete is False or bool(routed.context.truncation_reasons)
                                  or weak is not None)
    answerability = None
    if scorer is not None and scorer.variant is not None:
        quotes = {c.quote for c in claims or []}
        scores = [p for q, p in scorer.scores if q in quotes]
        answerability = {"score": max(scores) if scores else None, "threshold": scorer.variant.threshold,
                         "variant": scorer.variant_name}
    return {"scope": scope, "status": "partial" if partial else "supported", "warnings": warnings,
            "limitations": limitations, "coverage": round(outcome.coverage, 4) if outcome is not None else None,
            "claims": delivered, "answerability": answerability}


def _debug_report(outcome: GenerationOutcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {"attempts": outcome.attempts, "repaired": outcome.repaired, "coverage": round(outcome.coverage, 4),
            "status": outcome.status, "reason": outcome.reason}


def _refusal_report(routed: Routed) -> dict[str, Any]:
    """The ``debug`` report of a refusal decided before generation: the route taken, the graph's
    verdict, and what text retrieval checked (:attr:`query.answer.rag.Context.retrieval`)."""
    graph = routed.graph_body or {}
    entities = graph.get("entities") or {}
    return {"route": routed.engine,
            "graph": {"status": graph.get("status"), "reason": graph.get("reason"),
                      "persons": [p.get("matched") or p.get("name") for p in entities.get("persons") or []],
                      "unknown_names": list(entities.get("unknown_names") or [])},
            "retrieval": dict(routed.context.retrieval) or None,
            "evidence_items": len(routed.context.items), "attempts": []}


def _dropped(outcome: GenerationOutcome | None) -> int:
    """Claims of the last attempt that failed the checker (they were left out)."""
    if outcome is None or not outcome.attempts:
        return 0
    # a claim that only missed the question (off_question) is no defect of the delivered answer
    return sum(1 for v in outcome.attempts[-1].get("verdicts") or []
               if not v.get("ok") and set(v.get("reasons") or ()) - {"off_question"})


async def answer(bundle: OpenedBundle, request: AnswerRequest, options: SearchOptions,
                 generator: Generator | None, *, emit: Emit | None = None, cache: AnswerCache | None = None,
                 coverage_threshold: float = 0.20, min_support: float | None = None,
                 include_debug: bool = False, answerability: bool = True) -> dict[str, Any]:
    """Answer ``request`` from ``bundle``; return the ``/answer`` response body.

    Body: the contract envelope plus ``query``, ``engine``, ``answer`` (text with ``[S1]`` markers,
    or null), ``claims`` (``[{text, source_ids, evidence: [{evidence_id, source_id, chunk_id,
    document_path, heading_path, quote}]}]``), ``answer_coverage`` (``{scope, status, warnings, limitations}``),
    ``cached``, ``timings`` (ms per stage); ``candidates`` when ambiguous; ``evidence`` in
    ``mode=retrieve``; ``debug`` (the checker's report) when ``include_debug``.

    ``answerability``: gate text claims with the calibrated score (:mod:`query.answer.answerability`; a no-op
    when no model is installed).  ``generator`` may be ``None`` only in ``mode=retrieve``.  The route and
    retrieval run in a worker thread.  :raises GeneratorUnavailableError: the provider failed (``mode=answer``).
    :raises RetrievalUnavailableError: the graph or text index failed.
    """
    emit = emit or _no_emit
    started = time.perf_counter()
    fingerprint = generator.fingerprint() if generator is not None else "none"
    model = default_model() if answerability else None
    fingerprint += f":answerability={model.fingerprint if model is not None else 'none'}"
    key = AnswerCache.key(bundle.manifest.content_digest, fingerprint, request) if cache is not None else None
    if cache is not None and key is not None and not include_debug:
        hit = cache.get(key)
        if hit is not None:
            hit["cached"] = True
            hit["timings"] = {"total": _ms(started)}
            await emit("retrieval", {"engine": hit["engine"], "sources": hit["sources"]})
            return hit

    routed = await asyncio.to_thread(route_question, bundle, request, options, min_support)
    timings = dict(routed.timings)
    context = routed.context
    await emit("retrieval", {"engine": routed.engine,
                             "sources": [s.model_dump(mode="json") for s in context.sources]})
    base = {"query": request.query, "engine": routed.engine, "answer": None, "claims": [],
            "answer_coverage": None, "cached": False,
            # the retrieval arms this bundle has: BM25 only while it is a lexical bundle (vectors pending)
            "engines": engines_used(bundle), "warnings": engine_warnings(bundle)}
    truncation = list(context.truncation_reasons)

    def finish(body: dict[str, Any], cacheable: bool = True) -> dict[str, Any]:
        timings["total"] = _ms(started)
        body["timings"] = timings
        if cache is not None and key is not None and cacheable and not include_debug:
            cache.put(key, body)
        return body

    if routed.status != "ok":
        body = _envelope(bundle, routed.status, routed.reason, [], complete=routed.complete, truncation=[])
        body.update(base)
        if routed.candidates is not None:
            body["candidates"] = routed.candidates
            body["sources"] = (routed.graph_body or {}).get("sources", [])
        if include_debug:
            body["debug"] = _refusal_report(routed)
        return finish(body)

    if request.mode == "retrieve":
        status, reason = ("ok", None) if context.items else ("no_answer", "insufficient_evidence")
        body = _envelope(bundle, status, reason, context.sources, complete=routed.complete, truncation=truncation)
        body.update(base)
        body["evidence"] = context.public_items()
        body["best_support"] = None if context.best_support is None else round(context.best_support, 4)
        return finish(body)

    if not context.items:
        body = _envelope(bundle, "no_answer", "insufficient_evidence", [], complete=None, truncation=truncation)
        body.update(base)
        if include_debug:
            body["debug"] = _refusal_report(routed)
        return finish(body)

    from query.answer.checker import run_generation

    outcome: GenerationOutcome
    scorer: UnitScorer | None = None
    generation_started = time.perf_counter()
    if routed.engine == "graph":
        assert routed.graph_body is not None
        await emit("status", {"stage": "checking"})
        outcome = check_graph(request.query, context.items, routed.graph_body)
    else:
        if generator is None:
            raise ValueError("mode=answer needs a generator")
        # the text route only: graph+text evidence is already restricted to the pages of a resolved person
        scorer = _scorer(bundle, request.query, context) if answerability and routed.engine == "text" else None
        outcome = await run_generation(request.query, context.items, _Observed(generator, emit),  # type: ignore[arg-type]
                                       coverage_threshold=coverage_threshold, graph=None,
                                       ignore=routed.resolved_words, weights=context.word_weights or None,
                                       unknown=context.unknown_words, answerability=scorer,
                                       rescue=getattr(generator, "name", None) == "extractive")
    timings["generation"] = _ms(generation_started)

    if outcome.status != "ok" or not outcome.claims:
        body = _envelope(bundle, "no_answer", outcome.reason or "unsupported_answer", [], complete=None,
                         truncation=truncation)
        body.update(base)
        if include_debug:
            body["debug"] = _debug_report(outcome)
            body["debug"]["route"] = routed.engine
            body["debug"]["retrieval"] = dict(context.retrieval) or None
        return finish(body)

    claims = list(outcome.claims)
    text, claims_json, sources = _deliver(claims, context, display=routed.engine != "graph")
    if routed.engine == "graph" and routed.graph_body is not None:
        missing = _missing_entries(routed, claims, truncation)
        text = GraphPhrasing(routed.graph_body).text(claims_json, missing)
    body = _envelope(bundle, "ok", None, sources, complete=routed.complete if routed.engine == "graph" else None,
                     truncation=truncation)
    body.update(base)
    body["answer"] = text
    body["claims"] = claims_json
    weak = _weak_definition(request.query, claims) if routed.engine != "graph" else None
    body["answer_coverage"] = _coverage_block(routed, outcome, len(claims_json), weak, scorer, claims)
    if (premise := _premise_of(routed.graph_body)) is not None and routed.engine == "graph":
        # a question that states a fact: the graph's fact confirms it or corrects it
        body["answer_coverage"]["premise"] = premise
        body["answer_coverage"]["correction"] = not premise["holds"]
    if include_debug:
        body["debug"] = _debug_report(outcome)
        body["debug"]["route"] = routed.engine
        body["debug"]["retrieval"] = dict(context.retrieval) or None
    return finish(body)


__all__ = ["AnswerCache", "AnswerRequest", "GraphPhrasing", "Routed", "answer", "normalise_question",
           "parse_answer_request", "route_question"]
