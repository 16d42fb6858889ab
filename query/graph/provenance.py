"""Provenance of facts: the chunks of a page that state a fact's values."""

from __future__ import annotations

import json
import re
from typing import Any

from artifacts.graphschema import chunks_stating, document_fact_chunks, fact_key, fetch_rows
from query.bundle import OpenedBundle

# -- provenance of facts ---------------------------------------------------------------------------


PROVENANCE: dict[str, str] = {"tagged": "tag", "supervised_by": "author", "authored_by": "author",
                              "authored": "author", "started_in": "year", "dated": "date"}
"""Fact predicates whose value comes from front matter, and the kind of value (``Document.fact_chunks``)."""


def fact_values(predicate: str, subject: Any, obj: Any) -> list[Any]:
    """The values of a fact a chunk must state to be its source (``[]``: the fact has no provenance
    rule, e.g. a link): a work's title and year, a tag, an author's name, a year, a date."""
    if predicate == "has_work" and isinstance(obj, dict):
        return [v for v in (obj.get("title"), obj.get("year")) if v is not None]
    if predicate == "authored":
        return [subject]
    if predicate in PROVENANCE:
        return [obj]
    return []


def _page_chunks(bundle: OpenedBundle, path: str) -> list[tuple[str, str]]:
    """``(chunk id, text)`` of the document's chunks in ordinal order (cached on the bundle)."""
    by_path = bundle.graph_cache.get("chunks_by_path")
    if by_path is None:
        by_path = {}
        for cid in bundle.chunk_index:
            by_path.setdefault(cid.rsplit("#", 1)[0], []).append(cid)
        for ids in by_path.values():
            ids.sort(key=lambda c: int(c.rsplit("#", 1)[1]) if c.rsplit("#", 1)[1].isdigit() else 0)
        bundle.graph_cache["chunks_by_path"] = by_path
    return [(cid, bundle.chunks[bundle.chunk_index[cid]].text) for cid in by_path.get(path, [])]


def _fact_chunks(bundle: OpenedBundle, path: str) -> dict[str, list[str]]:
    """``Document.fact_chunks`` of ``path`` (graph schema 3), or the same computed from the bundle's
    chunks for a bundle of schema 2 (cached on the bundle)."""
    cache = bundle.graph_cache.setdefault("fact_chunks", {})
    if path in cache:
        return cache[path]  # type: ignore[no-any-return]
    found: dict[str, list[str]] = {}
    if bundle.manifest.config.graph_schema_version >= 3:
        rows = fetch_rows(bundle.graph_connection(), "MATCH (d:Document {path: $path}) RETURN d.fact_chunks",
                          {"path": path})
        found = json.loads(rows[0][0] or "{}") if rows else {}
    elif (doc := bundle.docs.get(path)) is not None:
        found = document_fact_chunks(doc.tags, doc.categories, doc.authors, doc.date, doc.year,
                                     _page_chunks(bundle, path))
    cache[path] = found
    return found


def stating_chunks(bundle: OpenedBundle, path: str | None, predicate: str, subject: Any, obj: Any,
                   chunk_ids: list[str] | None) -> tuple[list[str], list[Any]] | None:
    """``(chunks of path stating the fact, values only the front matter states)``, or ``None`` for a
    fact without a provenance rule (:func:`fact_values`).

    The chunks state every value of the fact when some chunk does; ``([], values)`` when none does
    (a value of the front matter only).  A work's own chunks (``chunk_ids``: those the build found
    stating it) are narrowed to the ones stating its title and year, else its title (the year then
    comes from the front matter category, "dp2021"); a front matter value is looked up in
    ``Document.fact_chunks`` (by kind and folded value), else its page's chunks are searched."""
    values = fact_values(predicate, subject, obj)
    if path is None or not values:
        return None
    if predicate == "has_work":
        texts = dict(_page_chunks(bundle, path))
        own = [(c, texts[c]) for c in chunk_ids or () if c in texts]
        every = chunks_stating(values, own)
        if every or len(values) == 1:
            return every, ([] if every else values)
        title = chunks_stating(values[:1], own)
        return (title, values[1:]) if title else ([], values)
    kind = PROVENANCE[predicate]
    if kind == "date" and not re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}", str(obj)):
        kind = "year"  # a document dated by its year only
    stored = _fact_chunks(bundle, path).get(fact_key(kind, values[0]))
    found = list(stored) if stored is not None else chunks_stating(values, _page_chunks(bundle, path))
    return found, ([] if found else values)
