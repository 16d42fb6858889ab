"""Delivered claims as the ``/answer`` body shows them: the answer text with ``[S..]`` markers, the claims JSON with
where each quote stands, and the cited sources renumbered (:func:`_deliver`).
"""

from __future__ import annotations

from typing import Any

from artifacts.analysis import normalize_text
from query.answer.evidence import Claim, EvidenceItem
from query.answer.rag import Context
from query.answer.relevance import quote_section
from query.contract import Source
from query.search.snippets import display_text


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
