"""The Markdown blobs of a Git tree, named as every part of gitrag names them.

The indexer builds documents from these entries and ``gitrag eval`` checks question files against
the same paths, so both must agree on how a raw Git name becomes a path.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import pygit2


def markdown_entries(repo: pygit2.Repository, tree: pygit2.Tree) -> list[tuple[str, Any]]:
    """Return ``[(path, entry)]`` for every ``*.md`` blob under ``tree`` (recursively), sorted by path.

    Paths are NFC with ``/`` separators; a name that is not valid UTF-8 is decoded with
    replacement.  Submodules (commit entries) are ignored; symlinks are included (the entry's
    ``filemode`` tells them apart).
    """
    found: list[tuple[str, Any]] = []
    _walk(repo, tree, "", found)
    found.sort(key=lambda item: item[0])
    return found


def _walk(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str, out: list[tuple[str, Any]]) -> None:
    for entry in tree:
        raw = entry.raw_name if hasattr(entry, "raw_name") else entry.name.encode()
        name = unicodedata.normalize("NFC", raw.decode("utf-8", errors="replace"))
        path = prefix + name
        if entry.type_str == "tree":
            _walk(repo, repo[entry.id], path + "/", out)
        elif entry.type_str == "blob" and name.lower().endswith(".md"):
            out.append((path, entry))
