"""Extract graph rows (sections, persons, works, topics, aliases) from parsed documents.

Pure functions over :class:`~artifacts.records.Document` records, the chunks' heading paths and
a :class:`~artifacts.graphmap.GraphMapping`; :mod:`indexer.graph` turns the rows into CSV and
loads them.  Rows follow the property order of :mod:`artifacts.graphschema`; ``None`` is NULL.
"""

from __future__ import annotations

import json
import posixpath
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from artifacts.graphmap import GraphMapping, path_matches
from artifacts.graphschema import chunks_stating, name_key
from artifacts.records import Document

from .markdown import Heading, document_outline, lines_outside_code

Row = tuple[Any, ...]

_YEAR = re.compile(r"(?<![0-9])(?:19|20)[0-9]{2}(?![0-9])")


def _section_end(headings: list[Heading], k: int, n_lines: int) -> int:
    """Line index where section ``k`` (with its subsections) ends (exclusive)."""
    level = headings[k].level
    return next((h.line for h in headings[k + 1 :] if h.level <= level), n_lines)


def _ids(values: Sequence[str]) -> str:
    return json.dumps(list(values), ensure_ascii=False)


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip()


class Extraction:
    """Collects the de-duplicated rows of every table; :attr:`rows` maps table name -> set of rows."""

    def __init__(self, table_names: Sequence[str]) -> None:
        self.rows: dict[str, set[Row]] = {name: set() for name in table_names}

    def add(self, table: str, row: Row) -> None:
        self.rows[table].add(row)


def extract(
    docs: Sequence[Document],
    chunk_ids: dict[str, list[str]],
    heading_paths: dict[str, tuple[str, ...]],
    mapping: GraphMapping,
    out: Extraction,
    author_names: dict[str, str] | None = None,
    chunk_texts: dict[str, str] | None = None,
) -> None:
    """Add the mapping-driven rows of ``docs`` to ``out``.

    :param docs: the commit's documents (unique paths), links already resolved.
    :param chunk_ids: document path -> chunk ids in ordinal order.
    :param heading_paths: chunk id -> the chunk's heading path (for section provenance); may be empty.
    :param mapping: the build's graph mapping.
    :param author_names: author id -> name from the mapping's ``author_names`` file ({} or None: ids are names).
    :param chunk_texts: chunk id -> text (a work cites the chunks stating its title and year).
    """
    topic_pages = _topic_pages(docs, mapping)
    spelling = author_spellings(docs, author_names or {})
    for doc in docs:
        ids = chunk_ids.get(doc.path, [])
        headings, _ = document_outline(doc)  # recorded at parse time: no second parse
        section_chunks = _sections(doc, headings, ids, heading_paths, out)
        _authors(doc, mapping, out, author_names or {}, spelling)
        for field in mapping.aliases:
            value = doc.front_matter.get(field)
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str | int | float) and not isinstance(item, bool) and (name := _nfc(str(item))):
                    out.add("Alias", (name, name_key(name)))
                    out.add("HAS_ALIAS", (doc.path, name))
        if mapping.person_pages and _is_person_page(doc, mapping):
            _person_page(doc, headings, ids, section_chunks, mapping, out, chunk_texts or {})
        if mapping.topics:
            _topics(doc, topic_pages, mapping, out)


def _sections(
    doc: Document,
    headings: list[Heading],
    ids: list[str],
    heading_paths: dict[str, tuple[str, ...]],
    out: Extraction,
) -> dict[int, list[str]]:
    """Add Section rows and structure edges of ``doc``; return section ordinal -> chunk ids."""
    chunk_paths = [(cid, heading_paths.get(cid, ())) for cid in ids]
    result: dict[int, list[str]] = {}
    parents: list[Heading] = []
    previous: str | None = None
    for heading in headings:
        sid = f"{doc.path}#s{heading.ordinal}"
        own = [cid for cid, hp in chunk_paths if hp[: len(heading.path)] == heading.path]
        if not own:  # merged into a chunk of an enclosing heading: cite the deepest such chunk
            best = max((len(hp) for _, hp in chunk_paths if heading.path[: len(hp)] == hp), default=-1)
            own = [cid for cid, hp in chunk_paths if len(hp) == best and heading.path[: len(hp)] == hp]
        result[heading.ordinal] = own
        out.add(
            "Section",
            (sid, doc.path, heading.ordinal, heading.level, heading.text, _ids(heading.path), _ids(own)),
        )
        out.add("HAS_SECTION", (doc.path, sid))
        if previous is not None:
            out.add("NEXT_SECTION", (previous, sid))
        previous = sid
        while parents and parents[-1].level >= heading.level:
            parents.pop()
        if parents:
            out.add("SUBSECTION_OF", (sid, f"{doc.path}#s{parents[-1].ordinal}"))
        parents.append(heading)
    return result


def author_spellings(docs: Sequence[Document], author_names: dict[str, str]) -> dict[str, str]:
    """One spelling per author name that folds to the same key (``name_key``).

    Pages of one wiki spell the same person with and without diacritics ("Daniel Hládek",
    "Daniel Hladek"); they are one author.  The spelling kept is the most frequent one, ties
    broken towards the one with more diacritics, then alphabetically.

    :returns: ``name_key(name)`` -> the chosen spelling (NFC), for every author of ``docs``.
    """
    counts: dict[str, dict[str, int]] = {}
    for doc in docs:
        for author in filter(None, map(_nfc, doc.authors)):
            name = author_names.get(author, author)
            per_key = counts.setdefault(name_key(name), {})
            per_key[name] = per_key.get(name, 0) + 1
    return {
        key: min(names, key=lambda n: (-names[n], -sum(not c.isascii() for c in n), n))
        for key, names in counts.items()
    }


def _authors(doc: Document, mapping: GraphMapping, out: Extraction, author_names: dict[str, str],
             spelling: dict[str, str]) -> None:
    for author in filter(None, map(_nfc, doc.authors)):
        # ``Person.id`` stays what the page says (a slug); the name comes from the authors file,
        # spelled as most pages spell it
        name = author_names.get(author, author)
        name = spelling.get(name_key(name), name)
        if author not in author_names:  # the id is the name: one Person per folded name too
            author = name
        if mapping.authors == "person":
            out.add("Person", (author, name, name_key(name), "author", None, None, "true", "[]"))
            out.add("AUTHORED_BY", (doc.path, author))
        else:
            out.add("DocumentAuthor", (name, name_key(name)))
            out.add("HAS_DOCUMENT_AUTHOR", (doc.path, name))


def url_link_targets(doc: Document) -> list[str]:
    """Return the targets of a document's links that are web URLs or site paths, in order, de-duplicated.

    They come from the one CommonMark parse of :mod:`indexer.markdown`, recorded on the document
    (:func:`~indexer.markdown.document_outline`): ``http(s)://`` URLs and ``/site/paths``, not
    ``.md`` files, fragments, ``mailto:`` or other schemes.  Only mappings with ``permalinks`` use them.
    """
    return document_outline(doc)[1]


def permalink_links(docs: Sequence[Document], mapping: GraphMapping) -> list[tuple[str, str]]:
    """Return ``(from path, to path)`` for URL links that end in another page's permalink field.

    Only for a mapping with ``permalinks``: the last path segment of a site path (``/2019/12/x``) or
    of an absolute URL on one of ``permalinks.hosts`` must equal exactly one page's front matter
    ``permalinks.field``; ambiguous values and self-links are dropped.
    """
    from artifacts.graphmap import url_path_tail

    spec = mapping.permalinks
    if spec is None:
        return []
    owners: dict[str, list[str]] = {}
    for doc in docs:
        value = doc.front_matter.get(spec.field)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            owners.setdefault(str(value).strip(), []).append(doc.path)
    hosts = {h.lower() for h in spec.hosts}
    edges: list[tuple[str, str]] = []
    for doc in docs:
        for target in url_link_targets(doc):
            host, tail = url_path_tail(target)
            if host is not None and host not in hosts:
                continue
            paths = owners.get(tail, [])
            if len(paths) == 1 and paths[0] != doc.path:
                edges.append((doc.path, paths[0]))
    return edges


def _is_person_page(doc: Document, mapping: GraphMapping) -> bool:
    pages = mapping.person_pages
    assert pages is not None
    if not path_matches(doc.path, pages.paths):
        return False
    return bool(doc.title.strip()) and (doc.title_source == "front_matter" or not pages.require_front_matter_title)


def _person_page(
    doc: Document,
    headings: list[Heading],
    ids: list[str],
    section_chunks: dict[int, list[str]],
    mapping: GraphMapping,
    out: Extraction,
    chunk_texts: dict[str, str],
) -> None:
    pages = mapping.person_pages
    assert pages is not None
    name = _nfc(doc.title)
    start_year = None
    if pages.start_year_category:
        pattern = re.compile(pages.start_year_category)
        start_year = next((int(m.group("year")) for c in doc.categories if (m := pattern.search(c.strip()))), None)
    published = "true" if doc.published else "false"
    out.add("Person", (doc.path, name, name_key(name), "page", doc.path, start_year, published, _ids(ids)))
    out.add("DESCRIBES", (doc.path, doc.path, doc.path))
    if mapping.works is None:
        return
    works = mapping.works
    lines = doc.body.split("\n")
    category = re.compile(works.category)
    title_line = re.compile(works.title_line) if works.title_line else None
    used: set[int] = set()
    seen: set[str] = set()
    for raw in doc.categories:
        match = category.search(raw.strip())
        if not match or match.group("type") not in works.types:
            continue
        kind, year = match.group("type"), int(match.group("year"))
        work_id = f"{doc.path}#{kind}{year}"
        if work_id in seen:
            continue
        seen.add(work_id)
        section = _work_section(headings, works.section_level, works.types[kind].heading, year, used)
        title = None
        section_id = None
        evidence: list[str] = []
        if section is not None:
            used.add(section.ordinal)
            section_id = f"{doc.path}#s{section.ordinal}"
            evidence = section_chunks.get(section.ordinal, [])
            if title_line is not None:
                end = _section_end(headings, section.ordinal, len(lines))
                for line in lines[section.line + 1 : end]:
                    if found := title_line.match(line):
                        title = _nfc(found.group("title")) or None
                        break
        # the chunks that state the work: its title and year, else its title (the year is then in the
        # front matter only: "dp2021"), in its section, else (a titled work) anywhere on the page; a
        # year alone outside the work's section states nothing about the work
        evidence = (_stating([title, year], evidence, chunk_texts) or _stating([title], evidence, chunk_texts)
                    or (_stating([title, year], ids, chunk_texts) or _stating([title], ids, chunk_texts)
                        if title else []))
        out.add(
            "Work",
            (work_id, kind, works.types[kind].label, year, title, doc.path, section_id, published, _ids(evidence)),
        )
        out.add("HAS_WORK", (doc.path, work_id, doc.path))
        out.add("WORK_IN_YEAR", (work_id, year, doc.path))
        out.add("Year", (year,))
        if section_id is not None:
            out.add("DESCRIBED_IN", (work_id, section_id, doc.path))


def _stating(values: list[Any], ids: list[str], chunk_texts: dict[str, str]) -> list[str]:
    return chunks_stating(values, [(cid, chunk_texts[cid]) for cid in ids if cid in chunk_texts])


def _work_section(
    headings: list[Heading], level: int, heading_re: str, year: int, used: set[int]
) -> Heading | None:
    """The section of a work: a heading of ``level`` matching the type, with the work's year in the
    heading if there is one, else the first one without a year; never one already used."""
    pattern = re.compile(heading_re, re.IGNORECASE)
    candidates = [h for h in headings if h.level == level and pattern.search(h.text) and h.ordinal not in used]
    same_year = [h for h in candidates if (m := _YEAR.search(h.text)) and int(m.group(0)) == year]
    no_year = [h for h in candidates if not _YEAR.search(h.text)]
    found = same_year or no_year
    return found[0] if found else None


def _topic_pages(docs: Sequence[Document], mapping: GraphMapping) -> dict[str, str]:
    """Topic page path -> topic id (the page's folder name)."""
    if mapping.topics is None:
        return {}
    return {
        doc.path: posixpath.basename(posixpath.dirname(doc.path)) or doc.path
        for doc in docs
        if path_matches(doc.path, mapping.topics.pages)
    }


def _topics(doc: Document, topic_pages: dict[str, str], mapping: GraphMapping, out: Extraction) -> None:
    topics = mapping.topics
    assert topics is not None
    if doc.path in topic_pages:
        topic = topic_pages[doc.path]
        title = _nfc(doc.title)
        out.add("Topic", (topic, title, name_key(title), doc.path))
        out.add("HAS_TOPIC", (doc.path, topic, "page", doc.path))
    by_key = {name_key(t): t for t in topic_pages.values()}
    if topics.from_tags:
        for tag in doc.tags:
            if (tagged := by_key.get(name_key(tag))) is not None:
                out.add("HAS_TOPIC", (doc.path, tagged, "tag", doc.path))
    if topics.from_links:
        lines = _topic_link_lines(doc.body, topics.link_lines)
        for link in doc.links:
            if link.resolved in topic_pages and link.resolved != doc.path and (
                lines is None or any(_link_on_line(link.target, line) for line in lines)
            ):
                out.add("HAS_TOPIC", (doc.path, topic_pages[link.resolved], "link", doc.path))


def _topic_link_lines(body: str, pattern: str | None) -> list[str] | None:
    """Lines of ``body`` (outside fenced code) whose links put the page in a topic: those matching
    the mapping's ``topics.link_lines`` regex, or ``None`` (every line) when it is not set."""
    if pattern is None:
        return None
    regex = re.compile(pattern)
    return [line for line in lines_outside_code(body) if regex.search(line)]


def _link_on_line(target: str, line: str) -> bool:
    """True when a Markdown link ``](target`` or a wikilink ``[[target`` to ``target`` is on ``line``."""
    return bool(target) and (f"]({target}" in line or f"](<{target}" in line or f"[[{target}" in line)
