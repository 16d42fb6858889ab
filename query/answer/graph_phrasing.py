"""Graph answers phrased without a generator (:class:`GraphPhrasing`) and checked like any claim (:func:`check_graph`).
"""

from __future__ import annotations

from typing import Any

from query.answer.attribution import MAX_CLAIMS, check_reply
from query.answer.evidence import Claim, EvidenceItem, GenerationOutcome
from query.answer.relevance import coverage
from query.graph.words import phrasing

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


def _premise_of(body: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``{stated, holds}`` premise of a graph answer (:func:`query.graph.dispatch._premise`), or ``None``."""
    answer = (body or {}).get("answer")
    premise = answer.get("premise") if isinstance(answer, dict) else None
    return premise if isinstance(premise, dict) and isinstance(premise.get("holds"), bool) else None


def check_graph(question: str, evidence: list[EvidenceItem], body: dict[str, Any]) -> GenerationOutcome:
    """Check the graph phrasing of ``body`` and return what may be delivered.

    Fact lines are checked like any claim (quote verbatim in the cited item, numbers and names in
    it); the count claim is checked with the graph body too, so a count that differs from the
    aggregation is dropped.  (Numbers inside titles, e.g. ``GPT-2``, are not counts: only the count
    claim gets the graph-count check.)  Coverage counts the question words the graph's analysis
    explained (``entities.explained_words``) as covered: the graph answered for them.
    """
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
