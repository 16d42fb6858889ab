"""Graph retrieval: recognise entities and the intent of a question, run a parameterised Cypher
template, answer with facts, paths, documents and exact aggregations in the response contract.

Entry point: :func:`answer_graph` (``POST /graph`` and ``gitrag graph``).

A question is answered only when it was understood: an intent was recognised **and** every slot
that intent needs was filled from the question.  Understanding, in order:

1. entities: persons (inflected Slovak/Czech names, a possessive ``'s`` dropped, one typo in a
   full name), document authors (e.g. supervisors), years, then -- when the question speaks of
   links, authors or documents -- page titles, and -- when it speaks of tags or topics -- tag and
   topic values; surnames alone; capitalised words that name nobody known (``unknown_names``);
2. intent words, matched only on the words that are *not* part of an entity, from the mapping's
   vocabulary (:mod:`query.graph.words`; per language, lemmatised with simplemma);
3. every remaining word must be a stop word or a ``filler`` word: a question with a word the
   vocabulary does not explain ("e-mail", "známku", "let") is not understood.

Front matter category values written in the question ("dr2018", "st2016") are read with the
mapping's own patterns (a work type and a year, or a start year).  Every body reports
``entities.structure_question``: whether the question asks for persons or documents selected by front
matter or links (``structure`` in graphwords.yaml); ``/answer`` never passes such a question to text
search when the graph did not answer it.

Intents (``intent`` of the response) and their slots:

==========================  ======================================================================
``works_of_person``         one person; a work word or work type
``title_of_work``           one person; a title word (work type optional: then every work's title)
``year_of_work``            one person; a year word and one work type
``supervisor_of_work``      one person; a supervisor word (work type optional)
``start_year_of_person``    one person; a start word
``persons_with_work``       work word or type, and count/list words; year optional (exact count)
``persons_started``         a start word and a year (exact count; the start year, never a work year)
``tags_of_person``          one person; a tag word (``topics_of_person``: a topic word)
``common_tags``             two or more persons; a tag word (``common_topics``: a topic word)
``persons_with_tag``        a tag or topic value named after a tag/topic word; persons (``documents_with_tag``
                            when the question asks for documents)
``documents_of_author``     a person or document author; an author/document word (a tag value and a
                            year restrict the documents: "Kolik článků se štítkem X napsal Y v roce 2020?")
``author_of_document``      a page named by its title (words may be inflected; the beginning of one
                            title only is enough); an author word
``tags_of_document``        a page named by its title (two or more words); a tag word
                            (``topics_of_document``: a topic word)
``links_to`` / ``links_from``  a page (title, or a person's page); a link word and a direction
==========================  ======================================================================

Several values of one kind ("tag nlp aj sentiment", "v roku 2020 alebo 2021", "Eva Kolárová alebo
Peter Blahút", two persons) are read with their operators (:mod:`query.graph.values`) and answered as
set operations with an exact count, or per person for a fact question (:data:`_COMBINES`), or
refused; a negated question is refused.  A question that states a fact (``premise`` words: "Je
pravda, že ...?") about a work's year, a start year, a supervisor or tags gets the fact and
``answer.premise`` (``{stated, holds}``).  Every fact carries ``chunk_ids`` -- the chunks of its page
that state its values -- and ``front_matter``, the values only the front matter holds
(:func:`stating_chunks`).

Honest non-answers: a question about a person that names nobody known -> ``no_answer`` /
``unknown_person`` whatever its intent (a name that is only a document author, e.g. a supervisor,
is reported in ``entities.document_authors`` but never taken for a student); several persons fit
-> ``ambiguous`` / ``ambiguous_person`` with ``candidates``; a page title nobody has ->
``no_answer`` / ``unknown_page`` (also a question for the author of a page when no title fits its
words: "Kdo napsal příručku o rajčatech?"; several titles begin with its words -> ``ambiguous`` /
``ambiguous_page`` with ``candidates``); the asked work or value does not exist -> ``no_answer`` /
``no_matching_sources``; content questions and anything not understood -> ``no_answer`` /
``unsupported_question`` with ``suggested_endpoint: "/search"`` and the recognised ``entities``
(so a caller can restrict text search to the persons' documents).  Lists are fetched with
``limit + 1`` rows: when a list is cut, ``truncated`` is true, ``truncation_reasons`` names the
limit and ``complete`` is false, while ``aggregation.count`` (a separate ``count(DISTINCT ...)``)
stays exact.  With ``published_only`` (the default) pages marked ``published: false`` do not
exist for any part of the answer: not as persons, titles, tags, link ends or candidates.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from artifacts.analysis import fold
from artifacts.graphmap import GraphMapping, mapping_from_config
from artifacts.graphschema import chunks_stating, document_fact_chunks, fact_key, fetch_rows
from query.bundle import OpenedBundle
from query.contract import source_url, validate_request
from query.errors import InvalidRequestError, RetrievalUnavailableError
from query.graph.names import (
    NameEntry,
    NameIndex,
    NameMatch,
    Token,
    capital_runs,
    find_years,
    looks_like_person_name,
    name_forms,
    name_tokens,
    tokenize,
)
from query.graph.values import Combination, Value, combinations, negations, operator_spans
from query.graph.words import Vocabulary
from query.question import definition_question

MAX_QUESTION_CHARS = 1000
_WORD_RE = re.compile(r"\w+(?:[-’']\w+)*")
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
_MIN_TITLE_CHARS = 4


class GraphRequest(BaseModel):
    """``POST /graph`` body: ``query`` (1-1000 characters; ``question`` is accepted as an alias,
    exactly one of the two), ``limit`` rows per list (1-1000, default 100), ``published_only``
    (default true: persons and documents with ``published: false`` do not exist for the answer),
    ``at`` (commit or bundle; resolved by the transport, not here)."""

    # strict like SearchRequest: "false" is not a boolean and "5" not an integer (no silent coercion)
    model_config = ConfigDict(extra="forbid", strict=True)

    query: str | None = None
    question: str | None = None
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    published_only: bool = True
    at: str | None = None

    @model_validator(mode="after")
    def _one_text(self) -> GraphRequest:
        if (self.query is None) == (self.question is None):
            raise ValueError("give exactly one of query and question")
        return self

    @property
    def text(self) -> str:
        """The question, whichever field carried it."""
        return self.query if self.query is not None else self.question or ""


def parse_graph_request(payload: Any) -> GraphRequest:
    """Validate a decoded JSON body.

    :raises InvalidQueryError: ``query`` (or ``question``) missing, not a string, blank or too long.
    :raises InvalidRequestError: not an object, both ``query`` and ``question``, unknown fields or
        wrong types.
    """
    if isinstance(payload, dict) and "query" in payload and "question" in payload:
        raise InvalidRequestError("give exactly one of query and question",
                                  fields=[{"field": "query", "problem": "query and question are aliases; give one"}])
    text_field = "question" if isinstance(payload, dict) and "question" in payload else "query"
    return validate_request(payload, GraphRequest, text_field, MAX_QUESTION_CHARS)


# -- per-bundle index of names ---------------------------------------------------------------------


@dataclass
class _Person:
    id: str
    name: str
    kind: str
    path: str | None
    start_year: int | None
    published: bool


@dataclass(frozen=True)
class _Named:
    """A page title or topic as a sequence of folded words."""

    words: tuple[str, ...]
    label: str
    path: str | None
    ref: str


@dataclass
class _Published:
    """What exists for one value of ``published_only``."""

    names: NameIndex
    authors: NameIndex
    tags: dict[str, str]  # folded form (inflections included) -> tag
    titles: list[_Named]  # longest first
    topics: list[_Named]
    pages: set[str]


@dataclass
class GraphIndex:
    """What a bundle's graph offers for recognition, read once per bundle (cached on it)."""

    mapping: GraphMapping
    vocabulary: Vocabulary
    persons: dict[str, _Person]
    person_kind: str
    by_published: dict[bool, _Published]
    has_works: bool
    work_types: list[str] = field(default_factory=list)


def _named(text: str) -> tuple[str, ...]:
    return tuple(t.folded for t in tokenize(text))


def graph_index(bundle: OpenedBundle) -> GraphIndex:
    """Return the bundle's :class:`GraphIndex`, building it on first use."""
    with bundle.graph_lock:
        cached = bundle.graph_cache.get("index")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        conn = bundle.graph_connection()
        rows = fetch_rows(conn, "MATCH (p:Person) RETURN p.id, p.name, p.kind, p.path, p.start_year, p.published")
        persons = {r[0]: _Person(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in rows}
        kind = "page" if any(p.kind == "page" for p in persons.values()) else "author"
        author_rows = fetch_rows(conn, "MATCH (d:Document)-[:HAS_DOCUMENT_AUTHOR]->(a:DocumentAuthor) "
                                       "RETURN DISTINCT a.name, d.published")
        tag_rows = fetch_rows(conn, "MATCH (d:Document)-[:TAGGED]->(t:Tag) RETURN DISTINCT t.name, d.published")
        doc_rows = fetch_rows(conn, "MATCH (d:Document) RETURN d.title, d.path, d.published")
        topic_rows = fetch_rows(conn, "MATCH (t:Topic) RETURN t.id, t.name, t.path")
        # a person of kind "author" exists when one of their documents is published
        author_published = {r[0] for r in fetch_rows(
            conn, "MATCH (d:Document)-[:AUTHORED_BY]->(p:Person) WHERE d.published RETURN DISTINCT p.id")}
        has_works = bool(fetch_rows(conn, "MATCH (w:Work) RETURN w.id LIMIT 1"))
        mapping = mapping_from_config(bundle.manifest.config.model_dump().get("graph_mapping"))
        vocabulary = Vocabulary.from_mapping(mapping)

        def build(published_only: bool) -> _Published:
            def visible(person: _Person) -> bool:
                if not published_only:
                    return True
                return person.published if person.kind == "page" else person.id in author_published

            chosen = [p for p in persons.values() if p.kind == kind and visible(p)]
            # an author's id (a slug of the authors file, "zoul") names them too, unless one of its
            # words is a word of some person's name ("jakub" when there are several Jakubs), a
            # stop word or shorter than 3 letters
            name_words = {fold(t) for p in chosen for t in name_tokens(p.name)}
            slugs = [NameEntry(p.id, p.name, name_tokens(p.id), id_form=True) for p in chosen
                     if p.kind == "author" and fold(p.id) != fold(p.name) and name_tokens(p.id)
                     and all(len(t) >= 3 and fold(t) not in name_words and fold(t) not in vocabulary.stopwords
                             for t in name_tokens(p.id))]
            pages = {path for _, path, pub in doc_rows if pub or not published_only}
            tags: dict[str, str] = {}
            for name, pub in tag_rows:
                if pub or not published_only:
                    for form in name_forms(name) | {name.lower()}:
                        tags.setdefault(fold(form).replace(" ", ""), name)
            titles = [_Named(_named(t), t, p, p) for t, p, pub in doc_rows
                      if (pub or not published_only) and len(fold(t)) >= _MIN_TITLE_CHARS]
            topics = []
            for tid, tname, tpath in topic_rows:
                if tpath is not None and tpath not in pages:
                    continue
                topics.append(_Named(_named(tid), tname, tpath, tid))
                if tname and _named(tname) != _named(tid):
                    topics.append(_Named(_named(tname), tname, tpath, tid))
            return _Published(
                names=NameIndex.build([NameEntry(p.id, p.name, name_tokens(p.name)) for p in chosen] + slugs),
                authors=NameIndex.build(NameEntry(a, a, name_tokens(a))
                                        for a in sorted({n for n, pub in author_rows if pub or not published_only})),
                tags=tags,
                titles=sorted(titles, key=lambda n: (-len(n.words), n.path or "")),
                topics=sorted(topics, key=lambda n: (-len(n.words), n.ref)),
                pages=pages,
            )

        index = GraphIndex(
            mapping=mapping,
            vocabulary=vocabulary,
            persons=persons,
            person_kind=kind,
            by_published={True: build(True), False: build(False)},
            has_works=has_works,
            work_types=sorted(mapping.works.types) if mapping.works else [],
        )
        bundle.graph_cache["index"] = index
        return index


# -- question analysis -----------------------------------------------------------------------------


@dataclass
class Analysis:
    """What was recognised in a question (see the module docstring for the order)."""

    tokens: list[Token]
    years: list[int]
    persons: list[NameMatch] = field(default_factory=list)
    document_authors: list[NameMatch] = field(default_factory=list)
    unmatched_names: list[list[Token]] = field(default_factory=list)
    work_types: list[str] = field(default_factory=list)
    pages: list[_Named] = field(default_factory=list)
    page_span: tuple[int, int] | None = None
    ambiguous_pages: list[_Named] = field(default_factory=list)  # several titles fit the question's words
    quoted: list[tuple[int, int]] = field(default_factory=list)  # token ranges of quoted parts („…“)
    tags: list[str] = field(default_factory=list)
    topics: list[_Named] = field(default_factory=list)
    concepts: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    unexplained: list[str] = field(default_factory=list)
    language: str | None = None
    intent: str = "unsupported"
    work_years: list[int] = field(default_factory=list)  # years that restrict works (not a start year)
    category_types: list[str] = field(default_factory=list)  # work types read from category values ("dr2018")
    category_start: bool = False  # a start-year category value ("st2014") was named
    values: list[Value] = field(default_factory=list)  # every recognised value with its span
    combos: dict[str, Combination] = field(default_factory=dict)  # kinds named twice or more, with operators
    negated: list[int] = field(default_factory=list)  # positions of negation words (not "but not")
    operators: list[tuple[int, int, str]] = field(default_factory=list)  # and / or / but_not word spans
    stated_years: list[int] = field(default_factory=list)  # years a premise question states (not a filter)

    def structure_question(self, vocab: Vocabulary) -> bool:
        """Whether the question asks for persons or documents selected by front matter or links
        (see the ``structure`` section of graphwords.yaml): only the graph answers it.

        The asking word must ask for them: a ``targets`` word itself ("Kto má tag X?") or followed
        by one, stop words skipped ("Ktorí študenti ...", "How many posts ..."); "S akými nástrojmi
        pracujú študenti v téme X?" asks for tools, "What does the category code X mean?" for a meaning.
        """
        rule = vocab.structure
        by_value = self.has(*rule.get("selectors", ())) or bool(self.tags or self.topics or self.category_types)
        by_name = bool(self.persons or self.document_authors) and self.has(*rule.get("selectors_with_name", ()))
        if not (by_value or by_name):
            return False
        targets = {p for c in rule.get("targets", ()) for s, e, _ in self.concepts.get(c, []) for p in range(s, e)}
        who = {p for s, e, _ in self.concepts.get("who", []) for p in range(s, e)}
        for concept in rule.get("asks", ()):
            for start, end, _ in self.concepts.get(concept, []):
                if start in targets:
                    # a bare "who" next to a name asks for a person of that name's page ("Kto je
                    # vedúci práce X?"), which the page's text says; with a value it selects ("Kto má tag X?")
                    if by_value or start not in who:
                        return True
                    continue
                after = end
                while after < len(self.tokens) and after not in targets and vocab.is_stopword(self.tokens[after]):
                    after += 1
                if after in targets and after not in who:
                    return True
        return False

    def has(self, *concepts: str) -> bool:
        return any(self.concepts.get(c) for c in concepts) or ("start" in concepts and self.category_start)

    @property
    def specific_type(self) -> bool:
        return len(self.work_types) == 1


def _boundaries(question: str, tokens: list[Token]) -> tuple[set[int], set[int]]:
    """``(sentence starts, words preceded by punctuation)``, as token positions."""
    starts, punctuated = {0}, {0}
    text = unicodedata.normalize("NFC", question)
    words = list(_WORD_RE.finditer(text))
    for i in range(1, len(words)):
        between = text[words[i - 1].end() : words[i].start()]
        if any(c in between for c in ".?!:;"):
            starts.add(i)
        if between.strip():
            punctuated.add(i)
    positions = {t.index for t in tokens}
    return starts & positions, punctuated & positions


_QUOTED = re.compile(r"[„“”\"«»‚‘]([^„“”\"«»]+)[“”\"»«‘’]")


def _quoted(question: str) -> list[tuple[int, int]]:
    """Token ranges ``(first, end exclusive)`` of the quoted parts of ``question`` („…“, "…", «…»)."""
    text = unicodedata.normalize("NFC", question)
    starts = [m.start() for m in _WORD_RE.finditer(text)]
    ranges = []
    for match in _QUOTED.finditer(text):
        inside = [i for i, at in enumerate(starts) if match.start(1) <= at < match.end(1)]
        if inside:
            ranges.append((inside[0], inside[-1] + 1))
    return ranges


def strip_invisible(text: str) -> str:
    """``text`` without format and control characters other than whitespace (zero-width spaces,
    joiners, BOMs, direction marks, NUL): "Já\u200bn Holp" is "Ján Holp" to recognition."""
    return "".join(ch for ch in text if ch.isspace() or unicodedata.category(ch) not in ("Cf", "Cc"))


PARTIAL_TITLE_WORDS = 3
"""Least number of a title's first words (and :data:`PARTIAL_TITLE_CHARS` letters) that name the page
when a question gives only the beginning of a long title ("Kdo napsal příručku Spolu na dálku?")."""
PARTIAL_TITLE_CHARS = 12


def _fits(token: Token, word: str, vocab: Vocabulary) -> bool:
    """Whether a question word is ``word`` of a title: the same folded word, or an inflected form of it
    (a lemma of the question word: "příručku" fits "Příručka")."""
    return token.folded == word or word in vocab.forms(token)


def _find_named(
    tokens: list[Token], free: set[int], named: list[_Named], vocab: Vocabulary, ends: set[int] | None = None
) -> tuple[_Named, int, int] | list[_Named] | None:
    """The longest title/topic whose words appear consecutively on free positions (each word as
    written or inflected), as ``(item, start position, words matched)``.

    ``ends`` (titles only): positions where a partial title may end (the end of the question, a word
    after punctuation).  With no whole title in the question, a title of which at least
    :data:`PARTIAL_TITLE_WORDS` first words end there names the page when it is the only one; several
    such titles are returned as a list (the question is ambiguous).
    """
    firsts = {w for p in free for w in (tokens[p].folded, *vocab.forms(tokens[p]))}
    partial: dict[str, tuple[_Named, int, int]] = {}
    for item in named:
        if not item.words or item.words[0] not in firsts:
            continue
        n = len(item.words)
        for start in sorted(free):
            k = 0
            while k < n and start + k in free and _fits(tokens[start + k], item.words[k], vocab):
                k += 1
            if k == n:
                return item, start, n
            if (ends is not None and k >= PARTIAL_TITLE_WORDS and start + k in ends
                    and len("".join(item.words[:k])) >= PARTIAL_TITLE_CHARS):
                key = item.path or item.ref
                if key not in partial or partial[key][2] < k:
                    partial[key] = (item, start, k)
    if not partial:
        return None
    best = max(k for _, _, k in partial.values())
    chosen = [hit for hit in partial.values() if hit[2] == best]
    return chosen[0] if len(chosen) == 1 else [item for item, _, _ in chosen]


def _category_values(a: Analysis, index: GraphIndex) -> set[int]:
    """Read front matter category values written in the question ("dr2018", "st2014") with the
    mapping's own patterns: a work category gives a work type and a year, a start-year category a
    year and a start.  Returns their positions (explained words); sets ``a.category_types``,
    ``a.category_start`` and adds the years to ``a.years``."""
    mapping = index.mapping
    work = re.compile(mapping.works.category) if mapping.works else None
    start = re.compile(mapping.person_pages.start_year_category) \
        if mapping.person_pages and mapping.person_pages.start_year_category else None
    found: set[int] = set()
    for token in a.tokens:
        value = token.lower
        if work is not None and (m := work.fullmatch(value)) and m.group("type") in index.work_types:
            a.category_types.append(m.group("type"))
            year = int(m.group("year"))
        elif start is not None and (m := start.fullmatch(value)):
            a.category_start = True
            year = int(m.group("year"))
        else:
            continue
        found.add(token.index)
        a.values.append(Value("category", (a.category_types[-1] if m.re is work else "start", year),
                              token.index, token.index + 1))
        if year not in a.years:
            a.years.append(year)
    return found


def analyse(question: str, index: GraphIndex, published_only: bool) -> Analysis:
    """Recognise entities, intent words and the intent of ``question`` (see the module docstring)."""
    vocab = index.vocabulary
    known = index.by_published[published_only]
    question = strip_invisible(question)
    tokens = tokenize(question, vocab.possessive_suffixes)
    a = Analysis(tokens=tokens, years=find_years(tokens))
    starts, punctuated = _boundaries(question, tokens)
    a.quoted = _quoted(question)
    free = {t.index for t in tokens}
    free -= _category_values(a, index)

    a.persons = known.names.match(tokens)
    free -= {p for m in a.persons for p in m.positions}
    a.document_authors = known.authors.match(tokens, skip=set(range(len(tokens))) - free)
    free -= {p for m in a.document_authors for p in m.positions}

    def concepts() -> None:
        a.concepts = {name: vocab.find(tokens, entries, free) for name, entries in vocab.concepts.items()}

    concepts()
    if a.has("link", "author", "document") or (a.has("who") and not a.persons):
        ends = {len(tokens)} | punctuated
        found = _find_named(tokens, free, known.titles, vocab, ends)
        if isinstance(found, list):
            a.ambiguous_pages = found
        elif found is not None and any(q[0] == found[1] and q[1] != found[1] + found[2] for q in a.quoted):
            pass  # a quoted title of which only the beginning is some page's whole title: no such page
        elif found is not None:
            page, start, length = found
            a.pages = [page]
            a.page_span = (start, start + length)
            free -= set(range(*a.page_span))
            a.years = find_years([t for t in tokens if t.index in free])  # a year of the title is no slot
            concepts()
    if a.has("tag", "topic"):
        tag_words = {p for c in ("tag", "topic") for s, e, _ in a.concepts[c] for p in range(s, e)}
        # "téma"/"topic" asks for the Topic relation (named by its id or its page's title), a tag
        # word for tags; a tag is a whole word of the question (or a case form of the tag), never
        # the lemma of a word ("reči" is not the tag "rec")
        if a.has("topic"):
            found = _find_named(tokens, free - tag_words, known.topics, vocab)
            if isinstance(found, tuple):
                a.topics = [found[0]]
                free -= set(range(found[1], found[1] + found[2]))
        if a.has("tag"):
            for pos in sorted(free - tag_words):
                tag = known.tags.get(tokens[pos].folded)
                if tag is not None:
                    a.values.append(Value("tag", tag, pos, pos + 1))
                    if tag not in a.tags:
                        a.tags.append(tag)
                    free.discard(pos)
        concepts()
    a.work_types, per_type = vocab.work_type_spans(tokens, free)
    type_positions = {p for positions in per_type.values() for p in positions}
    a.values += [Value("work_type", t, min(ps), max(ps) + 1) for t, ps in per_type.items()]
    a.work_types += [t for t in dict.fromkeys(a.category_types) if t not in a.work_types]
    vocab_positions = type_positions | {p for hits in a.concepts.values() for s, e, _ in hits for p in range(s, e)}

    # surnames alone (also written in lower case) and names nobody has
    for token in tokens:
        pos = token.index
        if pos not in free or pos in vocab_positions or vocab.is_stopword(token) or len(token.folded) < 3:
            continue
        if token.capital and pos in starts:
            continue
        if not token.capital and len(token.folded) < 4:
            continue
        neighbours = [n for n in (pos - 1, pos + 1) if 0 <= n < len(tokens)
                      and max(n, pos) not in punctuated and not (n in starts and n < pos)]
        if any(n in free and n not in vocab_positions and not vocab.is_stopword(tokens[n])
               and (tokens[n].capital or not token.capital) for n in neighbours):
            continue  # next to another unknown word: part of a name nobody has ("Peter Lukáč")
        surname = known.names.match_surname(token)
        if surname is not None:
            a.persons.append(surname)
            free.discard(pos)
        elif token.capital and (author := known.authors.match_surname(token)) is not None:
            a.document_authors.append(author)
            free.discard(pos)
    a.persons.sort(key=lambda m: m.positions)
    for run in capital_runs(tokens, ignore=set()):
        run = [t for t in run if t.index in free and t.index not in vocab_positions and not vocab.is_stopword(t)]
        if len(run) == 1 and run[0].index in starts:
            continue
        if run:
            a.unmatched_names.append(run)
            free -= {t.index for t in run}

    a.language = _language(a, vocab)
    _values_and_operators(a, vocab, free)
    free -= {p for s, e, _ in a.operators for p in range(s, e)}
    # every word left must be a stop word or a filler word
    # a year is a slot the intent must use (see _years_explained); any other number is unexplained
    a.unexplained = [tokens[p].text for p in sorted(free - vocab_positions)
                     if not vocab.is_stopword(tokens[p]) and not (tokens[p].text.isdigit()
                                                                  and int(tokens[p].text) in a.years)]
    a.intent = _intent(a, index)
    return a


def _language(a: Analysis, vocab: Vocabulary) -> str | None:
    """The language whose question words matched most (function and filler words only decide a tie of none)."""
    counts: dict[str, int] = {}
    # function and filler words ("was", "in", "die") are shared across languages: they only decide
    # the language when no other question word does
    for name, hits in sorted(a.concepts.items(), key=lambda item: item[0] == "filler"):
        if name == "filler" and counts:
            break
        for _, _, lang in hits:
            counts[lang] = counts.get(lang, 0) + 1
    if not counts:
        return None
    return max(vocab.languages, key=lambda lang: (counts.get(lang, 0), -vocab.languages.index(lang)))


def _values_and_operators(a: Analysis, vocab: Vocabulary, free: set[int]) -> None:
    """Add person, author and year values to ``a.values``; read the operators between values of one
    kind (:mod:`query.graph.values`) and the negation words of the question."""
    tokens = a.tokens
    for kind, matches in (("person", a.persons), ("author", a.document_authors)):
        for m in matches:
            ref = tuple(sorted(e.ref for e in m.entries))
            a.values.append(Value(kind, ref, min(m.positions), max(m.positions) + 1))
    category_positions = {v.start for v in a.values if v.kind == "category"}
    page = set(range(*a.page_span)) if a.page_span else set()
    for t in tokens:
        if t.text.isdigit() and int(t.text) in a.years and t.index not in category_positions | page:
            a.values.append(Value("year", int(t.text), t.index, t.index + 1))
    languages = [a.language] if a.language else list(vocab.languages)
    # operator words are looked for on the words no entity took (stop words included)
    spans = operator_spans(tokens, free, languages)
    a.operators = spans
    a.combos = combinations(a.values, spans)
    in_operators = {p for s, e, _ in spans for p in range(s, e)}
    a.negated = negations(tokens, free - in_operators, languages, vocab.forms, vocab.is_entry_word)


# Concepts each intent may contain besides ``filler``, ``who`` and ``person`` (question words and
# nouns for people): a concept the intent does not use ("Kolik stran má diplomová práce X?" has a
# count the works of a person do not answer) means the question asks for something else.
_ALLOWED: dict[str, set[str]] = {
    "works_of_person": {"work", "year", "author", "document", "category"},
    "title_of_work": {"title", "work", "topic", "year", "start", "author", "document", "category"},
    "year_of_work": {"year", "work", "start", "author", "document", "category"},
    "supervisor_of_work": {"supervisor", "work", "year", "start", "document", "category"},
    "start_year_of_person": {"start", "year"},
    "tags_of_person": {"tag", "topic", "document", "author", "start", "year"},
    "topics_of_person": {"topic", "document", "author", "start", "year"},
    "common_tags": {"tag", "topic", "common", "document", "author", "start", "year"},
    "common_topics": {"topic", "common", "document", "author", "start", "year"},
    "persons_with_tag": {"tag", "topic", "document", "author", "count", "common"},
    "documents_with_tag": {"tag", "topic", "document", "count", "year", "common"},
    "documents_of_author": {"document", "author", "count", "tag", "year"},  # tag: with a tag value only
    "author_of_document": {"author", "document"},
    "tags_of_document": {"tag", "document"},
    "topics_of_document": {"topic", "document"},
    "persons_with_work": {"work", "count", "year", "author", "document", "category"},
    "persons_started": {"start", "year", "count", "category"},
    "supervised_by": {"supervisor", "work", "year", "count", "document", "start", "category"},
}
_ALWAYS = {"filler", "who", "which", "person"}
_USES_DOCUMENT_AUTHORS = {"documents_of_author", "supervised_by", "needs_person"}
"""Intents whose answer is selected by the document author named in the question."""
_NOT_LINKS = ("supervisor", "start", "category", "common", "tag")
"""Concepts a link question cannot use: what they ask about is no page a link leads to."""
# Intents that take a year from the question as a restriction (of works, of persons); a year in a
# question of any other intent is a word the intent cannot use ("Aké tagy mal X v roku 2019?":
# tags have no year), unless a start word makes it the start year that identifies the person.
_YEAR_SLOT = {"works_of_person", "title_of_work", "supervisor_of_work", "persons_with_work", "persons_started",
              "supervised_by", "documents_of_author", "documents_with_tag"}  # documents: the year of their date
_YEARS_COMBINED = {"persons_with_work", "persons_started", "supervised_by"}
_PREMISES = {"year_of_work", "start_year_of_person", "supervisor_of_work", "tags_of_person"}
"""Intents whose fact a premise question ("Je pravda, že ...?", ``premise`` words) states and the graph
checks: a work's year, a start year, a supervisor (a document author named), tags (tag values named)."""
"""Intents that take several years joined by and / or / but not (:data:`_COMBINES`)."""
# Intents whose answer is a year: "rok"/"kedy" without a year value is what they ask.
_ASKS_YEAR = {"year_of_work", "start_year_of_person", "works_of_person", "persons_with_work"}


def _intent(a: Analysis, index: GraphIndex) -> str:
    """The intent whose slots the question fills and whose words explain the question, else
    ``unsupported`` (or ``content``, ``needs_person``, ``links_unknown_page``)."""
    intent = _choose_intent(a, index)
    if intent == "links" and (a.years or any(w.isdigit() for w in a.unexplained)):
        return "unsupported"  # links have no year or number
    if intent == "links" and a.has(*_NOT_LINKS):
        return "unsupported"  # "Koľko vedúcich prác je uvedených na stránke Ľudia?" counts supervisors, not links
    if a.has("premise") and intent not in _PREMISES:
        return "unsupported"  # a stated fact the graph cannot check
    if a.document_authors and intent not in _USES_DOCUMENT_AUTHORS \
            and not (a.has("premise") and intent == "supervisor_of_work"):
        return "unsupported"  # a supervisor the answer would ignore: "Ktorí študenti Evy Kolárovej majú tag X?"
    allowed = _ALLOWED.get(intent)
    if allowed is None:
        return intent
    if not _years_explained(a, intent):
        return "unsupported"
    allowed = allowed | _ALWAYS | ({"premise"} if intent in _PREMISES else set())
    # a word may belong to several concepts ("téma": title and topic): it is explained by any of them
    used = {p for c, hits in a.concepts.items() if c in allowed for s, e, _ in hits for p in range(s, e)}
    for concept, hits in a.concepts.items():
        if concept not in allowed and any(not set(range(s, e)) <= used for s, e, _ in hits):
            return "unsupported"
    return intent


def _years_explained(a: Analysis, intent: str) -> bool:
    """Whether the years and the year/start words of the question belong to ``intent``; sets
    ``a.work_years`` (the years that restrict the answer).

    A start word with a year identifies the person by start year ("X, ktorý začal v roku 2016");
    a start or year word with no year value in an intent that does not answer with a year is a
    second question ("V ktorom roku začal X a aké má tagy?").
    """
    if a.has("premise") and intent in ("year_of_work", "start_year_of_person"):
        a.stated_years = list(a.years)  # "Je pravda, že X obhájil v roku 2020?": the year to check
        return len(a.years) == 1
    identifying = a.has("start") and intent not in ("persons_started", "start_year_of_person")
    if identifying and a.years:
        a.work_years = []
        return len(a.years) == 1
    if a.has("start") and intent not in ("persons_started", "start_year_of_person"):
        return False
    if a.years:
        if intent not in _YEAR_SLOT or (len(a.years) > 1 and intent not in _YEARS_COMBINED):
            return False
        a.work_years = list(a.years)
        return True
    return not a.has("year") or intent in _ASKS_YEAR


def _choose_intent(a: Analysis, index: GraphIndex) -> str:
    persons = bool(a.persons)
    if a.has("link"):
        return "links" if (a.pages or persons) else "links_unknown_page"
    if not persons and not a.pages and not a.document_authors and a.has("author") and a.has("who") \
            and (a.has("document") or a.quoted) \
            and not a.has("supervisor", "tag", "topic", "count") \
            and not (index.has_works and (a.has("work") or a.work_types)):
        # "Kdo napsal článek X?", "Who wrote „Y“?", "Who wrote the post about Z?": only a page's author
        # answers it; no title of the graph fits the words (or several do), so it is refused, never
        # sent on to a text search that would answer with some page's text ("Kdo vytvořil Jehlomat?"
        # names no document and stays a question for the text)
        return "ambiguous_page" if a.ambiguous_pages else "unknown_page"
    if not persons and not a.pages and not a.document_authors and a.has("tag", "topic") \
            and (a.has("document") or a.quoted) and a.has("which", "who", "count") \
            and not a.tags and not a.topics and (a.unexplained or a.unmatched_names):
        # "Jakými tagy je označený ten článek k výročí …?": tags are front matter the text does not
        # hold; the post named is no title of the graph, so it is refused rather than searched
        return "ambiguous_page" if a.ambiguous_pages else "unknown_page"
    if a.has("content"):
        return "content"
    if a.unexplained:
        return "unsupported"
    if a.has("tag", "topic"):
        what = "tags" if a.has("tag") else "topics"
        if a.pages and not persons and not a.tags and not a.topics and len(a.pages[0].words) >= 2:
            return f"{what}_of_document"  # "Jaké štítky má článek X?"
        if a.has("topic") and not a.has("tag") and persons and a.specific_type and not a.has("common"):
            return "title_of_work"  # "Na akú tému písal X bakalársku prácu?"
        if (len(a.persons) == 1 or (a.document_authors and not persons)) and a.tags and not a.topics \
                and a.has("document") and a.has("author"):
            return "documents_of_author"  # "Které články se štítkem newsletter napsala Radka Horáková?"
        if len(a.persons) >= 2 and not a.has("common") and "person" in a.combos \
                and a.combos["person"].only == "and":
            return f"{what}_of_person"  # "Aké tagy majú X a Y?": each person's tags (answered per person)
        if len(a.persons) >= 2 or (a.has("common") and persons):
            return f"common_{what}"
        if persons:
            return f"{what}_of_person"
        if a.tags or a.topics:
            if a.has("document") and not a.has("person", "who", "author"):
                return "documents_with_tag"  # "Ktoré stránky majú tag python?"
            return "persons_with_tag"
        return "unsupported"
    if persons:
        if a.has("supervisor"):
            return "supervisor_of_work"
        if a.has("title") and index.has_works:
            return "title_of_work"
        if (a.has("year") or (a.has("premise") and a.years)) and a.specific_type and index.has_works:
            return "year_of_work"  # "Is it true that X defended the master thesis in 2020?": the year to check
        if a.has("start") and not a.work_types:
            return "start_year_of_person"
        if (a.has("work") or a.work_types) and index.has_works:
            return "works_of_person"
        if a.has("author") and not a.has("document") and index.has_works and index.person_kind == "page":
            return "works_of_person"  # on a thesis wiki, what a student "wrote" are her works
        if a.has("document", "author"):
            return "documents_of_author"
        return "unsupported"
    if a.document_authors and a.has("document", "author") and not a.has("work", "supervisor"):
        return "documents_of_author"
    if a.document_authors and a.has("supervisor") and not a.unmatched_names:
        return "supervised_by"  # "Aké práce viedla Zuzana Krajčíová?", "Koho školil Daniel Hládek?"
    if a.document_authors and not a.unmatched_names and a.has("person") \
            and (a.has("start") or a.work_types or a.has("work")) and not a.has("title") and index.has_works:
        return "supervised_by"  # "Ktorí študenti Evy Kolárovej začali v roku 2020?": the author of their pages
    if a.pages and a.has("author", "person") and a.has("author", "who", "which"):
        return "author_of_document"
    if a.has("start") and a.years and not a.work_types:
        return "persons_started"
    if index.has_works and (a.has("work") or a.work_types) and (a.has("count", "who", "which", "person") or a.years):
        if not a.document_authors and not a.unmatched_names:
            return "persons_with_work"
    if a.unmatched_names or a.document_authors:
        return "needs_person"
    return "unsupported"


# -- lists and what a delivered answer shows of them ------------------------------------------------


def answer_list(body: dict[str, Any]) -> tuple[list[str], int] | None:
    """``(entries, count)`` of a list answer: the persons (ids), documents, tags or topics the answer
    lists and the exact count it states (``aggregation.count``, else the list's length); ``None``
    when the answer is no list (a fact of one person, per-person answers)."""
    answer = body.get("answer")
    if not isinstance(answer, dict):
        return None
    intent = str(body.get("intent"))
    if intent in ("common_tags", "tags_of_person"):
        entries = answer.get("tags")
    elif intent in ("common_topics", "topics_of_person"):
        entries = answer.get("topics")
    elif intent == "author_of_document":
        entries = answer.get("author_ids")
    elif isinstance(answer.get("authors"), list) and all(isinstance(i, dict) for i in answer["authors"]):
        entries = [d for item in answer["authors"] for d in item.get("documents") or []]  # several authors
    else:
        entries = answer.get("person_ids") if isinstance(answer.get("person_ids"), list) else answer.get("documents")
    if not isinstance(entries, list):
        return None
    agg = body.get("aggregation")
    count = agg.get("count") if isinstance(agg, dict) and isinstance(agg.get("count"), int) else len(entries)
    return [str(e) for e in entries], int(count)


def shown_entries(body: dict[str, Any], facts: Iterable[dict[str, Any]]) -> int | None:
    """How many entries of the body's list (:func:`answer_list`) the delivered ``facts`` name
    (as subject, object, their ids or document); ``None`` when the answer is no list."""
    listed = answer_list(body)
    if listed is None:
        return None
    named = {str(v) for f in facts for v in (f.get("subject_id"), f.get("subject"), f.get("object"),
                                              f.get("object_id"), f.get("document_path")) if isinstance(v, str | int)}
    return sum(1 for e in listed[0] if e in named)

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


# -- answering -------------------------------------------------------------------------------------


class _Answer:
    """Accumulates the response body: sources (S1..), facts, paths, documents."""

    def __init__(self, bundle: OpenedBundle, request: GraphRequest, analysis: Analysis | None,
                 index: GraphIndex | None, base_url: str | None) -> None:
        self.bundle = bundle
        self.request = request
        self.base_url = base_url
        self.index = index
        self.sources: dict[str, dict[str, Any]] = {}
        self.facts: list[dict[str, Any]] = []
        self.paths: list[dict[str, Any]] = []
        self.truncation: list[str] = []
        self.analysis = analysis

    def source(self, path: str | None) -> str | None:
        if path is None:
            return None
        if path not in self.sources:
            doc = self.bundle.docs.get(path)
            url = source_url(self.base_url, path, self.bundle.manifest.commit)
            self.sources[path] = {
                "source_id": f"S{len(self.sources) + 1}",
                "document_path": path,
                "source_url": url,
                "title": doc.title if doc else None,
            }
        return self.sources[path]["source_id"]  # type: ignore[no-any-return]

    def fact(self, subject: str, predicate: str, obj: Any, path: str | None, chunk_ids: list[str] | None = None,
             **extra: Any) -> None:
        """Add a fact read from the document at ``path``.  Its ``chunk_ids`` are the chunks of that
        document whose text states the fact's values (:func:`stating_chunks`); ``front_matter`` lists
        the values those chunks do not state (only the front matter does): all of them when
        ``chunk_ids`` is ``[]``, none when the chunks state every value."""
        stated = stating_chunks(self.bundle, path, predicate, subject, obj, chunk_ids)
        if stated is not None:
            chunk_ids, extra["front_matter"] = stated
        self.facts.append({
            "subject": subject, "predicate": predicate, "object": obj, "source_id": self.source(path),
            "document_path": path, "chunk_ids": chunk_ids or [], **extra,
        })

    def _entities(self) -> dict[str, Any] | None:
        a, index = self.analysis, self.index
        if a is None or index is None:
            return None
        persons = []
        for m in a.persons:
            for e in m.entries:
                person = index.persons.get(e.ref)
                persons.append({"id": e.ref, "name": e.name, "path": person.path if person else None,
                                "matched": " ".join(a.tokens[p].text for p in m.positions)})
        return {
            "persons": persons,
            "unknown_names": [" ".join(t.text for t in run) for run in a.unmatched_names],
            "document_authors": sorted({e.name for m in a.document_authors for e in m.entries}),
            "years": a.years,
            "work_types": a.work_types,
            "tags": a.tags,
            "topics": [{"id": t.ref, "name": t.label, "path": t.path} for t in a.topics],
            "pages": [{"path": p.path, "title": p.label} for p in a.pages],
            "language": a.language,
            # the question's words the analysis explained (entities, intent words, stop and filler
            # words): an ``ok`` answer explains every word, and its claims answer them all
            "explained_words": [t.text for t in a.tokens if t.text not in a.unexplained],
            # asks for persons or documents selected by front matter or links: never for text search
            "structure_question": a.structure_question(index.vocabulary),
        }

    def body(self, status: str = "ok", reason: str | None = None, *, complete: bool | None = None,
             **fields: Any) -> dict[str, Any]:
        a = self.analysis
        body: dict[str, Any] = {
            "status": status,
            "reason": reason,
            "sources": list(self.sources.values()),
            "index_version": self.bundle.index_version.model_dump(mode="json"),
            "complete": complete,
            "truncated": bool(self.truncation),
            "truncation_reasons": sorted(set(self.truncation)),
            "query": self.request.text,
            "question": self.request.text,
            "intent": a.intent if a else None,
            "entities": self._entities(),
            "answer": None,
            "facts": self.facts,
            "paths": self.paths,
            "documents": [
                {"source_id": s["source_id"], "document_path": s["document_path"], "title": s["title"]}
                for s in self.sources.values()
            ],
            "aggregation": None,
        }
        body.update(fields)
        return body

    def unsupported(self, message: str) -> dict[str, Any]:
        return self.body("no_answer", "unsupported_question", suggested_endpoint="/search", message=message)

    def cut(self, rows: list[list[Any]], reason: str) -> list[list[Any]]:
        if len(rows) > self.request.limit:
            self.truncation.append(reason)
            return rows[: self.request.limit]
        return rows


def answer_graph(bundle: OpenedBundle, payload: dict[str, Any], *, base_url: str | None = None) -> dict[str, Any]:
    """Answer a ``POST /graph`` body from the bundle's graph.

    :param bundle: the opened bundle (its graph connection is opened lazily, read-only).
    :param payload: the decoded JSON body, see :class:`GraphRequest`.
    :param base_url: prefix of ``source_url`` (document path appended), or ``None``.
    :returns: the response body: contract fields plus ``query`` (and ``question``, the same text),
        ``intent``, ``entities`` (``persons`` ``[{id, name, path, matched}]``, ``unknown_names``,
        ``document_authors``, ``years``, ``work_types``, ``tags``, ``topics``, ``pages``,
        ``language`` (of the question words: sk, cs, en, de; null when none matched), ``explained_words``),
        ``answer`` (structured, per intent), ``facts``, ``paths``, ``documents``,
        ``aggregation`` (``{count, complete}`` or null) and, when ambiguous, ``candidates``.
    :raises InvalidQueryError, InvalidRequestError: bad payload.
    :raises RetrievalUnavailableError: the graph database cannot be opened or queried.
    """
    request = parse_graph_request(payload)
    try:
        index = graph_index(bundle)
        with bundle.graph_lock:
            analysis = analyse(request.text, index, request.published_only)
            out = _Answer(bundle, request, analysis, index, base_url)
            return _dispatch(out, index, analysis)
    except RuntimeError as exc:  # ladybug failures
        raise RetrievalUnavailableError("graph query failed") from exc
    except Exception as exc:
        from artifacts.errors import ArtifactError

        if isinstance(exc, ArtifactError):
            raise RetrievalUnavailableError("graph database unavailable") from exc
        raise


_ONE_PERSON = {"works_of_person", "title_of_work", "year_of_work", "supervisor_of_work", "start_year_of_person",
               "tags_of_person", "topics_of_person"}


_PERSON_CONCEPTS = ("who", "person", "author", "supervisor", "work", "start", "tag", "topic", "title", "year",
                    "common", "count", "link")
"""Question words that make a name the subject of a person question (then an unknown name is refused)."""
_GENERIC_CONCEPTS = ("who", "person", "count")
"""Of those, the ones that ask about people or numbers in general ("Kdo po X převzal ...?", "Kolik lidí
přišlo na X?"): with every name of the question found in the pages, the text answers them."""


def _named_in_pages(bundle: OpenedBundle, run: list[Token], published_only: bool) -> bool:
    """Whether the words of ``run`` occur together, in this order, in some chunk's title or text
    (of a published document, with ``published_only``).

    A capitalised name the graph does not know as a person ("Jehlomat", "Česko.Digital") that the
    pages mention is a thing the text can answer about, not "a person nobody has"."""
    from whoosh import query as wq

    from query.search.weighting import _chunk_id, ranking_searcher

    words = re.findall(r"\w+", fold(" ".join(t.text for t in run)))
    phrase = " ".join(words)
    if not phrase:
        return False
    searcher: Any = ranking_searcher(bundle)
    # the index may hold the name as one token ("česko.digital"): try the joined forms too
    joined = [wq.Term(f, sep.join(words)) for sep in (".", "-", "") for f in ("body", "title")] \
        if len(words) > 1 else []
    hits = searcher.search(wq.Or([wq.And([wq.Or([wq.Term("body", w), wq.Term("title", w)]) for w in words]), *joined]),
                           limit=200, scored=False)
    for _, docnum in hits.top_n:
        chunk = bundle.chunks[bundle.chunk_index[_chunk_id(bundle, searcher, docnum)]]
        if published_only and not chunk.published:
            continue
        if phrase in " ".join(re.findall(r"\w+", fold(f"{chunk.title} {chunk.text}"))):
            return True
    return False


def _dispatch(out: _Answer, index: GraphIndex, a: Analysis) -> dict[str, Any]:
    needs_person = a.intent in _ONE_PERSON or a.intent in ("common_tags", "common_topics", "needs_person")
    if (not a.persons and not a.pages and not a.document_authors
            and a.intent in ("needs_person", "unsupported", "content")
            # without works in the graph, "projekt" names no thesis; "kdo"/"lidí"/"kolik" alone ask about
            # the text's people or numbers, not about the named thing
            and not a.has(*(c for c in _PERSON_CONCEPTS
                            if c not in _GENERIC_CONCEPTS and (c != "work" or index.has_works)))
            and not a.work_types and a.unmatched_names
            and all(_named_in_pages(out.bundle, run, out.request.published_only) for run in a.unmatched_names)):
        # "Co je Jehlomat?", "Proč si Česko.Digital nezaložilo účet na Bluesky?", "Kdo po Česko.Digital
        # převzal Sbírku počítačů?": the names are no persons of the graph and the pages mention them, so
        # the question is about what the pages say, not about "a person nobody has": the text answers
        return out.unsupported("The names in the question are no persons of the graph, but pages mention "
                               "them; try /search.")
    definition = definition_question(out.request.text)
    if (definition is not None and not a.persons and not a.pages and not a.document_authors
            and a.intent in ("needs_person", "unsupported") and not a.work_types
            and not a.has(*(c for c in _PERSON_CONCEPTS if c != "who" and (c != "work" or index.has_works)))
            and (definition.kind == "thing"
                 or all(_named_in_pages(out.bundle, run, out.request.published_only) for run in a.unmatched_names))):
        # "Co je Jehlomat?" asks what a thing is, never who: whether or not the pages mention it, the
        # text answers (with a sentence that defines it) or refuses for lack of evidence.  "Kdo je X?"
        # about a name the pages mention but the graph has no person for is answered the same way.
        return out.unsupported("The question asks what (or who) something is, which the graph does not "
                               "describe; try /search.")
    # a name nobody has: unknown_person whatever was asked (but a page title is no person); only a
    # run that looks like a person's name counts, unless the question asks who: "Ministry of Defence",
    # "Open Data Day", "Česko.Digital Mastodon" are no persons
    who = a.has("who")
    slot = (needs_person and a.intent != "needs_person") or a.has(*(c for c in _PERSON_CONCEPTS
                                                                    if c not in _GENERIC_CONCEPTS))
    unknown = [run for run in a.unmatched_names if len(run) >= 2 and (who or looks_like_person_name(run))]
    # a single word counts as a name only in a question with a person slot ("Aké práce má Eva?"),
    # not in "What is Code for Germany?"
    named = [run for run in a.unmatched_names if who or looks_like_person_name(run)
             or (slot and looks_like_person_name(run, single=True, lexicon=False))]
    if not a.persons and not a.pages and a.intent not in ("links_unknown_page", "unknown_page", "ambiguous_page") and (
            unknown or (needs_person and (named or a.document_authors))):
        return _unknown_person(out, a)
    if a.intent == "content":
        return out.unsupported("Questions about the content of documents are answered by /search.")
    if a.intent in ("unsupported", "needs_person"):
        return out.unsupported("The question was not understood by the graph (no template covers it); try /search.")
    if a.intent in ("links_unknown_page", "unknown_page"):
        return out.body("no_answer", "unknown_page", message="No page of the graph matches the page in the question.")
    if a.intent == "ambiguous_page":
        return out.body("ambiguous", "ambiguous_page", message="Several pages begin with the title in the question; "
                        "ask again with more of the title.",
                        candidates=[{"title": p.label, "path": p.path, "source_id": out.source(p.path)}
                                    for p in a.ambiguous_pages])
    refused = _refuse_values(out, a)
    if refused is not None:
        return refused
    if a.combos:
        combined = _combined(out, index, a)
        if combined is not None:
            return combined
    if a.intent in ("tags_of_document", "topics_of_document"):
        return _tags_of_document(out, a)
    if a.intent == "persons_with_work":
        return _persons_with_work(out, index, a)
    if a.intent == "persons_started":
        return _persons_started(out, a)
    if a.intent in ("persons_with_tag", "documents_with_tag"):
        return _with_tag(out, index, a)
    if a.intent == "author_of_document":
        return _authors_of_document(out, a)
    if a.intent == "links" and a.pages:
        return _links(out, index, a, [])
    if a.intent == "supervised_by":
        return _supervised_by(out, index, a)
    if a.intent == "documents_of_author" and not a.persons:
        return _documents_of_author(out, index, [], a.document_authors, a.tags, a.work_years, a.combos.get("tag"))
    persons = _resolve_persons(out, index, a)
    if isinstance(persons, dict):
        return persons
    if a.intent == "links":
        return _links(out, index, a, persons)
    if a.intent in ("common_tags", "common_topics"):
        if len(persons) < 2:
            return out.unsupported("A question about shared tags or topics needs two or more persons.")
        return _common(out, persons, "tags" if a.intent == "common_tags" else "topics", _person_combo(a, persons))
    if len(persons) > 1 and a.intent in _ONE_PERSON and "person" in a.combos:
        return _per_person(out, index, a, persons)  # "Aké sú názvy prác X a Y?": each person's own answer
    if a.intent in ("tags_of_person", "topics_of_person") and len(persons) != 1:
        return out.unsupported("Tags or topics of several persons: ask for their common tags, or one at a time.")
    if a.intent == "documents_of_author":
        return _documents_of_author(out, index, persons, [], a.tags, a.work_years, a.combos.get("tag"))
    if len(persons) != 1:
        return out.unsupported("The question names several persons; ask about one at a time.")
    return _one_person(out, index, a, persons[0])


def _one_person(out: _Answer, index: GraphIndex, a: Analysis, person: _Person) -> dict[str, Any]:
    if a.intent == "supervisor_of_work":
        body = _supervisor(out, index, a, person)
    elif a.intent == "start_year_of_person":
        body = _start_year(out, person)
    elif a.intent in ("tags_of_person", "topics_of_person"):
        body = _common(out, [person], "tags" if a.intent == "tags_of_person" else "topics")
    else:
        body = _person_works(out, index, a, person)
    if a.has("premise") and body["status"] == "ok" and isinstance(body.get("answer"), dict):
        premise = _premise(a, body["answer"])
        if premise is not None:
            body["answer"]["premise"] = premise
    return body


def _premise(a: Analysis, answer: dict[str, Any]) -> dict[str, Any] | None:
    """``{stated, holds}`` of a question that states a fact ("Je pravda, že X obhájil diplomovú prácu v
    roku 2020?"): the value the question states and whether the graph's fact has it; ``None`` when the
    question states no value of the fact (then it is an ordinary question)."""
    if a.intent == "year_of_work" and a.stated_years:
        return {"stated": {"year": a.stated_years[0]}, "holds": a.stated_years[0] in (answer.get("years") or [])}
    if a.intent == "start_year_of_person" and a.stated_years:
        return {"stated": {"start_year": a.stated_years[0]}, "holds": answer.get("start_year") == a.stated_years[0]}
    if a.intent == "supervisor_of_work" and a.document_authors:
        stated = [e.name for m in a.document_authors for e in m.entries[:1]]
        have = {fold(n) for n in answer.get("supervisors") or []}
        return {"stated": {"supervisors": stated}, "holds": all(fold(n) in have for n in stated)}
    if a.intent == "tags_of_person" and a.tags:
        return {"stated": {"tags": list(a.tags)}, "holds": set(a.tags) <= set(answer.get("tags") or [])}
    return None


def _person_combo(a: Analysis, persons: list[_Person]) -> Combination | None:
    """The operators between the persons of the question, by resolved person (``None``: all "and")."""
    combo = a.combos.get("person")
    if combo is None or len(combo.values) != len(persons) or set(combo.ops) == {"and"}:
        return None
    return Combination("person", tuple(p.id for p in persons), combo.ops)


def _per_person(out: _Answer, index: GraphIndex, a: Analysis, persons: list[_Person]) -> dict[str, Any]:
    """A fact question about several persons joined by "and", answered for each person on its own: the
    facts of all; ``answer.persons`` holds each person's answer with its status.  The body is ``ok`` when
    every person's answer is; else it takes the status and reason of the first that is not."""
    parts = []
    for person in persons:
        part = _one_person(out, index, a, person)
        parts.append({"person": person.name, "person_id": person.id, "status": part["status"],
                      "reason": part["reason"], "answer": part.get("answer")})
    answer = {"persons": parts}
    failed = next((p for p in parts if p["status"] != "ok"), None)
    if failed is not None:
        return out.body(failed["status"], failed["reason"], complete=True, answer=answer,
                        message=f"No answer for {failed['person']}; the answers for each person are in answer.persons.")
    return out.body("ok", complete=not out.truncation, answer=answer)


# -- several values of one kind --------------------------------------------------------------------


_ALL_OPS = frozenset({"and", "or", "but_not"})
_COMBINES: dict[str, dict[str, frozenset[str]]] = {
    "persons_with_tag": {"tag": _ALL_OPS},
    "documents_with_tag": {"tag": _ALL_OPS},
    "documents_of_author": {"tag": _ALL_OPS, "person": frozenset({"and"}), "author": frozenset({"and"})},
    "persons_with_work": {"year": _ALL_OPS, "work_type": _ALL_OPS, "category": _ALL_OPS},
    # a person has one start year: "začali v roku 2016 a 2017" has no intersection to mean
    "persons_started": {"year": frozenset({"or"}), "category": _ALL_OPS},
    "supervised_by": {"author": _ALL_OPS, "year": _ALL_OPS, "work_type": _ALL_OPS},
    "common_tags": {"person": _ALL_OPS},
    "common_topics": {"person": _ALL_OPS},
    **{intent: {"person": frozenset({"and"}), "work_type": frozenset({"and"})} for intent in _ONE_PERSON},
}
"""Per intent, the kinds of value it takes several of, and the operators it answers exactly
(:mod:`query.graph.values`): sets of persons or documents are intersected, united or subtracted;
a fact question about two persons (``_ONE_PERSON``) is answered per person."""


def _refuse_values(out: _Answer, a: Analysis) -> dict[str, Any] | None:
    """The ``unsupported_question`` body of a question whose values the answer would not all use
    (never answered by the first value alone), or ``None``."""
    if a.negated:
        return out.unsupported("The question negates a value; the graph answers what pages have, not what "
                               "they lack.")
    if len(a.combos) > 1:
        return out.unsupported("The question joins several values of more than one kind; ask about one "
                               "kind at a time.")
    for kind, combo in a.combos.items():
        allowed = _COMBINES.get(a.intent, {}).get(kind)
        if allowed is None:
            return out.unsupported(f"The question names several values ({kind}) that this kind of answer "
                                   "cannot combine.")
        if not combo.clear or not set(combo.ops) <= allowed:
            return out.unsupported(f"How the values ({kind}) are joined (and / or / but not) is unclear or "
                                   "not answerable for this question.")
    return None


@dataclass
class _Selected:
    """Persons (or documents) one value selects: id -> (name, path), and the facts that show it."""

    items: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    facts: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = field(default_factory=dict)

    def add(self, ident: str, name: str, path: str | None, *fact: Any, **extra: Any) -> None:
        self.items.setdefault(ident, (name, path))
        if fact:
            self.facts.setdefault(ident, []).append((fact, extra))


def _person_edge(index: GraphIndex) -> str:
    return "(d)-[:DESCRIBES]->(p:Person)" if index.person_kind == "page" else "(d)-[:AUTHORED_BY]->(p:Person)"


def _select_tag(out: _Answer, index: GraphIndex, tag: str, documents: bool) -> _Selected:
    conn = out.bundle.graph_connection()
    params = {"value": tag, "published_only": out.request.published_only}
    match = ("MATCH (d:Document)-[:TAGGED]->(:Tag {name: $value}) WHERE (d.published OR NOT $published_only) ")
    sel = _Selected()
    if documents:
        for (path,) in fetch_rows(conn, match + "RETURN DISTINCT d.path", params):
            sel.add(path, path, path, path, "tagged", tag, path)
        return sel
    for pid, name, path in fetch_rows(conn, match + f"MATCH {_person_edge(index)} RETURN DISTINCT p.id, p.name, "
                                                    "d.path", params):
        sel.add(pid, name, path, name, "tagged", tag, path, subject_id=pid)
    return sel


def _select_works(out: _Answer, types: list[str], year: int | None, supervisor: str | None = None) -> _Selected:
    conn = out.bundle.graph_connection()
    where = "w.type IN $types AND (p.published OR NOT $published_only)" + (" AND w.year = $year" if year else "")
    params: dict[str, Any] = {"types": types, "published_only": out.request.published_only,
                              **({"year": year} if year else {})}
    match = "MATCH (p:Person)-[:HAS_WORK]->(w:Work) "
    if supervisor is not None:
        match = ("MATCH (:DocumentAuthor {name: $name})<-[:HAS_DOCUMENT_AUTHOR]-(:Document)-[:DESCRIBES]->(p:Person)"
                 "-[:HAS_WORK]->(w:Work) ")
        params["name"] = supervisor
    sel = _Selected()
    for pid, name, wid, wtype, wyear, title, path, chunk_ids in fetch_rows(
            conn, match + f"WHERE {where} RETURN DISTINCT p.id, p.name, w.id, w.type, w.year, w.title, w.path, "
                          "w.chunk_ids ORDER BY w.year, w.type", params):
        obj = {"type": wtype, "year": wyear, "title": title, "title_missing": title is None, "work_id": wid}
        if supervisor is not None:
            obj["supervisor"] = supervisor
        sel.add(pid, name, path, name, "has_work", obj, path, json.loads(chunk_ids or "[]"), subject_id=pid)
    return sel


def _select_started(out: _Answer, year: int) -> _Selected:
    sel = _Selected()
    for pid, name, path in fetch_rows(out.bundle.graph_connection(),
                                      "MATCH (p:Person) WHERE p.start_year = $year AND (p.published OR NOT "
                                      "$published_only) RETURN p.id, p.name, p.path",
                                      {"year": year, "published_only": out.request.published_only}):
        sel.add(pid, name, path, name, "started_in", year, path, subject_id=pid)
    return sel


def _select_supervised(out: _Answer, index: GraphIndex, a: Analysis, name: str) -> _Selected:
    """Persons whose page names ``name`` as supervisor (restricted by the question's work types,
    work years and start year, as :func:`_supervised_by`)."""
    if a.work_types or a.work_years:
        works = _select_works(out, a.work_types or index.work_types, a.work_years[0] if a.work_years else None, name)
    rows = fetch_rows(out.bundle.graph_connection(),
                      "MATCH (:DocumentAuthor {name: $name})<-[:HAS_DOCUMENT_AUTHOR]-(d:Document)-[:DESCRIBES]->"
                      "(p:Person) WHERE p.published OR NOT $published_only RETURN DISTINCT p.id, p.name, p.path",
                      {"name": name, "published_only": out.request.published_only})
    started = a.years if a.has("start") else []
    sel = _Selected()
    for pid, pname, path in rows:
        if (a.work_types or a.work_years) and pid not in works.items:
            continue
        if started and index.persons[pid].start_year not in started:
            continue
        written = _as_written(out, path, name)
        sel.add(pid, pname, path, pname, "supervised_by", name, path, subject_id=pid,
                **({"as_written": written} if written else {}))
        for fact, extra in (works.facts.get(pid, []) if (a.work_types or a.work_years) else []):
            sel.facts[pid].append((fact, extra))
    return sel


def _combined(out: _Answer, index: GraphIndex, a: Analysis) -> dict[str, Any] | None:
    """Answer a question with several values of one kind (``a.combos``), or ``None`` when the intent's
    own function does (persons answered one by one, common tags, documents per author)."""
    ((kind, combo),) = a.combos.items()
    values = list(combo.values)
    documents = a.intent in ("documents_with_tag", "documents_of_author")
    if a.intent in ("persons_with_tag", "documents_with_tag") and kind == "tag":
        if a.topics or (documents and a.work_years):
            return out.unsupported("Several tags together with a topic or a year are not combined.")
        selected = [_select_tag(out, index, v, documents) for v in values]
    elif a.intent in ("persons_with_work", "persons_started"):
        types = a.work_types or index.work_types
        if kind == "year":
            selected = [_select_works(out, types, v) if a.intent == "persons_with_work" else _select_started(out, v)
                        for v in values]
        elif kind == "work_type":
            if len(a.years) > 1:
                return out.unsupported("Several work types and several years: ask about one at a time.")
            selected = [_select_works(out, [v], a.years[0] if a.years else None) for v in values]
        else:  # category values: a work of a type in a year, or a start year
            selected = [_select_started(out, y) if t == "start" else _select_works(out, [t], y) for t, y in values]
    elif a.intent == "supervised_by":
        if kind == "author":
            if any(len(refs) > 1 for refs in values):
                return out.unsupported("A supervisor's name fits several document authors.")
            selected = [_select_supervised(out, index, a, refs[0]) for refs in values]
        else:
            if len(a.document_authors) != 1 or len(a.document_authors[0].entries) != 1:
                return out.unsupported("The question names several supervisors; ask about one at a time.")
            name = a.document_authors[0].entries[0].name
            if kind == "year":
                selected = [_select_works(out, a.work_types or index.work_types, v, name) for v in values]
            else:
                selected = [_select_works(out, [v], a.work_years[0] if a.work_years else None, name) for v in values]
    else:
        return None  # answered per person / by the intent's own function
    return _combined_body(out, a, combo, selected, documents)


def _combined_body(out: _Answer, a: Analysis, combo: Combination, selected: list[_Selected],
                   documents: bool) -> dict[str, Any]:
    """The body of a set answer: persons (or documents) of ``combo`` over ``selected``, their facts,
    the exact count; the list is cut at ``limit`` (``entity_limit``/``result_limit``)."""
    chosen_ids = combo.apply([set(s.items) for s in selected])
    names: dict[str, tuple[str, str | None]] = {}
    for s in selected:
        for ident in chosen_ids & s.items.keys():
            names.setdefault(ident, s.items[ident])
    order = sorted(chosen_ids, key=lambda i: (names[i][0], i))
    count = len(order)
    shown = order[: out.request.limit]
    if len(order) > out.request.limit:
        out.truncation.append("result_limit" if documents else "entity_limit")
    for ident in shown:
        for k in combo.positive():
            for fact, extra in selected[k].facts.get(ident, []):
                out.fact(*fact, **extra)
    shown_values = [v if not isinstance(v, tuple) or combo.kind != "author" else v[0] for v in combo.values]
    answer: dict[str, Any] = {"kind": combo.kind, "values": shown_values, "operators": list(combo.ops),
                              "count": count}
    if combo.kind == "tag":
        answer["tags"] = shown_values
    if documents:
        answer["documents"] = shown
    else:
        answer["persons"] = [names[i][0] for i in shown]
        answer["person_ids"] = shown
    if count == 0:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        aggregation={"count": 0, "complete": True},
                        message="No person or document has that combination of values.")
    return out.body("ok", complete=not out.truncation, answer=answer, aggregation={"count": count, "complete": True})


def _unknown_person(out: _Answer, a: Analysis) -> dict[str, Any]:
    message = "No person of the graph matches the name in the question."
    if a.document_authors:
        message += " The name is a document author (for example a supervisor), not a person the pages describe."
    return out.body("no_answer", "unknown_person", message=message)


def _resolve_persons(out: _Answer, index: GraphIndex, a: Analysis) -> list[_Person] | dict[str, Any]:
    """Persons of the question, or the ``no_answer`` / ``ambiguous`` body.

    A name the graph does not know makes a question about several persons unanswerable; in a
    question about one person it only matters when no person was recognised at all.
    """
    several = a.intent in ("common_tags", "common_topics")
    if not a.persons or (several and a.unmatched_names):
        return _unknown_person(out, a)
    resolved: list[_Person] = []
    for match in a.persons:
        entries = _narrow_by_years(index, match.entries, a.years if a.has("start") else [])
        if len(entries) == 1:
            resolved.append(index.persons[entries[0].ref])
            continue
        candidates = [_candidate(out, index, index.persons[e.ref]) for e in match.entries]
        return out.body("ambiguous", "ambiguous_person", candidates=candidates,
                        message="Several persons match the name; ask again with the full name or the start year.")
    return list({p.id: p for p in resolved}.values())


def _narrow_by_years(index: GraphIndex, entries: list[NameEntry], years: list[int]) -> list[NameEntry]:
    """Of several same-named persons, those whose start year is named in the question (if exactly one)."""
    if len(entries) < 2 or not years:
        return entries
    chosen = [e for e in entries if index.persons[e.ref].start_year in years]
    return chosen if len(chosen) == 1 else entries


def _works(out: _Answer, person: _Person) -> list[dict[str, Any]]:
    rows = fetch_rows(
        out.bundle.graph_connection(),
        "MATCH (p:Person {id: $id})-[:HAS_WORK]->(w:Work) "
        "RETURN w.id, w.type, w.type_label, w.year, w.title, w.path, w.section_id, w.chunk_ids "
        "ORDER BY w.year, w.type, w.id LIMIT $n",
        {"id": person.id, "n": out.request.limit + 1},
    )
    rows = out.cut(rows, "fact_limit")
    return [
        {"id": r[0], "type": r[1], "type_label": r[2], "year": r[3], "title": r[4], "path": r[5],
         "section_id": r[6], "chunk_ids": json.loads(r[7] or "[]")}
        for r in rows
    ]


def _candidate(out: _Answer, index: GraphIndex, person: _Person) -> dict[str, Any]:
    works = _works(out, person) if index.has_works else []
    return {
        "person": person.name, "id": person.id, "path": person.path, "start_year": person.start_year,
        "source_id": out.source(person.path),
        "works": [{"type": w["type"], "year": w["year"], "title": w["title"]} for w in works],
    }


def _work_facts(out: _Answer, person: _Person, works: list[dict[str, Any]]) -> None:
    for w in works:
        obj = {"type": w["type"], "type_label": w["type_label"], "year": w["year"], "title": w["title"],
               "title_missing": w["title"] is None, "work_id": w["id"]}
        out.fact(person.name, "has_work", obj, w["path"], w["chunk_ids"], subject_id=person.id)
        out.paths.append({
            "nodes": [{"label": "Document", "id": person.path}, {"label": "Person", "id": person.id},
                      {"label": "Work", "id": w["id"]}]
            + ([{"label": "Section", "id": w["section_id"]}] if w["section_id"] else []),
            "relationships": ["DESCRIBES", "HAS_WORK"] + (["DESCRIBED_IN"] if w["section_id"] else []),
        })


def _person_works(out: _Answer, index: GraphIndex, a: Analysis, person: _Person) -> dict[str, Any]:
    out.source(person.path)
    works = _works(out, person)
    if a.work_types:
        works = [w for w in works if w["type"] in a.work_types]
    if a.work_years:
        works = [w for w in works if w["year"] in a.work_years]
    item: dict[str, Any] = {"person": person.name, "person_id": person.id, "path": person.path}
    if a.intent == "works_of_person":
        item["works"] = [{"type": w["type"], "type_label": w["type_label"], "year": w["year"],
                          "title": w["title"]} for w in works]
        item["years"] = sorted({w["year"] for w in works})
        item["titles"] = [w["title"] for w in works if w["title"] is not None]
        found = bool(works)
    else:
        item["work_type"] = a.work_types[0] if len(a.work_types) == 1 else (a.work_types or None)
        item["years"] = sorted({w["year"] for w in works})
        found = bool(works)
        if a.intent == "title_of_work":
            if not a.work_types:
                item["works"] = [{"type": w["type"], "year": w["year"], "title": w["title"]} for w in works]
            item["titles"] = [w["title"] for w in works if w["title"] is not None]
            item["title_missing"] = any(w["title"] is None for w in works)
            found = bool(item["titles"])
    _work_facts(out, person, works)
    complete = not out.truncation
    if not found:
        message = ("The work asked about has no title on the person's page." if works
                   else "The person has no work of the kind asked about in the graph.")
        return out.body("no_answer", "no_matching_sources", complete=complete, answer=item, message=message)
    return out.body("ok", complete=complete, answer=item)


def _as_written(out: _Answer, path: str | None, name: str) -> str | None:
    """How the page at ``path`` spells the document author ``name``, when it spells it otherwise.

    The build merges spellings of one name whose folded form is the same ("Eva Kolarova" and "Eva
    Kolárová", :func:`artifacts.graphschema.name_key`) into one ``DocumentAuthor`` named as most pages
    spell it; a fact about a page that spells it differently says so (``as_written``)."""
    doc = out.bundle.docs.get(path) if path else None
    for written in doc.authors if doc is not None else ():
        written = unicodedata.normalize("NFC", written.strip())
        if written != name and fold(written) == fold(name):
            return written
    return None


def _supervised_fact(out: _Answer, subject: str, name: str, path: str | None, subject_id: str) -> str:
    """Add the ``supervised_by`` fact of one page; returns the name as the page writes it."""
    written = _as_written(out, path, name)
    extra = {"as_written": written} if written else {}
    out.fact(subject, "supervised_by", name, path, subject_id=subject_id, **extra)
    return written or name


def _supervisor(out: _Answer, index: GraphIndex, a: Analysis, person: _Person) -> dict[str, Any]:
    """Supervisors of a person's works: the document authors of the person's page."""
    conn = out.bundle.graph_connection()
    if (a.work_types or a.work_years) and index.has_works:
        works = [w for w in _works(out, person) if (not a.work_types or w["type"] in a.work_types)
                 and (not a.work_years or w["year"] in a.work_years)]
        if not works:
            return out.body("no_answer", "no_matching_sources", complete=True,
                            message="The person has no work of the kind asked about in the graph.")
    rows = fetch_rows(conn, "MATCH (d:Document {path: $path})-[:HAS_DOCUMENT_AUTHOR]->(a:DocumentAuthor) "
                            "RETURN a.name ORDER BY a.name", {"path": person.path})
    names = [r[0] for r in rows]
    for name in names:
        _supervised_fact(out, person.name, name, person.path, person.id)
    answer = {"person": person.name, "person_id": person.id, "path": person.path,
              "work_type": a.work_types[0] if len(a.work_types) == 1 else (a.work_types or None),
              "supervisors": names}
    if not names:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        message="The person's page names no supervisor.")
    return out.body("ok", complete=True, answer=answer, aggregation={"count": len(names), "complete": True})


def _supervised_by(out: _Answer, index: GraphIndex, a: Analysis) -> dict[str, Any]:
    """Persons (and their works) whose page names the document author as supervisor."""
    match = a.document_authors[0]
    if len(a.document_authors) > 1 or len(match.entries) > 1:
        return out.unsupported("The question names several supervisors; ask about one at a time.")
    name = match.entries[0].name
    conn = out.bundle.graph_connection()
    cypher = ("MATCH (:DocumentAuthor {name: $name})<-[:HAS_DOCUMENT_AUTHOR]-(d:Document)-[:DESCRIBES]->(p:Person) "
              "WHERE p.published OR NOT $published_only "
              "OPTIONAL MATCH (p)-[:HAS_WORK]->(w:Work) "
              "RETURN p.id, p.name, p.path, w.id, w.type, w.year, w.title, w.chunk_ids ORDER BY p.name, p.id, w.year")
    rows = fetch_rows(conn, cypher, {"name": name, "published_only": out.request.published_only})
    if a.work_types:
        rows = [r for r in rows if r[4] in a.work_types]
    if a.work_years:
        rows = [r for r in rows if r[5] in a.work_years]
    started = a.years if a.has("start") else []  # "Ktorých študentov, čo začali v roku 2022, viedol X?"
    if started:
        rows = [r for r in rows if index.persons[r[0]].start_year in started]
    persons: dict[str, tuple[str, str]] = {}
    works = []
    spellings: dict[str, int] = {}
    for pid, pname, path, wid, wtype, year, title, chunk_ids in rows:
        if pid not in persons:  # one supervised_by fact per person, however many works
            written = _supervised_fact(out, pname, name, path, pid)
            spellings[written] = spellings.get(written, 0) + 1
            if started:
                out.fact(pname, "started_in", index.persons[pid].start_year, path, subject_id=pid)
        persons.setdefault(pid, (pname, path))
        if wid is not None:
            works.append({"person": pname, "type": wtype, "year": year, "title": title})
            out.fact(pname, "has_work", {"type": wtype, "year": year, "title": title, "work_id": wid,
                                         "supervisor": name}, path, json.loads(chunk_ids or "[]"), subject_id=pid)
    chosen = list(persons.items())
    if len(chosen) > out.request.limit:
        out.truncation.append("entity_limit")
        chosen = chosen[: out.request.limit]
    answer = {"supervisor": name, "work_types": a.work_types or None, "year": a.work_years[0] if a.work_years else None,
              "start_year": started[0] if started else None,
              # the spellings merged into the name, with their numbers of pages (only when several)
              "spellings": spellings if len(spellings) > 1 else None,
              "count": len(persons), "persons": [n for _, (n, _) in chosen], "person_ids": [i for i, _ in chosen],
              "works": works}
    if not persons:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        message="No page names that supervisor for the works asked about.")
    return out.body("ok", complete=not out.truncation, answer=answer,
                    aggregation={"count": len(persons), "complete": True})


def _start_year(out: _Answer, person: _Person) -> dict[str, Any]:
    answer = {"person": person.name, "person_id": person.id, "path": person.path, "start_year": person.start_year}
    if person.start_year is None:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        message="The person's page names no start year.")
    out.fact(person.name, "started_in", person.start_year, person.path, subject_id=person.id)
    return out.body("ok", complete=True, answer=answer)


def _persons_with_work(out: _Answer, index: GraphIndex, a: Analysis) -> dict[str, Any]:
    conn = out.bundle.graph_connection()
    types = a.work_types or index.work_types
    where = "w.type IN $types AND (p.published OR NOT $published_only)"
    params: dict[str, Any] = {"types": types, "published_only": out.request.published_only}
    if a.years:
        where += " AND w.year = $year"
        params["year"] = a.years[0]
    match = f"MATCH (p:Person)-[:HAS_WORK]->(w:Work) WHERE {where}"
    count = int(fetch_rows(conn, f"{match} RETURN count(DISTINCT p.id)", params)[0][0])
    rows = out.cut(fetch_rows(
        conn, f"{match} RETURN DISTINCT p.id, p.name, p.path ORDER BY p.name, p.id LIMIT $n",
        {**params, "n": out.request.limit + 1},
    ), "entity_limit")
    ids = [r[0] for r in rows]
    works = fetch_rows(
        conn,
        f"{match} AND p.id IN $ids RETURN p.id, p.name, w.id, w.type, w.year, w.title, w.path, w.chunk_ids "
        "ORDER BY p.name, p.id, w.year, w.type",
        {**params, "ids": ids},
    ) if ids else []
    for pid, name, wid, wtype, year, title, path, chunk_ids in works:
        out.fact(name, "has_work", {"type": wtype, "year": year, "title": title, "title_missing": title is None,
                                    "work_id": wid}, path, json.loads(chunk_ids or "[]"), subject_id=pid)
    answer = {"year": a.years[0] if a.years else None, "work_types": sorted(types), "count": count,
              "persons": [r[1] for r in rows], "person_ids": ids}
    return out.body("ok", complete=not out.truncation, answer=answer, aggregation={"count": count, "complete": True})


def _persons_started(out: _Answer, a: Analysis) -> dict[str, Any]:
    conn = out.bundle.graph_connection()
    where = "p.start_year = $year AND (p.published OR NOT $published_only)"
    params: dict[str, Any] = {"year": a.years[0], "published_only": out.request.published_only}
    count = int(fetch_rows(conn, f"MATCH (p:Person) WHERE {where} RETURN count(DISTINCT p.id)", params)[0][0])
    rows = out.cut(fetch_rows(conn, f"MATCH (p:Person) WHERE {where} RETURN p.id, p.name, p.path "
                                    "ORDER BY p.name, p.id LIMIT $n", {**params, "n": out.request.limit + 1}),
                   "entity_limit")
    for pid, name, path in rows:
        out.fact(name, "started_in", a.years[0], path, subject_id=pid)
    answer = {"year": a.years[0], "count": count, "persons": [r[1] for r in rows], "person_ids": [r[0] for r in rows]}
    return out.body("ok", complete=not out.truncation, answer=answer, aggregation={"count": count, "complete": True})


def _person_documents_cypher(person: _Person) -> str:
    """Documents of a person: their page (``DESCRIBES``) or the documents they wrote (``AUTHORED_BY``)."""
    if person.kind == "page":
        return "MATCH (p:Person {id: $id})<-[:DESCRIBES]-(d:Document) "
    return "MATCH (p:Person {id: $id})<-[:AUTHORED_BY]-(d:Document) "


def _common(out: _Answer, persons: list[_Person], what: str, combo: Combination | None = None) -> dict[str, Any]:
    """Tags (topics) of one person, or those every person has; with ``combo`` (persons joined by
    "or" / "but not"), those its operators select ("Aké tagy má X, ale nie Y?")."""
    conn = out.bundle.graph_connection()
    per_person = []
    for person in persons:
        where = "WHERE d.published OR NOT $published_only "
        if what == "tags":
            cypher = (_person_documents_cypher(person) + where
                      + "MATCH (d)-[:TAGGED]->(t:Tag) RETURN DISTINCT t.name, d.path")
        else:
            cypher = (_person_documents_cypher(person) + where
                      + "MATCH (d)-[:HAS_TOPIC]->(t:Topic) RETURN DISTINCT t.id, d.path, t.name")
        rows = fetch_rows(conn, cypher, {"id": person.id, "published_only": out.request.published_only})
        values: dict[str, list[Any]] = {}
        for row in rows:
            values.setdefault(row[0], row)
        per_person.append(values)
        if person.path:
            out.source(person.path)
        for key in sorted(values):
            out.fact(person.name, "tagged" if what == "tags" else "has_topic", key, values[key][1],
                     subject_id=person.id)
    if combo is not None:
        shared = sorted(combo.apply([set(v) for v in per_person]))
    else:
        shared = sorted(set.intersection(*(set(v) for v in per_person))) if per_person else []
    answer: dict[str, Any] = {"persons": [p.name for p in persons], "person_ids": [p.id for p in persons], what: shared}
    if len(persons) == 1:
        answer["person"] = persons[0].name
        answer["path"] = persons[0].path
    if what == "topics":
        answer["topic_names"] = [per_person[0][k][2] for k in shared]
    label = "Tag" if what == "tags" else "Topic"
    for key in shared:
        out.paths.append({
            "nodes": [{"label": "Person", "id": p.id} for p in persons[:1]] + [{"label": label, "id": key}]
            + [{"label": "Person", "id": p.id} for p in persons[1:]],
            "relationships": ["DESCRIBES" if persons[0].kind == "page" else "AUTHORED_BY",
                              "TAGGED" if what == "tags" else "HAS_TOPIC"] * len(persons),
        })
    return out.body("ok", complete=True, answer=answer, aggregation={"count": len(shared), "complete": True})


def _dated_fact(out: _Answer, path: str) -> None:
    """The ``dated`` fact of a document: its front matter date (the year a question restricted it to)."""
    rows = fetch_rows(out.bundle.graph_connection(), "MATCH (d:Document {path: $path}) RETURN d.date, d.year",
                      {"path": path})
    if not rows:
        return
    date, year = rows[0]
    day = re.match(r"\d{4}-\d{1,2}-\d{1,2}", str(date or "").strip())
    if day or year:
        out.fact(path, "dated", day.group(0) if day else str(year), path)


def _with_tag(out: _Answer, index: GraphIndex, a: Analysis) -> dict[str, Any]:
    """Persons (or documents) whose documents carry the tag or belong to the topic named."""
    conn = out.bundle.graph_connection()
    if a.tags:
        value, label = a.tags[0], "tag"
        doc_match = "MATCH (d:Document)-[:TAGGED]->(:Tag {name: $value}) "
    else:
        value, label = a.topics[0].ref, "topic"
        doc_match = "MATCH (d:Document)-[:HAS_TOPIC]->(:Topic {id: $value}) "
    params: dict[str, Any] = {"value": value, "published_only": out.request.published_only,
                              "n": out.request.limit + 1}
    doc_match += "WHERE (d.published OR NOT $published_only) "
    if a.intent == "documents_with_tag":
        if a.work_years:  # "Kolik článků se štítkem X vyšlo v roce 2021?": the year of the document's date
            doc_match += "AND d.year IN $years "
            params["years"] = a.work_years
        count = int(fetch_rows(conn, doc_match + "RETURN count(DISTINCT d.path)", params)[0][0])
        rows = out.cut(fetch_rows(conn, doc_match + "RETURN DISTINCT d.path ORDER BY d.path LIMIT $n", params),
                       "result_limit")
        for (path,) in rows:
            out.fact(path, "tagged" if label == "tag" else "has_topic", value, path)
            if a.work_years:
                _dated_fact(out, path)
        answer = {label: value, "count": count, "documents": [r[0] for r in rows], "years": a.work_years or None}
        return out.body("ok", complete=not out.truncation, answer=answer,
                        aggregation={"count": count, "complete": True})
    rel = "DESCRIBES" if index.person_kind == "page" else "AUTHORED_BY"
    edge = "(d)-[:DESCRIBES]->(p:Person)" if rel == "DESCRIBES" else "(d)-[:AUTHORED_BY]->(p:Person)"
    match = doc_match + f"MATCH {edge} "
    count = int(fetch_rows(conn, match + "RETURN count(DISTINCT p.id)", params)[0][0])
    rows = out.cut(fetch_rows(conn, match + "RETURN DISTINCT p.id, p.name, d.path ORDER BY p.name, p.id, d.path",
                              params), "entity_limit")
    persons: dict[str, str] = {}
    for pid, name, path in rows:
        persons.setdefault(pid, name)
        out.fact(name, "tagged" if label == "tag" else "has_topic", value, path, subject_id=pid)
    chosen = list(persons.items())[: out.request.limit]
    if len(persons) > out.request.limit and "entity_limit" not in out.truncation:
        out.truncation.append("entity_limit")
    answer = {label: value, "count": count, "persons": [n for _, n in chosen], "person_ids": [i for i, _ in chosen]}
    return out.body("ok", complete=not out.truncation, answer=answer, aggregation={"count": count, "complete": True})


def _documents_of_author(out: _Answer, index: GraphIndex, persons: list[_Person],
                         authors: list[NameMatch], tags: list[str] | None = None,
                         years: list[int] | None = None, combo: Combination | None = None) -> dict[str, Any]:
    """Documents of persons (``AUTHORED_BY``) or document authors; with ``tags``, only those tagged
    with one of them (with ``combo``, those its operators select: every tag, any, the first but not
    the second), with ``years`` only those dated in one of them (each document's matching tags and
    year are facts too)."""
    conn = out.bundle.graph_connection()
    items = []
    targets: list[tuple[str, str, str]] = [(p.name, p.id, "MATCH (d:Document)-[:AUTHORED_BY]->(:Person {id: $id}) ")
                                           for p in persons]
    for match in authors:
        if len(match.entries) > 1:
            return out.body("ambiguous", "ambiguous_person", candidates=[{"person": e.name} for e in match.entries],
                            message="Several document authors match the name.")
        name = match.entries[0].name
        targets.append((name, name, "MATCH (d:Document)-[:HAS_DOCUMENT_AUTHOR]->(:DocumentAuthor {name: $id}) "))
    fact_tags = [combo.values[k] for k in combo.positive()] if combo is not None else tags
    for name, ident, match_doc in targets:
        if tags:
            match_doc += "MATCH (d)-[:TAGGED]->(t:Tag) WHERE t.name IN $tags AND (d.published OR NOT $published_only) "
        where = match_doc + ("" if tags else "WHERE (d.published OR NOT $published_only) ")
        if years:
            where += "AND d.year IN $years "
        params = {"id": ident, "published_only": out.request.published_only, "n": out.request.limit + 1,
                  **({"tags": tags} if tags else {}), **({"years": years} if years else {})}
        if combo is not None:  # the documents of every tag, then the set operators over them
            pairs = fetch_rows(conn, where + "RETURN DISTINCT d.path, d.title, t.name", params)
            chosen = combo.apply([{p for p, _, t in pairs if t == tag} for tag in combo.values])
            found = sorted({(p, title) for p, title, _ in pairs if p in chosen})
            count = len(found)
            rows = out.cut([list(r) for r in found], "result_limit")
        else:
            count = int(fetch_rows(conn, where + "RETURN count(DISTINCT d.path)", params)[0][0])
            rows = out.cut(fetch_rows(conn, where + "RETURN DISTINCT d.path, d.title ORDER BY d.path LIMIT $n",
                                      params), "result_limit")
        for path, _title in rows:
            out.fact(name, "authored", path, path, subject_id=ident)
            for tag in (r[0] for r in fetch_rows(conn, "MATCH (d:Document {path: $path})-[:TAGGED]->(t:Tag) "
                                                       "WHERE t.name IN $tags RETURN t.name ORDER BY t.name",
                                                 {"path": path, "tags": fact_tags})) if fact_tags else ():
                out.fact(path, "tagged", tag, path)
            if years:
                _dated_fact(out, path)
        items.append({"author": name, "person": name, "author_id": ident, "count": count, "tags": tags or None,
                      "operators": list(combo.ops) if combo is not None else None,
                      "years": years or None,
                      "documents": [r[0] for r in rows], "titles": [r[1] for r in rows]})
    total = sum(item["count"] for item in items)
    answer: Any = items[0] if len(items) == 1 else {"authors": items}
    if total == 0:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        message="The graph has no document written by that person.")
    return out.body("ok", complete=not out.truncation, answer=answer, aggregation={"count": total, "complete": True})


def _authors_of_document(out: _Answer, a: Analysis) -> dict[str, Any]:
    page = a.pages[0]
    conn = out.bundle.graph_connection()
    rows = fetch_rows(conn, "MATCH (d:Document {path: $path})-[:AUTHORED_BY]->(p:Person) RETURN p.id, p.name "
                            "ORDER BY p.name", {"path": page.path})
    rows += fetch_rows(conn, "MATCH (d:Document {path: $path})-[:HAS_DOCUMENT_AUTHOR]->(a:DocumentAuthor) "
                             "RETURN a.name, a.name ORDER BY a.name", {"path": page.path})
    for ident, name in rows:
        out.fact(page.path, "authored_by", name, page.path, object_id=ident)
    out.source(page.path)
    answer = {"document": page.path, "title": page.label, "authors": [r[1] for r in rows],
              "author_ids": [r[0] for r in rows]}
    if not rows:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        message="The page names no author.")
    return out.body("ok", complete=True, answer=answer, aggregation={"count": len(rows), "complete": True})


def _tags_of_document(out: _Answer, a: Analysis) -> dict[str, Any]:
    """Tags (or topics) of the page named by its title."""
    page = a.pages[0]
    tags = a.intent == "tags_of_document"
    cypher = ("MATCH (d:Document {path: $path})-[:TAGGED]->(t:Tag) RETURN DISTINCT t.name ORDER BY t.name" if tags
              else "MATCH (d:Document {path: $path})-[:HAS_TOPIC]->(t:Topic) RETURN DISTINCT t.id ORDER BY t.id")
    values = [r[0] for r in fetch_rows(out.bundle.graph_connection(), cypher, {"path": page.path})]
    out.source(page.path)
    for value in values:
        out.fact(page.path, "tagged" if tags else "has_topic", value, page.path)
    answer = {"document": page.path, "title": page.label, "tags" if tags else "topics": values}
    if not values:
        return out.body("no_answer", "no_matching_sources", complete=True, answer=answer,
                        message="The page has no tags." if tags else "The page has no topics.")
    return out.body("ok", complete=True, answer=answer)


def _direction(a: Analysis, index: GraphIndex, span: tuple[int, int]) -> str | None:
    """``incoming`` / ``outgoing`` from the words around the page's name (see graphwords.yaml)."""
    vocab, tokens = index.vocabulary, a.tokens
    every = set(range(len(tokens)))
    if vocab.find(tokens, vocab.links["incoming_words"], every):
        return "incoming"
    # 2. a preposition right before the title, fillers skipped ("odkazy na stránku X")
    link_positions = sorted({p for s, e, _ in a.concepts.get("link", []) for p in range(s, e)})
    pos = span[0] - 1
    while pos >= 0:
        for name in ("outgoing", "incoming"):
            for entry in sorted(vocab.links[name], key=lambda e: -len(e.words)):
                start = pos - len(entry.words) + 1
                if start >= 0 and vocab.match_at(tokens, start, entry, every):
                    return name
        if any(vocab.match_at(tokens, pos, e, every) for e in vocab.links["fillers"]):
            pos -= 1
            continue
        break
    link_right_before = pos >= 0 and pos in link_positions
    if vocab.find(tokens, vocab.links["outgoing_words"], every):
        return "outgoing"
    after = [p for p in link_positions if p >= span[1]]
    if after:  # 3. the page is the subject: "X odkazuje na ...", "What does X link to?"
        following = after[-1] + 1
        passive = following < len(tokens) and any(
            vocab.match_at(tokens, following, e, every) for e in vocab.links["outgoing"])
        return "incoming" if passive else "outgoing"
    if link_right_before:  # 4. "Na ktoré stránky odkazuje X", "pages citing X"
        return vocab.verb_before_title.get(a.language or vocab.languages[0])
    return None


def _asks_for_persons(a: Analysis) -> bool:
    """Whether the first noun of the question that says what is asked for is a word for persons
    ("Ktorí študenti ...") rather than for pages or topics ("Which topic pages does X's student page
    link to?"); words of the page's title do not count."""
    span = range(*a.page_span) if a.page_span else range(0)
    first: tuple[int, str] | None = None
    for concept in ("person", "document", "topic"):
        for s, _, _ in a.concepts.get(concept, []):
            if s not in span and (first is None or s < first[0]):
                first = (s, concept)
    return first is not None and first[1] == "person"


def _links(out: _Answer, index: GraphIndex, a: Analysis, persons: list[_Person]) -> dict[str, Any]:
    if a.pages:
        page = a.pages[0]
        path, title, span = page.path, page.label, a.page_span
    elif len(persons) == 1 and persons[0].path:
        path, title = persons[0].path, persons[0].name
        match = a.persons[0]
        span = (min(match.positions), max(match.positions) + 1)
    else:
        return out.unsupported("A link question needs exactly one page (its title, or a person's page).")
    assert path is not None and span is not None
    known = index.by_published[out.request.published_only]
    if path not in known.pages:
        return out.body("no_answer", "unknown_page", message="No page of the graph matches the page in the question.")
    direction = _direction(a, index, span)
    if direction is None:
        return out.unsupported("The direction of the link question (to or from the page) was not recognised.")
    incoming = direction == "incoming"
    cypher = (
        "MATCH (a:Document)-[:LINKS_TO]->(b:Document {path: $path}) WHERE a.published OR NOT $published_only "
        "RETURN DISTINCT a.path, a.title ORDER BY a.path LIMIT $n"
        if incoming else
        "MATCH (b:Document {path: $path})-[:LINKS_TO]->(a:Document) WHERE a.published OR NOT $published_only "
        "RETURN DISTINCT a.path, a.title ORDER BY a.path LIMIT $n"
    )
    persons_only = _asks_for_persons(a)  # "Ktorí študenti sú uvedení na stránke X?": the pages of persons only
    # filtered to persons before the limit cuts the rows (else a cut list would look complete)
    limit = 2 ** 31 - 1 if persons_only else out.request.limit + 1
    params = {"path": path, "published_only": out.request.published_only, "n": limit}
    rows = fetch_rows(out.bundle.graph_connection(), cypher, params)
    if persons_only:
        person_pages = {p.path for p in index.persons.values() if p.kind == "page" and p.path}
        rows = [r for r in rows if r[0] in person_pages]
    rows = out.cut(rows, "result_limit")
    out.source(path)
    for other, _ in rows:
        src, dst = (other, path) if incoming else (path, other)
        out.fact(src, "links_to", dst, src)
    a.intent = "links_to" if incoming else "links_from"
    answer = {"page": path, "document": path, "title": title, "direction": direction,
              "documents": [r[0] for r in rows], "titles": [r[1] for r in rows]}
    if a.has("count") and not out.truncation:  # "Koľko študentov je uvedených na stránke X?": an exact count
        answer["count"] = len(rows)
    return out.body("ok", complete=not out.truncation, answer=answer,
                    aggregation={"count": len(rows), "complete": not out.truncation})


