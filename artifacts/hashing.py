"""Hashing helpers for bundle files and logical content."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from .manifest import MANIFEST_NAME, FileEntry

_BLOCK = 1 << 20  # bytes read per step


def sha256_file(path: Path) -> str:
    """Return the sha256 (hex) of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def hash_bundle_files(bundle_dir: Path) -> list[FileEntry]:
    """Return a :class:`FileEntry` for every regular file under ``bundle_dir`` except the manifest.

    Paths are relative with ``/`` separators, sorted; sizes in bytes.
    """
    root = Path(bundle_dir)
    entries = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel == MANIFEST_NAME:
            continue
        entries.append(FileEntry(path=rel, sha256=sha256_file(path), size=path.stat().st_size))
    return entries


def digest_lines(lines: Iterable[str]) -> str:
    """Return sha256 (hex) over the given text lines sorted, each UTF-8 encoded and ``\n``-terminated."""
    digest = hashlib.sha256()
    for line in sorted(lines):
        digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()


def combine_digests(parts: dict[str, str]) -> str:
    """Return sha256 (hex) over ``name=digest`` lines of ``parts`` sorted by name."""
    text = "".join(f"{name}={parts[name]}\n" for name in sorted(parts))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
