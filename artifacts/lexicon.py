"""simplemma's lemmatizer over dictionaries that open in a millisecond (a per-machine lookup cache).

simplemma keeps each language's dictionary as one lzma-compressed, front-coded stream and decodes
all of it into a dict on the first lookup in that language: 0.58 s of CPU for Slovak (907,647
forms), 0.19 s for Czech, 0.09 s for English, 0.71 s for German.  A graph question lemmatises its
few words in every language of the graph vocabulary, so every ``gitrag ask`` paid about 0.9 s (and
a server's first question, or its warm-up, the same) for a dozen lookups.

This module gives the same lemmas from a lookup file per language that is written once per machine
and simplemma version and then mapped into memory: opening it costs a header check, a lookup a
binary search over the sorted forms.  :class:`LexiconFactory` is a simplemma
``DictionaryFactory``; :func:`lemmatize` and :func:`is_known` run simplemma's own default strategy
and dictionary lookup over it, so they return exactly what ``simplemma.lemmatize(word, lang=...)``
and ``simplemma.is_known(word, lang=...)`` return (``tests/artifacts/test_lexicon.py`` compares
them).  The file holds simplemma's own entries, read through its public ``Mapping`` interface: a
cache, never data of a bundle, and nothing depends on it being there.  Without a usable cache
directory, or when a file is missing, foreign or truncated and cannot be written, a language falls
back to simplemma's in-memory dictionary (today's cost, the same answers).

Cache directory: ``$GITRAG_CACHE_DIR/lexicons``, else ``$XDG_CACHE_HOME/gitrag/lexicons``, else
``~/.cache/gitrag/lexicons``.  One file per language and source, ``<lang>-<source key>.lex``, where
the source key is the first 12 hex digits of sha256 over simplemma's version, its package
directory and the size and mtime of the language's data file (two installations never overwrite
each other's files).  A file is written to a temporary name in the same directory and renamed, so a
reader sees a whole file or none.  ``gitrag build`` prepares the languages of its bundle's graph
vocabulary (:func:`prepare_lexicons`); otherwise the first lookup in a language writes its file.

File format (version 1, native byte order, offsets in bytes)::

    b"GRLEX1\\n\\0"                   magic, 8 bytes
    u32 header length H, H bytes     JSON: {"source", "count" n, "keys_bytes", "values_bytes", "byteorder"}
    zero padding to a multiple of 4
    u32[n + 1] key offsets           into the keys blob; keys sorted as UTF-8 bytes
    u32[n + 1] value offsets         into the values blob
    keys blob, values blob           UTF-8
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
import struct
import sys
import tempfile
import threading
import time
from array import array
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simplemma import Lemmatizer
    from simplemma.strategies import DictionaryLookupStrategy

log = logging.getLogger("gitrag.lexicon")

MAGIC = b"GRLEX1\n\0"
"""First 8 bytes of a lexicon file; the digit is the format version."""

CACHE_ENV = "GITRAG_CACHE_DIR"
"""Environment variable naming gitrag's per-machine cache directory (lexicons in ``lexicons/``)."""

_U32 = struct.Struct("=I")


def default_cache_dir() -> Path | None:
    """Return the directory of the lexicon files (see the module docstring; it may not exist yet),
    or ``None`` when there is no home directory to put it in."""
    base = os.environ.get(CACHE_ENV)
    if base:
        return Path(base) / "lexicons"
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "gitrag" / "lexicons"
    try:
        return Path.home() / ".cache" / "gitrag" / "lexicons"
    except (RuntimeError, KeyError):  # no $HOME and no password entry
        return None


def _source_key(lang: str) -> str:
    """Hex key of the simplemma installation and data file that ``lang``'s entries come from."""
    import simplemma

    package = Path(simplemma.__file__).resolve().parent
    parts = [str(simplemma.__version__), str(package), lang]
    data = package / "strategies" / "dictionaries" / "data"
    for candidate in sorted(data.glob(f"{lang}.*")):
        stat = candidate.stat()
        parts.append(f"{candidate.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:12]


class Lexicon(Mapping[str, str]):
    """One language's forms -> lemmas, read from a mapped lexicon file (see the module docstring).

    :raises ValueError: the file is not a whole lexicon file of ``source`` (wrong magic, header or size).
    """

    def __init__(self, path: Path, source: str) -> None:
        with open(path, "rb") as handle:
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        buf = self._map
        if len(buf) < 12 or buf[:8] != MAGIC:
            raise ValueError("not a lexicon file")
        (header_len,) = _U32.unpack_from(buf, 8)
        try:
            header = json.loads(buf[12:12 + header_len])
        except ValueError:
            raise ValueError("unreadable lexicon header") from None
        if not isinstance(header, dict) or header.get("source") != source or header.get("byteorder") != sys.byteorder:
            raise ValueError("lexicon file of another source")
        count, keys_bytes, values_bytes = int(header["count"]), int(header["keys_bytes"]), int(header["values_bytes"])
        start = 12 + header_len + (-(12 + header_len) % 4)
        keys_at = start + 8 * (count + 1)
        values_at = keys_at + keys_bytes
        if len(buf) != values_at + values_bytes:
            raise ValueError("truncated lexicon file")
        view = memoryview(buf)
        self._count = count
        self._key_offsets = view[start:start + 4 * (count + 1)].cast("I")
        self._value_offsets = view[start + 4 * (count + 1):keys_at].cast("I")
        self._keys_at = keys_at
        self._values_at = values_at

    def _key(self, index: int) -> bytes:
        offsets = self._key_offsets
        return self._map[self._keys_at + offsets[index]:self._keys_at + offsets[index + 1]]

    def _lookup(self, key: str) -> str | None:
        target = key.encode("utf-8")  # strict, as simplemma's own mapping: a lone surrogate raises
        lo, hi = 0, self._count
        while lo < hi:  # bisect_left over the sorted keys
            mid = (lo + hi) // 2
            if self._key(mid) < target:
                lo = mid + 1
            else:
                hi = mid
        if lo == self._count or self._key(lo) != target:
            return None
        offsets = self._value_offsets
        return self._map[self._values_at + offsets[lo]:self._values_at + offsets[lo + 1]].decode("utf-8")

    def __getitem__(self, key: str) -> str:
        value = self._lookup(key)
        if value is None:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:  # Mapping.get without its KeyError round trip
        value = self._lookup(key)
        return default if value is None else value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._lookup(key) is not None

    def __iter__(self) -> Iterator[str]:
        for index in range(self._count):
            yield self._key(index).decode("utf-8")

    def __len__(self) -> int:
        return self._count


def write_lexicon(path: Path, entries: Mapping[str, str], source: str) -> None:
    """Write ``entries`` (form -> lemma) as a lexicon file at ``path`` (a temporary file, then renamed).

    :raises OSError: the directory cannot be written.
    """
    items = sorted((k.encode("utf-8"), v.encode("utf-8"))
                   for k, v in ((key, entries[key]) for key in entries))
    key_offsets, value_offsets = array("I", [0]), array("I", [0])
    for key, value in items:
        key_offsets.append(key_offsets[-1] + len(key))
        value_offsets.append(value_offsets[-1] + len(value))
    header = json.dumps({"source": source, "count": len(items), "keys_bytes": key_offsets[-1],
                         "values_bytes": value_offsets[-1], "byteorder": sys.byteorder}).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(MAGIC + _U32.pack(len(header)) + header + b"\0" * (-(12 + len(header)) % 4))
            out.write(key_offsets.tobytes())
            out.write(value_offsets.tobytes())
            out.write(b"".join(k for k, _ in items))
            out.write(b"".join(v for _, v in items))
        os.chmod(tmp, 0o644)  # mkstemp's 0600: the file holds nothing private
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class LexiconFactory:
    """A simplemma ``DictionaryFactory`` over lexicon files in ``cache_dir`` (``None``: never cached).

    ``sources`` records, per language opened, ``"file"`` (a lexicon file) or ``"memory"``
    (simplemma's own decoded dictionary: no file could be read or written).  Thread-safe; each
    language is opened once per factory.
    """

    def __init__(self, cache_dir: Path | None) -> None:
        self.cache_dir = cache_dir
        self.sources: dict[str, str] = {}
        self._opened: dict[str, Mapping[str, str] | None] = {}  # None: simplemma does not know the language
        self._lock = threading.Lock()

    def get_dictionary(self, lang: str) -> Mapping[str, str]:
        """Return ``lang``'s forms -> lemmas.  :raises ValueError: simplemma does not know ``lang``."""
        if lang not in self._opened:
            with self._lock:
                if lang not in self._opened:
                    self._opened[lang] = self._open(lang)
        opened = self._opened[lang]
        if opened is None:
            raise ValueError(f"Unsupported language: {lang}")
        return opened

    def prepare(self, lang: str) -> bool:
        """Write ``lang``'s lexicon file unless a usable one is there; whether one is there now."""
        path = self._path(lang)
        if path is None:
            return False
        try:
            Lexicon(*path)
            return True
        except (OSError, ValueError):
            pass
        written, _ = self._write(lang, *path)
        return written

    def _path(self, lang: str) -> tuple[Path, str] | None:
        if self.cache_dir is None or not _is_language_code(lang):
            return None
        source = _source_key(lang)
        return self.cache_dir / f"{lang}-{source}.lex", source

    def _open(self, lang: str) -> Mapping[str, str] | None:
        path = self._path(lang)
        decoded: Mapping[str, str] | None = None
        if path is not None:
            try:
                return self._opened_file(lang, *path)
            except (OSError, ValueError):
                written, decoded = self._write(lang, *path)
                if written:
                    try:
                        return self._opened_file(lang, *path)
                    except (OSError, ValueError):
                        pass
        if decoded is None:
            from simplemma.strategies import DEFAULT_DICTIONARY_FACTORY

            try:
                decoded = DEFAULT_DICTIONARY_FACTORY.get_dictionary(lang)
            except ValueError:
                return None
        self.sources[lang] = "memory"
        return decoded

    def _opened_file(self, lang: str, path: Path, source: str) -> Lexicon:
        lexicon = Lexicon(path, source)
        self.sources[lang] = "file"
        return lexicon

    def _write(self, lang: str, path: Path, source: str) -> tuple[bool, Mapping[str, str] | None]:
        """Write ``lang``'s file; whether it was written, and simplemma's decoded dictionary (``None``:
        an unknown language)."""
        from simplemma.strategies import DefaultDictionaryFactory

        try:  # before decoding anything: a directory that cannot be written costs nothing
            path.parent.mkdir(parents=True, exist_ok=True)
            writable = os.access(path.parent, os.W_OK)
        except OSError:
            writable = False
        if not writable:
            return False, None
        _remove_stale_temporaries(path)
        try:
            # an uncached factory: once the file is written, nothing keeps the decoded dict
            entries = DefaultDictionaryFactory(cache_max_size=0).get_dictionary(lang)
        except ValueError:
            return False, None
        try:
            write_lexicon(path, entries, source)
        except OSError as exc:
            log.debug("lexicon %s not cached in %s: %s", lang, path.parent, type(exc).__name__)
            return False, entries
        return True, entries


STALE_TEMPORARY_SECONDS = 600.0
"""Age after which a temporary file of :func:`write_lexicon` is taken for one a killed writer left."""


def _remove_stale_temporaries(path: Path) -> None:
    """Delete temporary files of ``path`` that a writer killed mid-write left (older than 10 minutes)."""
    now = time.time()
    for stale in path.parent.glob(path.name + ".*.tmp"):
        try:
            if now - stale.stat().st_mtime > STALE_TEMPORARY_SECONDS:
                stale.unlink()
        except OSError:  # another process removed or renamed it
            continue


def _is_language_code(lang: str) -> bool:
    """Whether ``lang`` can name a file (simplemma's codes: ``sk``, ``ast``, ``sr_latn``-like)."""
    return 2 <= len(lang) <= 12 and lang.replace("_", "").isascii() and lang.replace("_", "").isalpha()


class Lemmas:
    """simplemma's default lemmatizer and dictionary lookup over one :class:`LexiconFactory`."""

    def __init__(self, factory: LexiconFactory) -> None:
        from simplemma import Lemmatizer
        from simplemma.strategies import DefaultStrategy, DictionaryLookupStrategy

        self.factory = factory
        # what simplemma.lemmatize(word, lang) builds (greedy=False), with this factory's dictionaries
        self._lemmatizer: Lemmatizer = Lemmatizer(lemmatization_strategy=DefaultStrategy(dictionary_factory=factory))
        self._lookup: DictionaryLookupStrategy = DictionaryLookupStrategy(factory)

    def lemmatize(self, word: str, lang: str) -> str:
        """``simplemma.lemmatize(word, lang=lang)``.  :raises ValueError: unknown language or empty word."""
        return self._lemmatizer.lemmatize(word, lang)

    def is_known(self, word: str, lang: str) -> bool:
        """``simplemma.is_known(word, lang=lang)``: ``word`` is a form in ``lang``'s dictionary."""
        from simplemma.utils import normalize_token

        if not isinstance(word, str):  # simplemma's own checks, in its order
            raise TypeError(f"Wrong input type, expected string, got {type(word)}")
        if not word:
            raise ValueError("Wrong input value: empty string")
        return self._lookup.get_lemma(normalize_token(word), lang) is not None


_DEFAULT: Lemmas | None = None
_DEFAULT_LOCK = threading.Lock()


def default_lemmas() -> Lemmas:
    """The process-wide :class:`Lemmas` over :func:`default_cache_dir` (made on first use)."""
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = Lemmas(LexiconFactory(default_cache_dir()))
    return _DEFAULT


def lemmatize(word: str, lang: str) -> str:
    """Return simplemma's lemma of ``word`` in ``lang`` (see the module docstring).

    :raises ValueError: ``lang`` is not a simplemma language, or ``word`` is empty.
    """
    return default_lemmas().lemmatize(word, lang)


def is_known(word: str, lang: str) -> bool:
    """Whether ``word`` is a form of ``lang``'s simplemma dictionary.  :raises ValueError: as :func:`lemmatize`."""
    return default_lemmas().is_known(word, lang)


def prepare_lexicons(languages: Iterable[str]) -> list[str]:
    """Write the lexicon files of ``languages`` that are missing; return the languages that have one now.

    Never raises: a language simplemma does not know, or a cache directory that cannot be written,
    is left out of the result (its lookups then use simplemma's in-memory dictionary).
    """
    factory = default_lemmas().factory
    return [lang for lang in dict.fromkeys(languages) if factory.prepare(lang)]


__all__ = ["CACHE_ENV", "Lemmas", "Lexicon", "LexiconFactory", "default_cache_dir", "default_lemmas", "is_known",
           "lemmatize", "prepare_lexicons", "write_lexicon"]
