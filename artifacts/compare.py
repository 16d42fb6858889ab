"""Compare two bundles: documents added, removed, renamed and changed (from docs and chunk lists)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .layout import CHUNKS_FILE, DOCS_FILE


def _docs(bundle: Path) -> dict[str, str]:
    """Return {document path: blob id} of a bundle."""
    out = {}
    with open(bundle / DOCS_FILE, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                doc = json.loads(line)
                out[doc["path"]] = doc["blob_id"]
    return out


def _chunk_hashes(bundle: Path) -> dict[str, list[str]]:
    """Return {document path: [chunk sha256 in ordinal order]} of a bundle."""
    out: dict[str, list[str]] = {}
    with open(bundle / CHUNKS_FILE, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                chunk = json.loads(line)
                out.setdefault(chunk["path"], []).append(chunk["sha256"])
    return out


def diff_bundles(old: Path, new: Path) -> dict[str, Any]:
    """Return what changed from bundle ``old`` to bundle ``new``.

    Keys: ``added``, ``removed`` (lists of paths), ``renamed`` (list of ``{from, to}``: a removed and
    an added path with the same blob), ``changed`` (list of ``{path, chunks_before, chunks_after,
    chunks_changed}``), all sorted.  Paths present in both with the same blob are unchanged.
    """
    a, b = _docs(old), _docs(new)
    added = sorted(set(b) - set(a))
    removed = sorted(set(a) - set(b))
    renamed = []
    by_blob: dict[str, list[str]] = {}
    for path in removed:
        by_blob.setdefault(a[path], []).append(path)
    for path in list(added):
        sources = by_blob.get(b[path])
        if sources:
            source = sources.pop(0)
            renamed.append({"from": source, "to": path})
            added.remove(path)
            removed.remove(source)
    chunks_a, chunks_b = _chunk_hashes(old), _chunk_hashes(new)
    changed = []
    for path in sorted(set(a) & set(b)):
        if a[path] != b[path]:
            before, after = chunks_a.get(path, []), chunks_b.get(path, [])
            differing = sum(1 for i in range(max(len(before), len(after)))
                            if i >= len(before) or i >= len(after) or before[i] != after[i])
            changed.append({"path": path, "chunks_before": len(before), "chunks_after": len(after),
                            "chunks_changed": differing})
    return {"added": added, "removed": removed, "renamed": renamed, "changed": changed}
