"""Parse Markdown files with YAML front matter into :class:`~artifacts.records.Document` records.

Two public functions: :func:`parse_markdown` turns one file's bytes into a ``Document`` (or
raises :class:`~indexer.errors.SkipFile`), :func:`resolve_links` fills ``Link.resolved`` across
all documents of a commit.  Both are pure and deterministic: equal input gives equal output.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import math
import posixpath
import re
import unicodedata
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

import yaml

from artifacts.records import Document, Link

from .errors import SkipFile

__all__ = ["SkipFile", "extract_links", "parse_markdown", "resolve_links"]

_DELIM = re.compile(r"---[ \t]*")
_KEY_LINE = re.compile(r"""(?:[A-Za-z0-9_][\w.-]*|"[^"\n]*"|'[^'\n]*')[ \t]*:(?:[ \t]|$)""")
_FIRST_LINE = re.compile(r"^[ \t]*([^\s#].*)$", re.M)
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?")
_SETEXT_H1 = re.compile(r" {0,3}=+[ \t]*")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+)\]\]")
_MD_LINK = re.compile(
    r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]"  # [text], one level of nested brackets
    r"\(\s*(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)"  # (destination
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"  # optional "title")
)
_REF_DEF = re.compile(r"^ {0,3}\[([^\]\n^][^\]\n]*)\]:[ \t]*(<[^<>\n]*>|\S+)", re.M)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_EXTENSION = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,7})$")
_DATE_KEYS = ("date", "created", "updated", "modified")
_FOLDER_NOTES = ("readme.md", "index.md", "_index.md")
_MAX_FM_NODES = 100_000  # guards against YAML alias bombs expanding on conversion
_nfc = functools.partial(unicodedata.normalize, "NFC")


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that keeps an impossible timestamp (``2021-02-30``) as its string."""

    def construct_yaml_timestamp(self, node: yaml.Node) -> Any:  # type: ignore[override]
        try:
            return super().construct_yaml_timestamp(node)  # type: ignore[arg-type]
        except ValueError:
            return self.construct_scalar(node)  # type: ignore[arg-type]


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)


def parse_markdown(path: str, data: bytes, *, blob_id: str, max_bytes: int) -> Document:
    """Parse one Markdown file into a :class:`Document` (``resolved`` of its links left ``None``).

    :param path: repository path with ``/`` separators; stored NFC-normalised.
    :param data: the file's raw bytes.
    :param blob_id: Git blob sha (hex) the bytes were read from.
    :param max_bytes: size limit in bytes; larger files are skipped.
    :returns: the document: body NFC with ``\\n`` line endings (BOM stripped), JSON-safe front
        matter (dates as ISO strings), normalised title/authors/tags/categories/dates, links.
    :raises SkipFile: ``too_large`` (``len(data) > max_bytes``), ``binary`` (contains a NUL
        byte), ``not_utf8`` (not valid UTF-8), ``invalid_front_matter`` (see below).

    Front matter rule: the first line is ``---`` and a later line is ``---`` (trailing blanks
    allowed); the lines between are the block.  An empty (or comments-only) block is an empty
    mapping.  Otherwise the block is parsed with a ``yaml.SafeLoader``:

    * it parses to a mapping: that is the front matter;
    * it parses to anything else (a string of prose, a list, a number): the ``---`` lines were
      thematic breaks, there is no front matter and the whole file is body;
    * it fails to parse and its first non-blank, non-comment line is a ``key:`` line (a single
      word or quoted key followed by ``:`` and a blank or end of line): ``invalid_front_matter``;
    * it fails to parse otherwise: prose between thematic breaks, no front matter.

    With no closing ``---`` there is no front matter.
    """
    path = _nfc(path)
    if len(data) > max_bytes:
        raise SkipFile("too_large", f"{len(data)} bytes > limit of {max_bytes} bytes")
    if b"\x00" in data:
        raise SkipFile("binary", f"NUL byte at offset {data.index(0)}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkipFile("not_utf8", f"invalid UTF-8 at byte {exc.start}") from None
    text = _nfc(text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n"))
    front_matter, body = _split_front_matter(text)
    try:
        fm = _json_safe(front_matter, [0], set())
    except RecursionError:
        raise SkipFile("invalid_front_matter", "front matter nested too deeply") from None

    title, title_source = _title(fm, _mask_fences(body), path)
    # Dates are already ISO strings (see _json_safe); a bare year (``date: 2021``) stringifies.
    dates = {k: v for k in _DATE_KEYS if (v := _scalar_text(fm.get(k))) is not None}
    date = dates.get("date") or next(iter(dates.values()), None)
    year = int(date[:4]) if date and re.fullmatch(r"[0-9]{4}", date[:4]) else None
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
        links=extract_links(body),
        body=body,
    )


def _split_front_matter(text: str) -> tuple[dict[Any, Any], str]:
    """Return ``(raw front matter mapping, body)`` by the rule of :func:`parse_markdown`."""
    lines = text.split("\n")
    if not lines or not _DELIM.fullmatch(lines[0]):
        return {}, text
    close = next((i for i in range(1, len(lines)) if _DELIM.fullmatch(lines[i])), None)
    if close is None:
        return {}, text
    block = "\n".join(lines[1:close])
    body = "\n".join(lines[close + 1 :])
    try:
        value = yaml.load(block, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        first = _FIRST_LINE.search(block)  # first non-blank, non-comment line
        if first and _KEY_LINE.match(first.group(1)):
            raise SkipFile("invalid_front_matter", _yaml_problem(exc)) from None
        return {}, text  # prose between thematic breaks
    if value is not None and not isinstance(value, dict):
        return {}, text  # a string or list: the --- lines were thematic breaks
    return value or {}, body


def _yaml_problem(exc: BaseException) -> str:
    """One line naming the YAML problem and its line in the file (block starts at line 2)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        where = f" (line {exc.problem_mark.line + 2})" if exc.problem_mark else ""
        return f"{exc.problem}{where}"[:200]
    return (str(exc).strip().split("\n")[0] or type(exc).__name__)[:200]


def _json_safe(value: Any, budget: list[int], active: set[int]) -> Any:
    """Convert a YAML value to JSON-safe data: dates to ISO, other non-JSON scalars to ``str``."""
    budget[0] += 1
    if budget[0] > _MAX_FM_NODES:
        raise SkipFile("invalid_front_matter", "front matter has too many values (alias expansion)")
    if isinstance(value, int) and value.bit_length() > 64:
        return hex(value)  # str() of a huge int may raise; JSON readers choke on it anyway
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.date):  # datetime is a subclass of date
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict | list | tuple | set | frozenset):
        if id(value) in active:
            raise SkipFile("invalid_front_matter", "front matter contains a recursive alias")
        active.add(id(value))
        try:
            if isinstance(value, dict):
                return {_key(k): _json_safe(v, budget, active) for k, v in value.items()}
            items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
            return [_json_safe(v, budget, active) for v in items]
        finally:
            active.discard(id(value))
    return str(value)


def _key(key: Any) -> str:
    """A mapping key as a string: ``null``/``true``/``false`` as in JSON, a date in ISO."""
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    return str(_json_safe(key, [0], set()))


def _scalar_text(value: Any) -> str | None:
    """A stripped non-empty string for a str/int/float, else None (bools and nulls too)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    return str(value).strip() or None


def _title(fm: dict[str, Any], masked: str, path: str) -> tuple[str, str]:
    """Title and its source: front matter ``title`` (non-empty string or number), else the first
    level-1 heading (ATX ``# x`` or setext ``x\\n===``) of the fence-masked body, else the file
    name without ``.md`` (``README`` for ``README.md``)."""
    if title := _scalar_text(fm.get("title")):
        return title, "front_matter"
    previous = ""
    for line in masked.split("\n"):
        atx = _ATX.fullmatch(line)
        if atx and len(atx.group(1)) == 1:
            text = re.sub(r"(?:^|[ \t]+)#+[ \t]*$", "", atx.group(2) or "").strip()
            if text:
                return text, "heading"
        elif _SETEXT_H1.fullmatch(line) and previous.strip() and not previous.startswith("    "):
            return previous.strip(), "heading"
        previous = line
    name = posixpath.basename(path)
    return (name[:-3] if name.lower().endswith(".md") else name) or path, "filename"


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


def _mask_fences(body: str) -> str:
    """Blank every line of fenced code blocks (fence lines included), keeping line count.

    A fence is 3+ backticks or tildes (any indentation, so fences inside list items count); it
    closes at a line of the same character at least as long; an unclosed fence runs to the end.
    """
    out: list[str] = []
    fence: str | None = None
    for line in body.split("\n"):
        match = _FENCE.fullmatch(line)
        if fence is None:
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                fence = match.group(1)
                line = ""
        else:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                if not match.group(2).strip():
                    fence = None
            line = ""
        out.append(line)
    return "\n".join(out)


def extract_links(body: str) -> list[Link]:
    """Links of a Markdown body in document order, exact duplicates dropped, ``resolved=None``.

    * wikilinks ``[[Target]]``, ``[[Target|alias]]``, ``[[Target#Heading|alias]]`` and embeds
      ``![[Target]]`` (``kind="wikilink"``); targets with a file extension other than ``.md``
      (images, PDFs, canvases...) and same-note links ``[[#Heading]]`` are dropped;
    * inline ``[text](path.md#anchor "title")`` and reference definitions ``[ref]: path.md``
      (``kind="markdown"``, ``alias`` = link text); the path is URL-decoded and must end in
      ``.md``; URLs with a scheme (``http:``, ``mailto:``, ``obsidian:``...), ``//host`` and
      ``#anchor``-only links are dropped.

    Links inside fenced code blocks and inline code spans are ignored.
    """
    text = _CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), _mask_fences(body))
    found: list[tuple[int, Link]] = []
    for match in _WIKILINK.finditer(text):
        if link := _wikilink(match.group(2)):
            found.append((match.start(), link))
    text = _WIKILINK.sub(lambda m: " " * len(m.group(0)), text)
    for match in _MD_LINK.finditer(text) if "](" in text else ():
        if not match.group(1) and (link := _markdown_link(match.group(3), match.group(2))):
            found.append((match.start(), link))
    for match in _REF_DEF.finditer(text):
        if link := _markdown_link(match.group(2), None):
            found.append((match.start(), link))
    found.sort(key=lambda item: item[0])
    return list({link.model_dump_json(): link for _, link in found}.values())


def _wikilink(inner: str) -> Link | None:
    target, _, alias = inner.replace("\\|", "|").partition("|")
    target, _, heading = target.partition("#")
    target = target.strip()
    ext = _EXTENSION.search(posixpath.basename(target))
    if not target or (ext and ext.group(1).lower() != "md"):
        return None
    return Link(kind="wikilink", target=target, heading=heading.strip() or None, alias=alias.strip() or None)


def _markdown_link(dest: str, text: str | None) -> Link | None:
    dest = dest.strip().removeprefix("<").removesuffix(">").strip()
    if not dest or dest.startswith(("#", "//")) or _SCHEME.match(dest):
        return None
    target, _, heading = dest.partition("#")
    target = _nfc(unquote(target.partition("?")[0]))
    if not target.lower().endswith(".md"):
        return None
    alias = " ".join(text.split()) if text else None
    return Link(kind="markdown", target=target, heading=_nfc(unquote(heading)) or None, alias=alias or None)


def resolve_links(docs: list[Document]) -> None:
    """Set ``Link.resolved`` of every link of every document, in place.

    Markdown links: relative to the linking document's folder (``..`` normalised), else relative
    to the repository root (a leading ``/`` means root only); exact, case-sensitive path.

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
                link.resolved = _resolve_markdown(link.target, folder, index.paths)
            else:
                link.resolved = index.resolve(link.target, folder)


class _WikiIndex:
    """Document paths indexed by casefolded file name and by folder name of folder notes."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = set(paths)
        self.by_name: dict[str, list[tuple[str, str]]] = {}  # name -> [(folded path, path)]
        self.by_folder: dict[str, list[tuple[str, str]]] = {}  # name -> [(folded dir, path)]
        for path in sorted(self.paths):
            folded = path.casefold()
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


def _resolve_markdown(target: str, folder: str, paths: set[str]) -> str | None:
    tries = [target] if target.startswith("/") else [posixpath.join(folder, target), target]
    for candidate in tries:
        if (norm := _normalise(candidate)) is not None and norm in paths:
            return norm
    return None


def _shared_depth(path: str, folder: str) -> int:
    """Number of leading folders ``path`` shares with ``folder``."""
    ours, theirs = posixpath.dirname(path).split("/"), folder.split("/")
    pairs = enumerate(zip(ours, theirs, strict=False))
    return next((i for i, (a, b) in pairs if a != b or not a), min(len(ours), len(theirs)))
