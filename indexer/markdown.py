"""Parse Markdown files with YAML or TOML front matter into :class:`~artifacts.records.Document` records.

One CommonMark parse per document (markdown-it-py, GFM tables, an inline rule for Obsidian
``[[wikilinks]]``): :func:`outline` turns a body into its token-derived structure (line kinds,
headings with their paths, links, the text with HTML comments and Office XML removed), and the
title, the links, the chunker's sections and boundaries (:mod:`indexer.chunking`) all come from it.

Public functions: :func:`parse_markdown` turns one file's bytes into a ``Document`` (or raises
:class:`~indexer.errors.SkipFile`), :func:`outline` / :func:`headings` give a body's structure,
:func:`extract_links` its links, :func:`resolve_links` fills ``Link.resolved`` across all documents
of a commit.  All are pure and deterministic: equal input gives equal output.
"""

from __future__ import annotations

import base64
import bisect
import datetime as dt
import functools
import json
import math
import posixpath
import re
import tomllib
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import markdown_it.helpers
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import MarkedYAMLError

from artifacts.gittree import MARKDOWN_SUFFIXES, is_markdown_name, markdown_stem
from artifacts.records import SUMMARY_KEYS, Document, Link

from .errors import SkipFile

__all__ = ["SUMMARY_KEYS", "Heading", "Outline", "SkipFile", "extract_links", "headings", "outline", "parse_markdown",
           "resolve_links", "summary_fields", "visible_text"]

_YAML_DELIM = re.compile(r"---[ \t]*")
_TOML_DELIM = re.compile(r"\+\+\+[ \t]*")
_KEY_LINE = re.compile(r"""(?:[A-Za-z0-9_][\w.-]*|"[^"\n]*"|'[^'\n]*')[ \t]*:(?:[ \t]|$)""")
_TOML_KEY_LINE = re.compile(r"""(?:[A-Za-z0-9_][\w.-]*|"[^"\n]*"|'[^'\n]*')[ \t]*=|\[""")
_FIRST_LINE = re.compile(r"^[ \t]*([^\s#].*)$", re.M)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_EXTENSION = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,7})$")
_LFS_POINTER = re.compile(rb"version https://git-lfs\.github\.com/spec/v1\n(?:[a-z0-9.-]+ [^\n]*\n)*?"
                          rb"oid sha256:[0-9a-f]{64}\nsize ([0-9]+)\n?(?:[a-z0-9.-]+ [^\n]*\n?)*")
_LFS_MAX_BYTES = 1024  # git-lfs: a pointer file is < 1024 bytes
# Kept out of the indexed text (they stay in the raw body): HTML comments, Office XML tags pasted from
# Word (``<w:p>``, ``<o:p>``, ``<![if !supportLists]>``, ``<xml>``); code spans are matched first so
# that such text inside backticks is kept.
_HIDDEN = re.compile(
    r"(?P<code>(?<!`)(`+)(?!`)[\s\S]*?(?<!`)\2(?!`))"
    r"|<!--[\s\S]*?-->"
    r"|</?[A-Za-z][\w-]*:[A-Za-z][\w.-]*(?:\s[^<>]*)?/?>"
    r"|<!\[(?:if\b[^\]]*|endif)\]>"
    r"|</?xml\b[^<>]*>"
)
_WIKILINK_SPAN = re.compile(r"\[\[[^\[\]\n]*\]\]")
_DATE_KEYS = ("date", "created", "updated", "modified")
_YEAR = re.compile(r"[0-9]{4}(?![0-9])")  # a date's year: exactly four digits (99999-01-01 has none)
_FOLDER_NOTES = ("readme.md", "index.md", "index.mdx", "_index.md")
_FM_MIN_LIMIT = 64 * 1024  # bytes; the expanded front matter may always be this large
_FM_NODE_BYTES = 8  # counted per value besides its text, so that many tiny values also add up
_FM_MAX_DEPTH = 64  # levels of nested lists/mappings a front matter may have (pydantic stops at about 255)
_nfc = functools.partial(unicodedata.normalize, "NFC")


# --- the one Markdown parse -------------------------------------------------------------------


_WIKILINK_REST = re.compile(r"([^\[\]\n]*)\]\]")
"""A wikilink's inner text and closing ``]]``: scanned only up to the first bracket or newline."""


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    """Inline rule: ``[[target#heading|alias]]`` on one line becomes a ``wikilink`` token.

    Runs before CommonMark's link rule, as Obsidian reads wikilinks before Markdown links
    (``[[Wiki]](x.md)`` is a wikilink followed by text).  The inner text has no ``[``, ``]`` or
    newline, so the scan stops at the first of them: every character is scanned at most once per
    line, whatever the number of ``[[``.
    """
    src, pos = state.src, state.pos
    if not src.startswith("[[", pos):
        return False
    found = _WIKILINK_REST.match(src, pos + 2)
    if found is None or not found.group(1).strip():
        return False
    if not silent:
        state.push("wikilink", "", 0).content = found.group(1)
    state.pos = found.end()
    return True


def _link_label_end(state: StateInline, start: int, disableNested: bool = False) -> int:  # noqa: N803 - markdown-it's name
    """markdown-it's ``parseLinkLabel`` with every answer of one walk remembered (linear, not quadratic).

    The walk from the ``[`` at ``start`` steps through the same positions (markdown-it caches
    ``skipToken`` per position) as a walk from any plain ``[`` it passes, so one walk records the
    closing ``]`` of every opener it crosses (``-1``: still open at the end of the inline text).
    With ``disableNested`` a label that contains a nested link (a ``[`` consumed as a token) is
    refused, as upstream.  Returns the position of the closing ``]`` or ``-1``.
    """
    memo = state.env.setdefault("_gitrag_labels", {}).setdefault((id(state), state.src, state.posMax), ({}, []))
    ends, nested = memo
    if start not in ends:
        old = state.pos
        state.pos, stack = start + 1, [start]
        while state.pos < state.posMax and stack:
            marker, before = state.src[state.pos], state.pos
            if marker == "]":
                ends[stack.pop()] = before
                if not stack:
                    break
            state.md.inline.skipToken(state)
            if marker == "[":
                if before == state.pos - 1:
                    stack.append(before)
                else:
                    bisect.insort(nested, before)
        for opener in stack:
            ends[opener] = -1
        state.pos = old
    end: int = ends[start]
    if end >= 0 and disableNested:
        first = bisect.bisect_right(nested, start)
        if first < len(nested) and nested[first] < end:
            return -1
    return end


class _Helpers:
    """markdown-it's helpers with the link-label scan replaced by :func:`_link_label_end`."""

    parseLinkLabel = staticmethod(_link_label_end)  # noqa: N815 - markdown-it's name
    parseLinkDestination = staticmethod(markdown_it.helpers.parseLinkDestination)  # noqa: N815
    parseLinkTitle = staticmethod(markdown_it.helpers.parseLinkTitle)  # noqa: N815


_DEFUSE = {ord(c): 0xE000 + i for i, c in enumerate("*_<`&\\[]!")}
_RESTORE = {v: k for k, v in _DEFUSE.items()}
_DEFUSE_MIN = 1024  # markup characters an inline text may always have
_DEFUSE_SHARE = 16  # ... and beyond that at most one in this many of its characters
_DEFUSE_KEEP = 10_000  # links kept as links in the defused texts of one document
_LINK_SHAPED = re.compile(r"!?\[\[[^\[\]\n]+\]\]"  # wikilink or embed
                          r"|!?\[[^\[\]\n]{0,999}\](?:\([^()\s]*(?:[ \t]+\"[^\"\n]*\")?\)|\[[^\[\]\n]{0,999}\])?")


def _defuse_rule(state: StateCore) -> None:
    """Core rule before ``inline``: an inline text dense with markup characters (``*_<`&\\[]!``) has
    them replaced by private-use stand-ins, except in link-shaped spans, so its inline parse is cheap.

    markdown-it spends about 10 µs per markup character (a 2 MiB line of ``*a`` took 13 s, of ``[``
    far longer); over :data:`_DEFUSE_MIN` of them and one in :data:`_DEFUSE_SHARE` characters the
    text is no prose.  Links, wikilinks and reference links in it (their brackets balanced on one
    line; up to :data:`_DEFUSE_KEEP` per document) are still parsed; their texts, like heading
    texts, get the characters back (:func:`_restore`).  Lines (the indexed text) are taken from the
    body, never from the parser, so they keep every character.
    """
    kept = 0
    for token in state.tokens:
        if token.type != "inline" or len(token.content) < _DEFUSE_MIN:
            continue
        content = token.content
        markers = sum(content.count(chr(c)) for c in _DEFUSE)
        if markers <= _DEFUSE_MIN or markers * _DEFUSE_SHARE <= len(content):
            continue
        pieces, last = [], 0
        for link in _LINK_SHAPED.finditer(content):
            if kept >= _DEFUSE_KEEP:
                break
            pieces += [content[last : link.start()].translate(_DEFUSE), link.group(0)]
            last, kept = link.end(), kept + 1
        pieces.append(content[last:].translate(_DEFUSE))
        token.content = "".join(pieces)


def _restore(text: str) -> str:
    """Undo :func:`_defuse_rule`'s stand-ins in a text taken from the parser."""
    return text.translate(_RESTORE) if any("\ue000" <= c <= "\ue008" for c in text) else text




def _restore_href(href: str) -> str:
    """Undo :func:`_defuse_rule`'s stand-ins in a link destination (markdown-it percent-encodes them)."""
    if "%EE%80%8" not in href:
        return href
    for stand_in, original in _RESTORE_HREF.items():
        href = href.replace(stand_in, original)
    return href


_MD = MarkdownIt("commonmark").enable("table")
_MD.helpers = _Helpers  # type: ignore[assignment]  # the public ``MarkdownIt.helpers`` hook (md.helpers upstream)
_MD.inline.ruler.before("link", "wikilink", _wikilink_rule)
_MD.core.ruler.before("inline", "defuse", _defuse_rule)
_RESTORE_HREF = {quote(chr(stand_in)): _MD.normalizeLink(chr(c)) for c, stand_in in _DEFUSE.items()}


@dataclass(frozen=True)
class Heading:
    """A top-level heading (ATX ``## x`` or setext ``x\\n---``) of a body.

    ``ordinal`` 0-based among headings, ``level`` 1-6, ``text`` its inline source with comments
    and Office XML removed and whitespace collapsed, ``line`` its first and ``end`` one past its
    last 0-based line, ``path`` the texts of the enclosing non-empty headings, outermost first,
    this one last when non-empty (the same rule as a chunk's ``heading_path``).
    """

    ordinal: int
    level: int
    text: str
    line: int
    path: tuple[str, ...]
    end: int = 0


@dataclass(frozen=True)
class Outline:
    """What the one parse of a body gives (see :func:`outline`).

    ``lines``: the body's lines with HTML comments and Office XML removed (the line count is
    kept, so token line numbers stay valid); ``kinds``: one per line, ``blank``, ``text``,
    ``heading`` (a heading's first line), ``heading_cont`` (a setext underline or further
    heading line), ``fence_open``, ``code`` or ``fence_close``; ``unclosed``: ``(last line,
    opening marker)`` of each fenced block left open; ``headings``; ``links`` (``resolved`` unset);
    ``urls``: destinations of the body's Markdown links that are web URLs or site paths, in order,
    de-duplicated (links in code and HTML comments do not count, reference links resolve through their
    definitions): ``http(s)://`` URLs and ``/site/paths`` (not ``//host``), URL-decoded; ``.md`` targets
    (those are :func:`extract_links`' business), fragments only, ``mailto:`` and other schemes are left out.
    """

    lines: tuple[str, ...]
    kinds: tuple[str, ...]
    unclosed: tuple[tuple[int, str], ...]
    headings: tuple[Heading, ...]
    links: tuple[Link, ...]
    urls: tuple[str, ...] = ()


def strip_hidden(text: str) -> str:
    """Remove HTML comments and Office XML tags outside code spans, keeping every newline."""
    if "<" not in text:
        return text
    return _HIDDEN.sub(lambda m: m.group(0) if m.group("code") else "\n" * m.group(0).count("\n"), text)


@functools.lru_cache(maxsize=16)
def outline(body: str) -> Outline:
    """Parse ``body`` (Markdown after the front matter) once with CommonMark + GFM tables.

    Code (fenced and indented), HTML blocks, headings, tables and links come from the token
    stream, so a heading inside an HTML comment or a fence is no heading, and setext headings
    are headings.  Only top-level headings make sections (not those inside lists or quotes).
    HTML comments (block and inline) and Office XML are removed from ``lines`` and from heading
    texts; an HTML comment never closed runs to the end of its block.  Cached per body (the
    parser and the chunker of one build share one parse).
    """
    env: dict[str, Any] = {}
    # Obsidian reads wikilinks before tables: `| [[Page|alias]] |` is one cell holding a link, so
    # the parser sees the pipe escaped (line numbers unchanged; text is taken from ``body``).
    tokens = _MD.parse(_WIKILINK_SPAN.sub(_escape_pipes, body) if "[[" in body else body, env)
    raw = body.split("\n")
    kinds = ["text"] * len(raw)
    code = [False] * len(raw)
    unclosed: list[tuple[int, str]] = []
    found: list[tuple[int, int, Link]] = []
    heads: list[tuple[int, int, int, str]] = []  # (line, end, level, text)
    urls: list[str] = []
    for index, token in enumerate(tokens):
        if token.map is None:
            continue
        start, end = token.map
        if token.type == "fence":
            for i in range(start, end):
                code[i], kinds[i] = True, "code"
            kinds[start] = "fence_open"
            if end - start >= 2 and _closes_fence(raw[end - 1], token.markup):
                kinds[end - 1] = "fence_close"
            else:
                unclosed.append((end - 1, token.markup))
        elif token.type == "code_block":
            for i in range(start, end):
                code[i] = True  # indented code: kept as text, never cleaned or parsed further
        elif token.type == "html_block" and token.content.lstrip().startswith("<!--") and "-->" not in token.content:
            for i in range(start, end):
                raw[i] = ""  # an unclosed comment: the whole block is hidden
        elif token.type == "heading_open" and token.level == 0:
            source = _restore(tokens[index + 1].content)
            text = " ".join(strip_hidden(_WIKILINK_SPAN.sub(_unescape_pipes, source)).split())
            heads.append((start, end, int(token.tag[1]), text))
        elif token.type == "inline":
            found.extend((start, n, link) for n, link in enumerate(_inline_links(token.children or [])))
            urls.extend(_url_hrefs(token.children or []))
    for label, ref in env.get("references", {}).items():
        if not label.startswith("^") and (link := _markdown_link(ref.get("href", ""), None)) is not None:
            found.append((ref.get("map", [len(raw)])[0], 1 << 30, link))
    lines = _clean_lines(raw, code)
    for i, line in enumerate(lines):
        if kinds[i] == "text" and not line.strip():
            kinds[i] = "blank"
    path: list[tuple[int, str]] = []
    result: list[Heading] = []
    for start, end, level, text in heads:
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, text))
        kinds[start] = "heading"
        for i in range(start + 1, end):
            kinds[i] = "heading_cont"
        result.append(Heading(len(result), level, text, start, tuple(t for _, t in path if t), end))
    found.sort(key=lambda item: (item[0], item[1]))
    links = _dedupe_links(link for _, _, link in found)
    return Outline(tuple(lines), tuple(kinds), tuple(unclosed), tuple(result), tuple(links),
                   tuple(dict.fromkeys(urls)))


def _escape_pipes(match: re.Match[str]) -> str:
    return match.group(0).replace("\\|", "|").replace("|", "\\|")


def _unescape_pipes(match: re.Match[str]) -> str:
    return match.group(0).replace("\\|", "|")


def headings(body: str) -> list[Heading]:
    """Return the top-level headings of ``body`` in document order (see :class:`Heading`)."""
    return list(outline(body).headings)


def _closes_fence(line: str, markup: str) -> bool:
    """Whether ``line`` (container markers ``>`` allowed) closes a fence opened by ``markup``."""
    stripped = line.strip().lstrip("> \t")
    return bool(markup) and stripped.startswith(markup) and not stripped.strip(markup[0])


def _clean_lines(raw: list[str], code: list[bool]) -> list[str]:
    """Apply :func:`strip_hidden` to every run of non-code lines, keeping the line count."""
    out = list(raw)
    i = 0
    while i < len(raw):
        if code[i]:
            i += 1
            continue
        j = i
        while j < len(raw) and not code[j]:
            j += 1
        out[i:j] = strip_hidden("\n".join(raw[i:j])).split("\n")
        i = j
    return out


def _inline_links(children: list[Token]) -> Iterable[Link]:
    """Links of one inline token's children in order: wikilinks and ``.md`` Markdown links."""
    open_link: tuple[str, list[str]] | None = None
    for child in children:
        if child.type == "wikilink":
            if link := _wikilink(_restore(child.content)):
                yield link
        elif child.type == "link_open":
            open_link = (_restore_href(str(child.attrs.get("href", ""))), [])
        elif child.type == "link_close" and open_link is not None:
            if link := _markdown_link(open_link[0], "".join(open_link[1])):
                yield link
            open_link = None
        elif open_link is not None and child.type in ("text", "code_inline"):
            open_link[1].append(_restore(child.content))
        elif child.type == "text" and "ref" in child.content and "{{" in child.content:
            yield from _shortcode_links(_restore(child.content))
        elif open_link is not None and child.type in ("softbreak", "hardbreak"):
            open_link[1].append(" ")


def _dedupe_links(links: Iterable[Link]) -> list[Link]:
    return list({link.model_dump_json(): link for link in links}.values())


def extract_links(body: str) -> list[Link]:
    """Links of a Markdown body in document order, exact duplicates dropped, ``resolved=None``.

    * wikilinks ``[[Target]]``, ``[[Target|alias]]``, ``[[Target#Heading|alias]]`` and embeds
      ``![[Target]]`` (``kind="wikilink"``); targets with a file extension other than ``.md``
      (images, PDFs, canvases...) and same-note links ``[[#Heading]]`` are dropped;
    * inline ``[text](path.md#anchor "title")``, reference links and reference definitions
      ``[ref]: path.md`` (``kind="markdown"``, ``alias`` = link text); the path is URL-decoded and
      must end in ``.md``; URLs with a scheme (``http:``, ``mailto:``, ``obsidian:``...),
      ``//host`` and ``#anchor``-only links, images and footnote labels (``[^1]:``) are dropped.

    Links in code (fenced, indented, inline spans) and in HTML comments are ignored.
    """
    return [link.model_copy() for link in outline(body).links]


def lines_outside_code(body: str) -> list[str]:
    """The body's lines (see :attr:`Outline.lines`: comments and Office XML removed) with fenced code
    blanked, line count kept; from the one CommonMark parse (:func:`outline`)."""
    parsed = outline(body)
    code = ("fence_open", "code", "fence_close")
    return ["" if kind in code else line for line, kind in zip(parsed.lines, parsed.kinds, strict=True)]


def _url_hrefs(children: list[Token]) -> Iterable[str]:
    """Destinations of one inline token's links that are web URLs or site paths (see :attr:`Outline.urls`)."""
    for child in children:
        if child.type != "link_open":
            continue
        href = unquote(_restore_href(str(child.attrs.get("href", ""))).strip())
        bare = href.split("#", 1)[0].split("?", 1)[0]
        if not bare or is_markdown_name(bare):
            continue
        if (bare.startswith("/") and not bare.startswith("//")) or bare.lower().startswith(("http://", "https://")):
            yield href


def outline_record(parsed: Outline) -> dict[str, Any]:
    """Return the :attr:`Document.outline` record of ``parsed``: headings and URL destinations."""
    return {"headings": [[h.level, h.line, h.end, h.text] for h in parsed.headings], "urls": list(parsed.urls)}


def document_outline(doc: Document) -> tuple[list[Heading], list[str]]:
    """Return ``(top-level headings, URL destinations)`` of ``doc``: from its recorded
    :attr:`Document.outline` (no parse), else (bundles written before it) from :func:`outline`."""
    if doc.outline is None:
        parsed = outline(doc.body)
        return list(parsed.headings), list(parsed.urls)
    result: list[Heading] = []
    path: list[tuple[int, str]] = []
    for level, line, end, text in doc.outline["headings"]:
        while path and path[-1][0] >= level:  # the same path rule as outline()
            path.pop()
        path.append((level, text))
        result.append(Heading(len(result), level, text, line, tuple(t for _, t in path if t), end))
    return result, list(doc.outline["urls"])


# --- front matter and the document record --------------------------------------------------


class _Constructor(SafeConstructor):
    """ruamel's YAML 1.2 safe constructor; an impossible timestamp (``2021-02-30``) stays a string."""

    def construct_yaml_timestamp(self, node: Any, values: Any = None) -> Any:
        try:
            return super().construct_yaml_timestamp(node, values)
        except ValueError:
            return self.construct_scalar(node)


_Constructor.add_constructor("tag:yaml.org,2002:timestamp", _Constructor.construct_yaml_timestamp)


def _yaml() -> YAML:
    # pure=True: the C loader of ruamel.yaml implements YAML 1.1 (``no`` -> False); the pure one 1.2.
    loader = YAML(typ="safe", pure=True)
    loader.Constructor = _Constructor
    loader.allow_duplicate_keys = True  # a repeated key keeps its first value (PyYAML kept the last)
    return loader


def parse_markdown(path: str, data: bytes, *, blob_id: str, max_bytes: int) -> Document:
    """Parse one Markdown file into a :class:`Document` (``resolved`` of its links left ``None``).

    :param path: repository path with ``/`` separators; stored NFC-normalised.
    :param data: the file's raw bytes.
    :param blob_id: Git blob sha (hex) the bytes were read from.
    :param max_bytes: size limit in bytes; larger files are skipped, and so is a front matter
        whose value, expanded (YAML aliases repeated), is larger than this (or than 64 KiB when
        ``max_bytes`` is smaller).
    :returns: the document: body NFC with ``\\n`` line endings (BOM stripped), JSON-safe front
        matter (dates as ISO strings, integers beyond 64 bits as their decimal digits),
        normalised title/authors/tags/categories/dates, links.
    :raises SkipFile: ``too_large`` (``len(data) > max_bytes``), ``binary`` (contains a NUL
        byte), ``lfs_pointer`` (a Git LFS pointer instead of the file), ``not_utf8`` (not valid
        UTF-8), ``invalid_front_matter`` (see below), ``front_matter_too_large`` (expanded
        front matter over the limit).

    YAML front matter: the first line is ``---`` and a later line is ``---`` (trailing blanks
    allowed); the lines between are the block, read with YAML 1.2 semantics (ruamel.yaml, safe):
    ``no``/``off``/``on`` are strings, only ``true``/``false`` are booleans.  An empty (or
    comments-only) block is an empty mapping.  Otherwise:

    * it parses to a mapping: that is the front matter;
    * it parses to anything else (a string of prose, a list, a number): the ``---`` lines were
      thematic breaks, there is no front matter and the whole file is body;
    * it fails to parse and its first non-blank, non-comment line is a ``key:`` line (a single
      word or quoted key followed by ``:`` and a blank or end of line): ``invalid_front_matter``;
    * it fails to parse otherwise: prose between thematic breaks, no front matter.

    TOML front matter (Hugo): between ``+++`` lines, read with :mod:`tomllib`; a block that fails
    to parse is ``invalid_front_matter`` when its first line is a ``key =`` line or a table.
    With no closing delimiter there is no front matter.
    """
    path = _nfc(path)
    if len(data) > max_bytes:
        raise SkipFile("too_large", f"{len(data)} bytes > limit of {max_bytes} bytes")
    if b"\x00" in data:
        raise SkipFile("binary", f"NUL byte at offset {data.index(0)}")
    if len(data) < _LFS_MAX_BYTES and (lfs := _LFS_POINTER.fullmatch(data)):
        raise SkipFile("lfs_pointer", f"Git LFS pointer to a {int(lfs.group(1))}-byte file (run git lfs pull)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkipFile("not_utf8", f"invalid UTF-8 at byte {exc.start}") from None
    text = _nfc(text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n"))
    front_matter, body = _split_front_matter(text)
    if path.lower().endswith(".mdx"):
        body = _without_mdx_esm(body)
    try:
        size = _expanded_size(front_matter, {}, set())
    except RecursionError:
        raise SkipFile("invalid_front_matter", "front matter nested too deeply") from None
    if size > (limit := max(max_bytes, _FM_MIN_LIMIT)):
        raise SkipFile("front_matter_too_large",
                       f"front matter expands to about {size} bytes > limit of {limit} bytes")
    try:
        fm = _json_safe(front_matter)
    except RecursionError:
        raise SkipFile("invalid_front_matter", "front matter nested too deeply") from None

    parsed = outline(body)
    title, title_source = _title(fm, parsed, path)
    # Dates are already ISO strings (see _json_safe); a bare year (``date: 2021``) stringifies.
    dates = {k: v for k in _DATE_KEYS if (v := _scalar_text(fm.get(k))) is not None}
    date = dates.get("date") or next(iter(dates.values()), None)
    year = int(found.group(0)) if date and (found := _YEAR.match(date)) else None
    taxonomy = fm.get("taxonomy") if isinstance(fm.get("taxonomy"), dict) else {}
    return Document(
        path=path,
        blob_id=blob_id,
        size=len(data),
        title=title,
        title_source=title_source,
        authors=_names(fm, taxonomy, ("author", "authors"), split=False),
        tags=_names(fm, taxonomy, ("tags", "tag", "keywords"), split=True),
        categories=_names(fm, taxonomy, ("categories", "category"), split=True),
        published=not any(fm.get(k) is False for k in ("published", "publish")),
        date=date,
        year=year,
        dates=dates,
        front_matter=fm,
        links=[link.model_copy() for link in parsed.links],
        body=body,
        outline=outline_record(parsed),
    )


_MDX_ESM = re.compile(r"(?:import|export)[\s{*]")
_FENCE_LINE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")


def _without_mdx_esm(body: str) -> str:
    """An MDX body with its ESM blocks as empty lines (the line count kept): a block starts with a line
    that begins with ``import``/``export`` outside code and runs to the next blank line (MDX's rule);
    it is JavaScript (``import Tabs from '@theme/Tabs';``), not text."""
    lines = body.split("\n")
    fence: str | None = None
    in_esm = False
    for i, line in enumerate(lines):
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        if in_esm:
            if not line.strip():
                in_esm = False
            else:
                lines[i] = ""
            continue
        if (opened := _FENCE_LINE.match(line)) is not None:
            fence = opened.group(1)
        elif _MDX_ESM.match(line):
            in_esm = True
            lines[i] = ""
    return "\n".join(lines)


def _split_front_matter(text: str) -> tuple[dict[Any, Any], str]:
    """Return ``(raw front matter mapping, body)`` by the rule of :func:`parse_markdown`."""
    lines = text.split("\n")
    if lines and _TOML_DELIM.fullmatch(lines[0]):
        close = next((i for i in range(1, len(lines)) if _TOML_DELIM.fullmatch(lines[i])), None)
        if close is None:
            return {}, text
        block = "\n".join(lines[1:close])
        try:
            return tomllib.loads(block), "\n".join(lines[close + 1 :])
        except RecursionError:
            raise SkipFile("invalid_front_matter", "front matter nested too deeply") from None
        except tomllib.TOMLDecodeError as exc:
            first = _FIRST_LINE.search(block)
            if first and _TOML_KEY_LINE.match(first.group(1)):
                raise SkipFile("invalid_front_matter", _toml_problem(exc)) from None
            return {}, text
    if not lines or not _YAML_DELIM.fullmatch(lines[0]):
        return {}, text
    close = next((i for i in range(1, len(lines)) if _YAML_DELIM.fullmatch(lines[i])), None)
    if close is None:
        return {}, text
    block = "\n".join(lines[1:close])
    body = "\n".join(lines[close + 1 :])
    try:
        value = _yaml().load(block)
    except RecursionError:
        raise SkipFile("invalid_front_matter", "front matter nested too deeply") from None
    except Exception as exc:  # noqa: BLE001 - ruamel raises YAMLError, ValueError, TypeError...
        first = _FIRST_LINE.search(block)  # first non-blank, non-comment line
        if first and _KEY_LINE.match(first.group(1)):
            raise SkipFile("invalid_front_matter", _yaml_problem(exc)) from None
        return {}, text  # prose between thematic breaks
    if value is not None and not isinstance(value, dict):
        return {}, text  # a string or list: the --- lines were thematic breaks
    return value or {}, body


def _yaml_problem(exc: BaseException) -> str:
    """One line naming the YAML problem and its line in the file (block starts at line 2)."""
    if isinstance(exc, MarkedYAMLError) and exc.problem:
        where = f" (line {exc.problem_mark.line + 2})" if exc.problem_mark else ""
        return f"{exc.problem}{where}"[:200]
    return type(exc).__name__


def _toml_problem(exc: tomllib.TOMLDecodeError) -> str:
    """``invalid TOML`` and the problem's line in the file (block starts at line 2); tomllib's own
    message can quote a character of the document, so it is not repeated."""
    found = re.search(r"\(at line ([0-9]+)", str(exc))
    return f"invalid TOML (line {int(found.group(1)) + 1})" if found else "invalid TOML"


def _expanded_size(value: Any, memo: dict[int, tuple[int, int]], active: set[int], depth: int = 0) -> int:
    """Approximate size in bytes of ``value`` written out with every alias expanded.

    Walks the loaded value as the graph it is (an alias is a shared object), once per distinct
    object, so the cost is bounded by the size of the YAML text, not of the expansion.
    :raises SkipFile: ``invalid_front_matter`` for a recursive alias, or for lists and mappings
        nested deeper than :data:`_FM_MAX_DEPTH` levels (the record could not be written).
    """
    return _measure(value, memo, active, depth)[0]


def _measure(value: Any, memo: dict[int, tuple[int, int]], active: set[int], depth: int) -> tuple[int, int]:
    """``(expanded size, nesting height)`` of ``value`` at ``depth``; see :func:`_expanded_size`."""
    if isinstance(value, str | bytes):
        return len(value) + _FM_NODE_BYTES, 0
    if not isinstance(value, dict | list | tuple | set | frozenset):
        return _FM_NODE_BYTES + 24, 0
    key = id(value)
    if key in active:
        raise SkipFile("invalid_front_matter", "front matter contains a recursive alias")
    if key not in memo:
        if depth >= _FM_MAX_DEPTH:
            raise SkipFile("invalid_front_matter", f"front matter nested deeper than {_FM_MAX_DEPTH} levels")
        active.add(key)
        items = [x for kv in value.items() for x in kv] if isinstance(value, dict) else list(value)
        measured = [_measure(item, memo, active, depth + 1) for item in items]
        active.discard(key)
        memo[key] = (_FM_NODE_BYTES + sum(m[0] for m in measured), 1 + max((m[1] for m in measured), default=0))
    size, height = memo[key]
    if depth + height > _FM_MAX_DEPTH:  # a shared (aliased) value placed deeper than where it was first met
        raise SkipFile("invalid_front_matter", f"front matter nested deeper than {_FM_MAX_DEPTH} levels")
    return size, height


def _json_safe(value: Any) -> Any:
    """Convert a front matter value to JSON-safe data: dates to ISO, other non-JSON scalars to ``str``.

    Integers beyond 64 bits become their decimal digits as a string (JSON readers lose them).
    Called only after :func:`_expanded_size` has bounded the result and ruled out recursion.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else _big_int(value)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.date):  # datetime is a subclass of date
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {_key(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return [_json_safe(v) for v in sorted(value, key=repr)]
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return str(value)


def _big_int(value: int) -> str:
    try:
        return str(value)
    except ValueError:  # more digits than int -> str allows (sys.get_int_max_str_digits)
        return hex(value)


def _key(key: Any) -> str:
    """A mapping key as a string: ``null``/``true``/``false`` as in JSON, a date in ISO."""
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    return str(_json_safe(key))


def _scalar_text(value: Any) -> str | None:
    """A stripped non-empty string for a str/int/float, else None (bools and nulls too)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    return str(value).strip() or None


def summary_fields(front_matter: dict[str, Any]) -> list[tuple[str, str]]:
    """Return ``[(key, text)]`` of the front matter's summary fields (:data:`SUMMARY_KEYS`, in that order).

    Only a non-blank string value counts (a mapping such as Grav's ``summary: {enabled: true}``, a list,
    a number or a boolean is no prose); the key must be spelled in lower case.  ``text`` is the value
    with HTML comments and Office XML removed (:func:`strip_hidden`) and outer whitespace stripped,
    otherwise verbatim (so a quote of it is a substring of the value).  A value equal to an earlier
    key's (case and whitespace ignored) is left out.
    """
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for key in SUMMARY_KEYS:
        value = front_matter.get(key)
        if not isinstance(value, str):
            continue
        text = strip_hidden(value).strip()
        folded = " ".join(text.casefold().split())
        if folded and folded not in seen:
            seen.add(folded)
            found.append((key, text))
    return found


def visible_text(markdown: str) -> str:
    """Return the text a reader sees of ``markdown`` (one CommonMark parse, not cached).

    Inline text and code spans, link texts (not their destinations), image alt texts, wikilink
    aliases (else their targets), code blocks; raw HTML is dropped; HTML comments and Office XML
    are removed first (:func:`strip_hidden`).  Blocks end with a newline.
    """
    source = strip_hidden(markdown)
    out: list[str] = []
    for token in _MD.parse(_WIKILINK_SPAN.sub(_escape_pipes, source) if "[[" in source else source):
        if token.type in ("fence", "code_block"):
            out.append(token.content)
        elif token.type == "inline":
            for child in token.children or []:
                if child.type in ("text", "code_inline", "image"):
                    out.append(child.content)  # an image's content is its alt text
                elif child.type == "wikilink":
                    target, _, alias = child.content.replace("\\|", "|").partition("|")
                    out.append(alias or target.partition("#")[0])
                elif child.type in ("softbreak", "hardbreak"):
                    out.append(" ")
            out.append("\n")
    return "".join(out)


def _title(fm: dict[str, Any], parsed: Outline, path: str) -> tuple[str, str]:
    """Title and its source: front matter ``title`` (non-empty string or number), else the first
    non-empty top-level level-1 heading (ATX ``# x`` or setext ``x\\n===``), else the file name
    without ``.md`` (``README`` for ``README.md``)."""
    if title := _scalar_text(fm.get("title")):
        return title, "front_matter"
    for heading in parsed.headings:
        if heading.level == 1 and heading.text:
            return heading.text, "heading"
    name = posixpath.basename(path)
    return markdown_stem(name) or path, "filename"


def _names(fm: dict[str, Any], taxonomy: dict[str, Any], keys: Iterable[str], *, split: bool) -> list[str]:
    """Collect names under ``keys`` of the front matter, then of Grav's ``taxonomy`` mapping.

    A value may be a string (comma-separated when ``split``), a scalar, a mapping with ``name``,
    or a list of those.  Result: stripped, non-empty, de-duplicated in first-seen order.
    """
    found: list[str] = []
    for source in (fm, taxonomy):
        for key in keys:
            value = source.get(key)
            if split and isinstance(value, str):
                found.extend(value.split(","))
                continue
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    item = item.get("name")
                if (text := _scalar_text(item)) is not None:
                    found.append(text)
    return list(dict.fromkeys(n for raw in found if (n := raw.strip())))


def _wikilink(inner: str) -> Link | None:
    target, _, alias = inner.replace("\\|", "|").partition("|")
    target, _, heading = target.partition("#")
    target = target.strip()
    ext = _EXTENSION.search(posixpath.basename(target))
    if not target or (ext and ext.group(1).lower() != "md"):
        return None
    return Link(kind="wikilink", target=target, heading=heading.strip() or None, alias=alias.strip() or None)


_PAGE_EXTENSIONS = (*(suffix[1:] for suffix in MARKDOWN_SUFFIXES), "html", "htm")
"""Link targets that may name a page: Markdown files (``.md``, ``.mdx``, ``.markdown``), and the ``.html``
address a site generator
(VitePress, Hugo ``uglyURLs``) makes of one; extension-less paths and folders are pages too."""
_SHORTCODE_LINK = re.compile(
    r"\[(?P<text>[^\[\]\n]*)\]\(\s*\{\{[<%]\s*(?:rel)?ref\s+(?:path=)?[\"`](?P<path>[^\"`\n]+)[\"`]\s*[%>]\}\}\s*\)")
"""A Markdown link whose destination is Hugo's ``{{< relref "path" >}}`` / ``{{< ref "path" >}}`` shortcode
(``{{% ... %}}`` too); CommonMark reads it as plain text, so it is found in the text tokens."""


def _shortcode_links(text: str) -> Iterable[Link]:
    """Links of Hugo ``ref``/``relref`` shortcodes in a text token (see :data:`_SHORTCODE_LINK`)."""
    for match in _SHORTCODE_LINK.finditer(text):
        if link := _markdown_link(match.group("path"), match.group("text")):
            yield link


def _markdown_link(dest: str, text: str | None) -> Link | None:
    """A link to a page of the repository, or ``None`` (a URL, an anchor, an image or other file).

    Page targets: ``.md`` files, ``.html``/``.htm`` addresses, extension-less paths and folders
    (``./Datenmigration/``, ``/user/profile/``); :func:`resolve_links` finds the page they name.
    """
    dest = dest.strip().removeprefix("<").removesuffix(">").strip()
    if not dest or dest.startswith(("#", "//", "{{")) or _SCHEME.match(dest):
        return None  # ("{{": another shortcode than ref/relref, which _shortcode_links reads)
    target, _, heading = dest.partition("#")
    target = _nfc(unquote(target.partition("?")[0]))
    if target.startswith("{{"):  # a shortcode the parser percent-encoded (markdown-it normalises hrefs)
        return None
    ext = _EXTENSION.search(posixpath.basename(target.rstrip("/")))
    if not target or (ext is not None and ext.group(1).lower() not in _PAGE_EXTENSIONS and not target.endswith("/")):
        return None
    alias = " ".join(text.split()) if text else None
    return Link(kind="markdown", target=target, heading=_nfc(unquote(heading)) or None, alias=alias or None)


def resolve_links(docs: list[Document]) -> None:
    """Set ``Link.resolved`` of every link of every document, in place.

    Markdown links (and Hugo ``ref``/``relref`` shortcodes): a relative target against the linking
    document's folder (``..`` normalised), then the repository root; a site-absolute target
    (``/user/profile/``) against the repository root, then against each folder above the linking
    document, outermost first: the site's content root (``content/``, ``docs/``,
    ``content/en/``) is one of them.  At each place the target names the page ``T`` when it is
    ``T.md``; ``T.html``/``T.htm`` names ``T.md``; an extension-less ``T`` names ``T.md``, else the
    folder page ``T/index.md``, ``T/README.md`` or ``T/_index.md``; a folder ``T/`` names its folder
    page, else ``T.md`` (Hugo's pretty URLs).  Exact, case-sensitive paths; the first place that names
    a page wins; for a site address (not a ``.md`` name) a second pass ignores case.

    Wikilinks, Obsidian-style (``.md`` appended to the target when missing):

    1. relative to the linking document's folder (``./`` and ``../`` allowed);
    2. exact repository path (root-relative);
    3. case-insensitive (NFC, casefold) path-suffix match: ``[[Note]]`` matches any ``Note.md``,
       ``[[sub/Note]]`` any ``.../sub/Note.md``;
    4. folder note: ``[[rag]]`` matches ``.../rag/README.md`` (or ``index.md``/``_index.md``),
       as Grav-style wikis keep one page per folder.

    Among several candidates of a step the closest wins: most leading folders shared with the
    linking document (so the same folder first), then the shortest path, then the smallest path.
    Unresolved links get ``None``.
    """
    index = _WikiIndex(doc.path for doc in docs)
    for doc in docs:
        folder = posixpath.dirname(doc.path)
        for link in doc.links:
            if link.kind == "markdown":
                link.resolved = _resolve_markdown(link.target, folder, index.paths, index.folded)
            else:
                link.resolved = index.resolve(link.target, folder)


class _WikiIndex:
    """Document paths indexed by casefolded file name and by folder name of folder notes."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = set(paths)
        self.folded: dict[str, str] = {}  # casefolded path -> the smallest path that folds to it
        self.by_name: dict[str, list[tuple[str, str]]] = {}  # name -> [(folded path, path)]
        self.by_folder: dict[str, list[tuple[str, str]]] = {}  # name -> [(folded dir, path)]
        for path in sorted(self.paths):
            folded = path.casefold()
            self.folded.setdefault(folded, path)
            name = posixpath.basename(folded)
            self.by_name.setdefault(name, []).append((folded, path))
            if name in _FOLDER_NOTES:
                folder = posixpath.dirname(folded)
                self.by_folder.setdefault(posixpath.basename(folder), []).append((folder, path))

    def resolve(self, target: str, folder: str) -> str | None:
        """Resolve a wikilink ``target`` seen in ``folder``; rules in :func:`resolve_links`."""
        name = target if target.lower().endswith(".md") else target + ".md"
        for candidate in (posixpath.join(folder, name), name):
            if (norm := _normalise(candidate)) is not None and norm in self.paths:
                return norm
        if (norm := _normalise(name)) is None:
            return None
        key = norm.casefold()
        names = self.by_name.get(posixpath.basename(key), [])
        hits = [p for f, p in names if f == key or f.endswith("/" + key)]
        if not hits:
            stem = key[:-3].rstrip("/")
            notes = self.by_folder.get(posixpath.basename(stem), [])
            hits = [p for d, p in notes if d == stem or d.endswith("/" + stem)]
        return min(hits, key=lambda p: (-_shared_depth(p, folder), len(p), p)) if hits else None


def _normalise(path: str) -> str | None:
    """``posixpath.normpath`` without a leading ``/``; None if it leaves the repository."""
    norm = posixpath.normpath(path).lstrip("/")
    return None if norm == ".." or norm.startswith("../") or norm == "." else norm


_FOLDER_PAGES = ("index.md", "index.mdx", "README.md", "_index.md")
"""The page a folder link names, in this order (VitePress/MkDocs, GitHub, Hugo sections)."""


def _resolve_markdown(target: str, folder: str, paths: set[str], folded: dict[str, str] | None = None) -> str | None:
    """Resolve a Markdown link ``target`` seen in ``folder`` (rules in :func:`resolve_links`).

    ``folded`` (casefolded path -> path): for a target that is not a file name (a site address:
    extension-less, a folder, ``.html``), a second pass ignores case, as site generators lowercase
    addresses (Hugo: ``/functions/time/format/`` is ``functions/time/Format.md``).
    """
    if target.startswith("/"):
        parts = folder.split("/") if folder else []
        roots = ["", *("/".join(parts[:i]) for i in range(1, len(parts) + 1))]
        tries = [posixpath.join(root, target.lstrip("/")) for root in roots]
    else:
        tries = [posixpath.join(folder, target), target]
    for candidate in tries:
        for page in _page_candidates(candidate):
            if (norm := _normalise(page)) is not None and norm in paths:
                return norm
    if folded is None or is_markdown_name(target):
        return None
    for candidate in tries:
        for page in _page_candidates(candidate):
            if (norm := _normalise(page)) is not None and (hit := folded.get(norm.casefold())) is not None:
                return hit
    return None


def _page_candidates(target: str) -> list[str]:
    """The files a page address may be, in order: ``T.md`` (or ``T.mdx``, ``T.markdown``); ``T.html`` ->
    ``T.md``; ``T`` -> ``T.md`` then its folder pages; ``T/`` -> its folder pages (:data:`_FOLDER_PAGES`),
    then ``T.md``."""
    if target.endswith("/") or target in ("", ".", ".."):
        folder_pages = [posixpath.join(target, name) for name in _FOLDER_PAGES]
        stem = target.rstrip("/")  # Hugo's pretty URLs: /user/profile/ is user/profile.md
        return folder_pages + (_suffixed(stem) if stem not in ("", ".", "..") and not stem.endswith("/..") else [])
    lower = target.lower()
    if is_markdown_name(lower):
        return [target]
    for ext in (".html", ".htm"):
        if lower.endswith(ext):
            stem = target[: -len(ext)]
            return _suffixed(stem) + ([posixpath.join(posixpath.dirname(stem), n) for n in _FOLDER_PAGES]
                                      if posixpath.basename(stem) == "index" else [])
    return [*_suffixed(target), *(posixpath.join(target, name) for name in _FOLDER_PAGES)]


def _suffixed(stem: str) -> list[str]:
    """``stem`` with each Markdown suffix (:data:`artifacts.gittree.MARKDOWN_SUFFIXES`), ``.md`` first."""
    return [stem + suffix for suffix in MARKDOWN_SUFFIXES]


def _shared_depth(path: str, folder: str) -> int:
    """Number of leading folders ``path`` shares with ``folder``."""
    ours, theirs = posixpath.dirname(path).split("/"), folder.split("/")
    pairs = enumerate(zip(ours, theirs, strict=False))
    return next((i for i, (a, b) in pairs if a != b or not a), min(len(ours), len(theirs)))
