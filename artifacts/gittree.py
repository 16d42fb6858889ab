"""The Markdown blobs of a Git tree, named as every part of gitrag names them.

The indexer builds documents from these entries and ``gitrag eval`` checks question files against
the same paths, so both must agree on how a raw Git name becomes a path.
"""

from __future__ import annotations

import unicodedata
from typing import Any, cast

import pygit2

MARKDOWN_SUFFIXES = (".md", ".mdx", ".markdown")
"""File names that are Markdown documents (case-insensitive): CommonMark, MDX (Docusaurus, Astro
Starlight, Nextra: Markdown with JSX and ``import``/``export`` lines) and the long suffix."""


def is_markdown_name(name: str) -> bool:
    """Whether a file name ends with one of :data:`MARKDOWN_SUFFIXES` (any case)."""
    return name.lower().endswith(MARKDOWN_SUFFIXES)


def markdown_stem(name: str) -> str:
    """``name`` without its Markdown suffix (``guide.mdx`` -> ``guide``); unchanged when it has none."""
    lower = name.lower()
    for suffix in MARKDOWN_SUFFIXES:
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return name


def markdown_entries(repo: pygit2.Repository, tree: pygit2.Tree) -> list[tuple[str, Any]]:
    """Return ``[(path, entry)]`` for every Markdown blob (:data:`MARKDOWN_SUFFIXES`) under ``tree``
    (recursively), sorted by path.

    Paths are NFC with ``/`` separators.  A blob whose path is not valid UTF-8 is left out (no path
    could name it: two such names would collide), like submodules (commit entries); see
    :func:`unindexable_entries`.  Symlinks are included (the entry's ``filemode`` tells them apart).
    """
    found: list[tuple[str, Any]] = []
    _walk(repo, tree, "", found, None)
    found.sort(key=lambda item: item[0])
    return found


def unindexable_entries(repo: pygit2.Repository, tree: pygit2.Tree) -> list[tuple[str, str, str]]:
    """Return ``[(path, reason, detail)]`` of what :func:`markdown_entries` leaves out, sorted by path.

    ``submodule``: a gitlink (any name; its commit is in another repository); ``invalid_path``: a
    Markdown blob whose path is not valid UTF-8 (``path`` shows the bad bytes as ``\\xNN``, so it
    names that one file).
    """
    skipped: list[tuple[str, str, str]] = []
    _walk(repo, tree, "", [], skipped)
    skipped.sort()
    return skipped


def _walk(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str, out: list[tuple[str, Any]],
          skipped: list[tuple[str, str, str]] | None, valid: bool = True) -> None:
    for entry in tree:
        # a tree entry always has a name (pygit2's stubs say bytes | None)
        raw = cast(bytes, entry.raw_name if hasattr(entry, "raw_name") else str(entry.name).encode())
        try:
            name, ok = unicodedata.normalize("NFC", raw.decode("utf-8")), valid
        except UnicodeDecodeError:
            name, ok = raw.decode("utf-8", errors="backslashreplace"), False
        path = prefix + name
        if entry.type_str == "tree":
            _walk(repo, cast(pygit2.Tree, repo[entry.id]), path + "/", out, skipped, ok)
        elif entry.type_str == "commit":
            if skipped is not None:
                skipped.append((path, "submodule", f"submodule at commit {str(entry.id)[:12]} is not indexed"))
        elif entry.type_str == "blob" and is_markdown_name(name):
            if ok:
                out.append((path, entry))
            elif skipped is not None:
                skipped.append((path, "invalid_path", "the path is not valid UTF-8"))
