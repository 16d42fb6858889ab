"""The declarative graph mapping (YAML): how front matter and page shapes become typed entities.

The mapping is part of a bundle's build configuration (``BuildConfig.graph_mapping`` holds its
canonical form, so it is covered by the config fingerprint), and the query side reads it back
from the manifest to know, for example, which words of a question name a work type.  It lives in
``artifacts/`` because both the indexer (extraction) and the query side (recognition) use it.

Selection at build time (``gitrag build --graph-schema``): a preset name (:data:`PRESETS`), or
the path of a YAML file; without the option, the file ``graph-schema.yaml`` at the root of the
indexed commit's tree when it exists, else the preset that :func:`detect_mapping` chooses from
the corpus itself (``thesis-wiki`` when pages carry Grav work categories such as ``dp2021``,
``obsidian`` when pages use ``[[wikilinks]]`` or ``aliases``, else ``generic``, completed with
an authors file and site permalinks when the corpus has them).  The choice and its reason are
recorded in the manifest (``graph_mapping_choice``) and printed by ``gitrag build``.

YAML format (every key optional except ``name``; regular expressions use Python syntax and are
matched against NFC text)::

    name: thesis-wiki            # free text, recorded in the manifest
    version: 1                   # of this mapping format
    authors: document_author     # front matter author(s) -> Person (AUTHORED_BY, default
                                 #   "person") or DocumentAuthor (HAS_DOCUMENT_AUTHOR)
    aliases: [aliases]           # front matter fields whose values are Alias nodes of the page
    person_pages:                # a document at one of these paths describes one Person
      paths: ["pages/students/*/*/README.md"]   # glob: * and ? stay inside one folder, ** crosses
      require_front_matter_title: true          # the person's name is the front matter title
      start_year_category: "^st(?P<year>[0-9]{4})$"
    works:                       # Work nodes of a person page, one per matching category
      category: "^(?P<type>bp|dp)(?P<year>[0-9]{4})$"
      section_level: 2           # headings of this level describe works
      title_line: "^Názov:\\s*(?P<title>.+)$"   # first matching line of the section: the title
      types:
        bp: {label: Bakalárska práca, heading: "^Bakalárska práca",
             words: {sk: [bakalár*], cs: [bakalář*], en: [bachelor*]}}
    topics:
      pages: ["pages/topics/*/README.md"]      # one Topic per page; id = the page's folder name
      from_tags: true            # a tag equal to a topic id puts the document in that topic
      from_links: true           # a link to a topic page puts the document in that topic
      link_lines: "^Téma:"       # only links on lines matching this regex count (default: every line)
    author_names:                # front matter authors are ids (slugs) of this data file
      file: content/authors.yaml # YAML or JSON: a list of records, or a mapping id -> record
      id_field: id
      name_field: name
    permalinks:                  # URL links ("/2019/12/hackday", "https://blog.x/2019/12/hackday")
      field: slug                #   resolve to the page whose front matter `slug` is the URL's
      hosts: [blog.example.org]  #   last path segment; absolute URLs only on these hosts
    questions:                   # extra question words, same shape as artifacts/graphwords.yaml
      concepts: {tag: {sk: [nálepka]}, own: {en: [own, owner]}}
    relations:                   # front matter fields -> FieldValue nodes (HAS_FIELD), see Relation
      owner: {fields: [owner, owners]}          # default fields: [the relation's name]
    intents:                     # intents as data, see Intent; tried in file order before the built-in ones
      owner_of_page:
        words: [own]             # concepts the question must have
        slots: {page: page}      # page: a page named by its title; value:<relation>: a value of it
        cypher: >-
          MATCH (d:Document {path: $page})-[:HAS_FIELD]->(v:FieldValue {relation: 'owner'})
          RETURN d.path, d.path, v.name
        predicate: owner         # of the facts, one per row (document path, subject, object)
        phrasing: {en: "{subject} is owned by {object}."}

``words`` of a work type are question words per language, matched like the question
vocabulary: a lemma, or a prefix ending in ``*``, compared with
diacritics-folded, lowercased question words and their lemmas (``bakalár*`` matches
``bakalársku``, ``bakalárka``).  A word listed under several types names all of them.  A plain
list (the first format, still read) applies to every language and every entry is a prefix.  The
vocabulary of question words shared by every mapping is :data:`QUESTION_WORDS_FILE`
(see :func:`question_words`).

The built-in mappings are the YAML files of :data:`PRESETS_DIR`; ``generic`` declares the ``owner``,
``team`` and ``maintainer`` relations and the intents that ask about them, a model for other fields.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ArtifactError

REPO_MAPPING_FILE = "graph-schema.yaml"
"""Mapping file looked up at the root of the indexed commit's tree when no option is given."""

MAPPING_FORMAT_VERSION = 1


class GraphMappingError(ArtifactError):
    """A mapping file or preset name is unknown, not YAML, or does not validate."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_regex(value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
    return value


Words = list[str] | dict[str, list[str]]
"""Question words: one list for every language, or lists per language code (``sk``, ``cs``, ``en``)."""


def words_of(words: Words) -> list[str]:
    """Return every word of ``words`` (all languages), in order, without duplicates."""
    items = words if isinstance(words, list) else [w for ws in words.values() for w in ws]
    return list(dict.fromkeys(items))


class WorkType(_Strict):
    """One work type: display ``label``, section ``heading`` regex and question ``words``."""

    label: str
    heading: str
    words: Words = Field(default_factory=list)

    _heading = field_validator("heading")(_check_regex)


class PersonPages(_Strict):
    paths: list[str]
    require_front_matter_title: bool = True
    start_year_category: str | None = None

    _start = field_validator("start_year_category")(_check_regex)


class Works(_Strict):
    category: str
    section_level: int = Field(2, ge=1, le=6)
    title_line: str | None = None
    types: dict[str, WorkType]

    _re = field_validator("category", "title_line")(_check_regex)

    @model_validator(mode="after")
    def _groups(self) -> Works:
        groups = re.compile(self.category).groupindex
        if "type" not in groups or "year" not in groups:
            raise ValueError("works.category needs the named groups 'type' and 'year'")
        if self.title_line is not None and "title" not in re.compile(self.title_line).groupindex:
            raise ValueError("works.title_line needs the named group 'title'")
        return self


class Topics(_Strict):
    """Topic pages and the rules that put a document in a topic.

    ``link_lines``: when set, only links on lines matching this regex count for ``from_links``
    (a thesis wiki's ``Téma: [..](../topics/asr/README.md)`` line, not its "Pozri aj [[x]]" see-also line).
    """

    pages: list[str] = Field(default_factory=list)
    from_tags: bool = True
    from_links: bool = True
    link_lines: str | None = None

    _lines = field_validator("link_lines")(_check_regex)


class AuthorNames(_Strict):
    """A data file (YAML or JSON) naming the authors whose ids the front matter ``author`` holds."""

    file: str
    id_field: str = "id"
    name_field: str = "name"


class Permalinks(_Strict):
    """Resolve URL links to pages by the front matter ``field`` (the URL's last path segment)."""

    field: str = "slug"
    hosts: list[str] = Field(default_factory=list)


class Relation(_Strict):
    """A front matter field as a relation: every value of one of ``fields`` (a string, a number or a
    list of them) becomes a ``FieldValue`` node (``relation``: the relation's name) that its document
    points at with ``HAS_FIELD``.  ``fields`` defaults to the relation's own name."""

    fields: list[str] = Field(default_factory=list)


_SLOT_KINDS = re.compile(r"^(?:page|value:(?P<relation>[A-Za-z_][A-Za-z0-9_]*))$")


class Intent(_Strict):
    """One intent declared as data: the question words that ask it, the slots the question must fill,
    the Cypher template that answers it and how its facts are phrased.

    ``words``: concepts of the question vocabulary (``artifacts/graphwords.yaml`` and the mapping's
    ``questions.concepts``) that the question must all contain; ``allow``: other concepts it may
    contain.  ``slots``: slot name -> ``page`` (a page named by its title; the parameter is its path)
    or ``value:<relation>`` (a value of that relation named in the question; the parameter is the value).
    ``cypher``: a read-only template with the parameters ``$<slot>`` and ``$published_only``, returning
    rows ``(document path, subject, object)``: each row is one fact ``subject -[predicate]-> object``
    read from that document.  ``phrasing``: per language, a line with ``{subject}`` and ``{object}``.
    """

    words: list[str]
    allow: list[str] = Field(default_factory=list)
    slots: dict[str, str]
    cypher: str
    predicate: str
    phrasing: dict[str, str] = Field(default_factory=dict)

    @field_validator("slots")
    @classmethod
    def _slot_kinds(cls, value: dict[str, str]) -> dict[str, str]:
        for name, kind in value.items():
            if not _SLOT_KINDS.match(kind):
                raise ValueError(f"slot {name!r}: kind must be 'page' or 'value:<relation>', not {kind!r}")
        return value

    @model_validator(mode="after")
    def _parameters(self) -> Intent:
        if not self.words:
            raise ValueError("an intent needs at least one concept in 'words'")
        for name in self.slots:
            if not re.search(rf"\${re.escape(name)}\b", self.cypher):
                raise ValueError(f"the cypher template does not use the slot ${name}")
        return self

    def relations(self) -> list[str]:
        """The relations whose values the intent's slots take."""
        return [m.group("relation") for kind in self.slots.values()
                if (m := _SLOT_KINDS.match(kind)) and m.group("relation")]


class GraphMapping(_Strict):
    """A validated mapping; :meth:`canonical` is what the build config records."""

    name: str
    version: int = MAPPING_FORMAT_VERSION
    authors: Literal["person", "document_author"] = "person"
    aliases: list[str] = Field(default_factory=list)
    person_pages: PersonPages | None = None
    works: Works | None = None
    topics: Topics | None = None
    author_names: AuthorNames | None = None
    permalinks: Permalinks | None = None
    questions: dict[str, Any] | None = None
    relations: dict[str, Relation] = Field(default_factory=dict)
    intents: dict[str, Intent] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _works_need_pages(self) -> GraphMapping:
        if self.works is not None and self.person_pages is None:
            raise ValueError("works need person_pages (a work belongs to the person of a page)")
        if self.version != MAPPING_FORMAT_VERSION:
            raise ValueError(f"mapping version {self.version} is not supported (expected {MAPPING_FORMAT_VERSION})")
        for name, intent in self.intents.items():
            unknown = [r for r in intent.relations() if r not in self.relations]
            if unknown:
                raise ValueError(f"intent {name!r} takes values of {unknown[0]!r}, which 'relations' does not declare")
        return self

    def relation_fields(self) -> dict[str, list[str]]:
        """Relation name -> the front matter fields it reads (the relation's name when none is given)."""
        return {name: relation.fields or [name] for name, relation in self.relations.items()}

    def canonical(self) -> dict[str, Any]:
        """Return the mapping as plain JSON-safe data (defaults filled in).

        ``relations`` and ``intents`` are left out when empty, so that a mapping without them has the
        canonical form (and config fingerprint) it had before they existed."""
        data = self.model_dump(mode="json")
        for key in ("relations", "intents"):
            if not data[key]:
                del data[key]
        return data

    def digest(self) -> str:
        """Return sha256 (hex) of the canonical JSON."""
        payload = json.dumps(self.canonical(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


PRESETS_DIR = Path(__file__).with_name("graphpresets")
"""Folder of the built-in mappings, one YAML file per preset (``<name>.yaml``)."""

PRESETS: dict[str, str] = {path.stem: path.read_text(encoding="utf-8")
                           for path in sorted(PRESETS_DIR.glob("*.yaml"))}
"""Built-in mappings by name, as YAML text."""


def parse_mapping(text: str) -> GraphMapping:
    """Parse and validate mapping YAML.

    :raises GraphMappingError: not YAML, not a mapping, or fails validation (message names the field).
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise GraphMappingError(f"graph mapping is not valid YAML: {type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise GraphMappingError("graph mapping must be a YAML mapping")
    try:
        return GraphMapping.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise GraphMappingError(f"graph mapping invalid at {where}: {first['msg']}") from None


@cache
def preset(name: str) -> GraphMapping:
    """Return the built-in mapping ``name`` (``generic``, ``obsidian``, ``thesis-wiki``).

    :raises GraphMappingError: unknown name.
    """
    if name not in PRESETS:
        raise GraphMappingError(f"unknown graph schema preset {name!r}; presets: {', '.join(sorted(PRESETS))}")
    return parse_mapping(PRESETS[name])


def select_mapping(option: str | None, repo_file_text: str | None) -> GraphMapping:
    """Choose the mapping of a build.

    :param option: ``--graph-schema``: a preset name, or a path to a YAML file; ``None`` when not given.
    :param repo_file_text: the text of ``graph-schema.yaml`` at the root of the indexed commit, or ``None``.
    :returns: the preset or file given by ``option``; else the repository's file; else ``generic``.
    :raises GraphMappingError: unknown preset, unreadable file, invalid mapping.
    """
    if option:
        if option in PRESETS:
            return preset(option)
        path = Path(option)
        if not path.is_file():
            raise GraphMappingError(
                f"--graph-schema {option!r} is neither a preset ({', '.join(sorted(PRESETS))}) nor a file"
            )
        return parse_mapping(path.read_text(encoding="utf-8"))
    if repo_file_text is not None:
        return parse_mapping(repo_file_text)
    return preset("generic")


def mapping_from_config(data: dict[str, Any] | None) -> GraphMapping:
    """Return the mapping recorded in a manifest's config (``generic`` when absent, as in old bundles)."""
    return preset("generic") if not data else GraphMapping.model_validate(data)


@cache
def _glob_regex(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\*\*/?|\*|\?)", pattern)
    out = []
    for part in parts:
        if part in ("**", "**/"):
            out.append("(?:.*/)?" if part == "**/" else ".*")
        elif part == "*":
            out.append("[^/]*")
        elif part == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(part))
    return re.compile("".join(out))


def path_matches(path: str, patterns: list[str]) -> bool:
    """True when repository ``path`` matches one of the globs (``*``/``?`` within a folder, ``**`` across)."""
    return any(_glob_regex(p).fullmatch(path) for p in patterns)


# -- question vocabulary ---------------------------------------------------------------------------

QUESTION_WORDS_FILE = Path(__file__).with_name("graphwords.yaml")
"""The shared vocabulary of question words (concepts and link-direction words per language)."""


_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML has it: the same data, 0.04 s less for graphwords.yaml per process."""


@cache
def _base_words() -> dict[str, Any]:
    data = yaml.load(QUESTION_WORDS_FILE.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)
    if not isinstance(data, dict) or not isinstance(data.get("concepts"), dict):
        raise GraphMappingError("graphwords.yaml must hold a mapping with 'concepts'")
    return data


def _merge(base: Any, extra: Any) -> Any:
    if isinstance(base, dict) and isinstance(extra, dict):
        out = dict(base)
        for key, value in extra.items():
            out[key] = _merge(base[key], value) if key in base else value
        return out
    if isinstance(base, list) and isinstance(extra, list):
        return list(dict.fromkeys(base + extra))
    return extra


def answer_words() -> dict[str, Any]:
    """Return the ``answers`` section of :data:`QUESTION_WORDS_FILE`: the words graph answers are
    phrased in, per language (``{"default": lang, lang: {quotes, count, more, untitled, predicates}}``).

    :raises GraphMappingError: the shared vocabulary file is malformed.
    """
    answers = _base_words().get("answers")
    if not isinstance(answers, dict) or not isinstance(answers.get(answers.get("default")), dict):
        raise GraphMappingError("graphwords.yaml must hold 'answers' with the words of its default language")
    return answers


def question_words(mapping: GraphMapping) -> dict[str, Any]:
    """Return the question vocabulary of ``mapping``: :data:`QUESTION_WORDS_FILE` with the
    mapping's ``questions`` section merged in (mappings merge by key, lists are appended).

    :returns: ``{"languages": [...], "possessive_suffixes": [...], "concepts": {concept: {lang:
        [entry, ...]}}, "links": {...}}`` (see the YAML file for the meaning of each part).
    :raises GraphMappingError: the shared vocabulary file is malformed.
    """
    return _merge(_base_words(), mapping.questions or {})  # type: ignore[no-any-return]


def lemma_languages(mapping: GraphMapping) -> tuple[str, ...]:
    """Return the simplemma languages graph questions are lemmatised in: the vocabulary's
    ``lemmatize`` list, else its ``languages`` (:func:`question_words`)."""
    data = question_words(mapping)
    return tuple(str(x) for x in data.get("lemmatize") or data.get("languages") or ("sk", "cs", "en"))


NAME_LEXICON = "en"
"""The simplemma language whose dictionary tells ordinary words from person names in a question
(``query.graph.names.looks_like_person_name``: "Open Data Day" is no name)."""


def lexicon_languages(mapping: GraphMapping) -> tuple[str, ...]:
    """Every simplemma language graph questions over ``mapping`` look words up in (the lexicon
    files :func:`artifacts.lexicon.prepare_lexicons` writes at build time)."""
    return tuple(dict.fromkeys((*lemma_languages(mapping), NAME_LEXICON)))


# -- choosing a preset from the corpus ---------------------------------------------------------------

AUTHOR_FILE_NAMES = ("authors.yaml", "authors.yml", "authors.json")
"""Base names of data files that may name the authors of a corpus (:func:`detect_mapping`)."""

_ID_FIELDS = ("id", "slug", "key", "username", "handle", "login")
_NAME_FIELDS = ("name", "full_name", "fullname", "display_name", "title")


class MappingChoice(BaseModel):
    """Which mapping a build uses and why; recorded in the manifest as ``graph_mapping_choice``.

    ``source``: ``option`` (``--graph-schema``), ``repository_file`` (``graph-schema.yaml``) or
    ``detected`` (:func:`detect_mapping`); ``reason``: one human-readable sentence.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    source: Literal["option", "repository_file", "detected"]
    reason: str


def _author_records(text: str) -> list[dict[str, Any]]:
    try:
        data = yaml.safe_load(text)  # JSON is YAML
    except yaml.YAMLError:
        return []
    if isinstance(data, dict):
        if len(data) == 1 and isinstance(next(iter(data.values())), list):
            data = next(iter(data.values()))  # {authors: [...]}
        else:
            data = [{"id": k, **v} for k, v in data.items() if isinstance(v, dict)]
    return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []


def read_author_names(text: str, spec: AuthorNames) -> dict[str, str]:
    """Return id -> display name from the text of an authors file (YAML or JSON).

    Accepts a list of records, ``{key: [records]}``, or a mapping id -> record.  Records without a
    string id or name are ignored; ids are compared exactly (stripped), names are NFC-stripped.
    """
    return _names_of(_author_records(text), spec)


def _names_of(records: list[dict[str, Any]], spec: AuthorNames) -> dict[str, str]:
    import unicodedata

    names: dict[str, str] = {}
    for record in records:
        ident, name = record.get(spec.id_field), record.get(spec.name_field)
        if isinstance(ident, str | int) and isinstance(name, str) and name.strip() and str(ident).strip():
            names.setdefault(str(ident).strip(), unicodedata.normalize("NFC", name).strip())
    return names


def _detect_author_names(front_authors: set[str], data_files: dict[str, str]) -> tuple[AuthorNames, int] | None:
    best: tuple[AuthorNames, int] | None = None
    for path in sorted(data_files):
        records = _author_records(data_files[path])
        for id_field in _ID_FIELDS:
            for name_field in _NAME_FIELDS:
                spec = AuthorNames(file=path, id_field=id_field, name_field=name_field)
                hits = len(front_authors & set(_names_of(records, spec))) if records else 0
                if hits and (best is None or hits > best[1]):
                    best = (spec, hits)
    return best


def url_path_tail(url: str) -> tuple[str | None, str]:
    """Return ``(host or None, last non-empty path segment)`` of a link target (query and fragment dropped)."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    tail = unquote(segments[-1]) if segments else ""
    return (parts.hostname.lower() if parts.hostname else None), tail.removesuffix(".html").removesuffix(".md")


def note_aliases(front_matter: dict[str, Any]) -> list[str]:
    """Return the Obsidian note aliases of a page's front matter (``aliases``/``alias``), else ``[]``.

    An alias is another *name* of the note.  Values that are URL paths or URLs are left out: Hugo
    and Jekyll use the same key for redirects from old addresses (``/user/profile/``,
    ``old-page.html``, ``https://...``), which say nothing about wikilinks.  A value counts as a
    URL path when it starts with ``/``, contains ``://``, ends with ``/`` or ``.html``/``.htm``, or is
    one word of path segments (``docs/setup``, no space).
    """
    names: list[str] = []
    for key in ("aliases", "alias"):
        value = front_matter.get(key)
        values = value if isinstance(value, list) else [value] if value is not None else []
        for item in values:
            text = str(item).strip() if isinstance(item, str | int | float) else ""
            if not text:
                continue
            lower = text.lower()
            url_like = (lower.startswith("/") or "://" in lower or lower.endswith(("/", ".html", ".htm"))
                        or ("/" in text and not any(ch.isspace() for ch in text)))
            if not url_like:
                names.append(text)
    return names


def detect_mapping(
    docs: list[Any], data_files: dict[str, str], url_links: dict[str, list[str]]
) -> tuple[GraphMapping, MappingChoice]:
    """Choose a preset for a corpus built without ``--graph-schema`` and ``graph-schema.yaml``.

    :param docs: parsed documents (:class:`artifacts.records.Document`), all or an even sample.
    :param data_files: path -> text of the corpus's candidate authors files (:data:`AUTHOR_FILE_NAMES`).
    :param url_links: document path -> targets of its links that are URLs or site paths (not ``.md`` files).
    :returns: ``(mapping, choice)``; the mapping is a preset, for ``generic`` completed with ``author_names``
        (a data file whose ids are front matter authors) and ``permalinks`` (URL links ending in
        a page's ``slug``).  Rules, first match wins: ``thesis-wiki`` when two or more pages at its
        person page paths carry its work categories (``dp2021``); ``obsidian`` when at least 10% of
        the pages (and two or more) use ``[[wikilinks]]`` or note ``aliases`` (:func:`note_aliases`: not Hugo's
        redirect addresses); else ``generic``.
    """
    thesis = preset("thesis-wiki")
    assert thesis.works is not None and thesis.person_pages is not None
    category = re.compile(thesis.works.category)
    works = [d for d in docs if any(category.search(c.strip()) for c in d.categories)]
    on_pages = [d for d in works if path_matches(d.path, thesis.person_pages.paths)]
    if len(on_pages) >= 2:
        example = next(c for c in on_pages[0].categories if category.search(c.strip()))
        return thesis, MappingChoice(
            name="thesis-wiki", source="detected",
            reason=f"{len(on_pages)} of {len(docs)} sampled pages at {thesis.person_pages.paths[0]} carry work "
                   f"categories such as {example!r} (Grav taxonomy)")
    obsidian = [d for d in docs if any(link.kind == "wikilink" for link in d.links)
                or note_aliases(d.front_matter)]
    if len(obsidian) >= 2 and len(obsidian) >= 0.1 * len(docs):
        return preset("obsidian"), MappingChoice(
            name="obsidian", source="detected",
            reason=f"{len(obsidian)} of {len(docs)} sampled pages use [[wikilinks]] or aliases")
    extra: dict[str, Any] = {}
    notes: list[str] = []
    authors = {a.strip() for d in docs for a in d.authors if a.strip()}
    found = _detect_author_names(authors, data_files)
    if found is not None:
        extra["author_names"] = found[0].model_dump()
        notes.append(f"author ids resolved through {found[0].file} ({found[1]} of {len(authors)} authors)")
    slugs = {str(d.front_matter["slug"]).strip() for d in docs if isinstance(d.front_matter.get("slug"), str | int)}
    if len(slugs) >= 2:
        hosts: dict[str, list[int]] = {}  # host -> [links ending in a slug, links]
        resolved = 0
        for targets in url_links.values():
            for target in targets:
                host, tail = url_path_tail(target)
                hit = tail in slugs
                resolved += hit
                if host:
                    counts = hosts.setdefault(host, [0, 0])
                    counts[0] += hit
                    counts[1] += 1
        if resolved >= 2:
            # a host is the site itself when most of its links end in a page's slug
            site = sorted(h for h, (hit, n) in hosts.items() if hit >= 2 and hit >= 0.5 * n)
            extra["permalinks"] = {"field": "slug", "hosts": site}
            notes.append(f"{resolved} URL links in the repository end in a page's slug")
    mapping = preset("generic")
    if extra:
        mapping = GraphMapping.model_validate({**mapping.canonical(), **extra})
    reason = "no work categories, wikilinks or aliases found"
    if works and not on_pages:
        reason = f"{len(works)} pages carry work categories, but none at {thesis.person_pages.paths[0]}"
    return mapping, MappingChoice(name="generic", source="detected", reason="; ".join([reason, *notes]))
