"""The declarative graph mapping (YAML): how front matter and page shapes become typed entities.

The mapping is part of a bundle's build configuration (``BuildConfig.graph_mapping`` holds its
canonical form, so it is covered by the config fingerprint), and the query side reads it back
from the manifest to know, for example, which words of a question name a work type.  It lives in
``artifacts/`` because both the indexer (extraction) and the query side (recognition) use it.

Selection at build time (``gitrag build --graph-schema``): a preset name (:data:`PRESETS`), or
the path of a YAML file; without the option, the file ``graph-schema.yaml`` at the root of the
indexed commit's tree when it exists, else the ``generic`` preset.  There is no silent
auto-detection of a repository's shape.

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
        bp: {label: Bakalárska práca, heading: "^Bakalárska práca", words: [bakalar]}
    topics:
      pages: ["pages/topics/*/README.md"]      # one Topic per page; id = the page's folder name
      from_tags: true            # a tag equal to a topic id puts the document in that topic
      from_links: true           # a link to a topic page puts the document in that topic

``words`` are question stems for a work type, compared with diacritics-folded, lowercased
question tokens by prefix (``bakalar`` matches ``bakalársku``, ``bakalárka``).
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


class WorkType(_Strict):
    """One work type: display ``label``, section ``heading`` regex and question ``words`` (stems)."""

    label: str
    heading: str
    words: list[str] = Field(default_factory=list)

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
    pages: list[str] = Field(default_factory=list)
    from_tags: bool = True
    from_links: bool = True


class GraphMapping(_Strict):
    """A validated mapping; :meth:`canonical` is what the build config records."""

    name: str
    version: int = MAPPING_FORMAT_VERSION
    authors: Literal["person", "document_author"] = "person"
    aliases: list[str] = Field(default_factory=list)
    person_pages: PersonPages | None = None
    works: Works | None = None
    topics: Topics | None = None

    @model_validator(mode="after")
    def _works_need_pages(self) -> GraphMapping:
        if self.works is not None and self.person_pages is None:
            raise ValueError("works need person_pages (a work belongs to the person of a page)")
        if self.version != MAPPING_FORMAT_VERSION:
            raise ValueError(f"mapping version {self.version} is not supported (expected {MAPPING_FORMAT_VERSION})")
        return self

    def canonical(self) -> dict[str, Any]:
        """Return the mapping as plain JSON-safe data (defaults filled in)."""
        return self.model_dump(mode="json")

    def digest(self) -> str:
        """Return sha256 (hex) of the canonical JSON."""
        payload = json.dumps(self.canonical(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


_THESIS_WIKI = r"""
name: thesis-wiki
version: 1
authors: document_author
person_pages:
  paths: ["pages/students/*/*/README.md"]
  require_front_matter_title: true
  start_year_category: "^st(?P<year>[0-9]{4})$"
works:
  category: "^(?P<type>bp|dp|dr|vp|tp)(?P<year>[0-9]{4})$"
  section_level: 2
  title_line: "^\\s*\\**\\s*Názov(?:\\s+práce)?\\s*\\**\\s*:\\s*\\**\\s*(?P<title>.*?)\\s*\\**\\s*$"
  types:
    bp: {label: Bakalárska práca, heading: "^Bakalárska\\s+práca", words: [bakalar]}
    dp: {label: Diplomová práca, heading: "^Diplomová\\s+práca", words: [diplom]}
    dr: {label: Dizertačná práca, heading: "^Dizertačná\\s+práca", words: [dizertac, disertac, doktorand]}
    vp: {label: Výskumný projekt, heading: "^Výskumný\\s+projekt", words: [vyskumn]}
    tp: {label: Tímový projekt, heading: "^Tímový\\s+projekt", words: [timov]}
topics:
  pages: ["pages/topics/*/README.md"]
  from_tags: true
  from_links: true
"""

PRESETS: dict[str, str] = {
    "generic": "name: generic\nversion: 1\nauthors: person\n",
    "obsidian": "name: obsidian\nversion: 1\nauthors: person\naliases: [aliases, alias]\n",
    "thesis-wiki": _THESIS_WIKI,
}
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
