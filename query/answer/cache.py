"""The answer cache (:class:`AnswerCache`): an LRU of ``/answer`` bodies keyed by the bundle's ``content_digest``,
so a swap to another bundle never serves a stale answer.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from artifacts.analysis import fold
from query.answer.request import AnswerRequest


class AnswerCache:
    """LRU of answer bodies bounded by ``max_entries`` and ``max_bytes`` (UTF-8 JSON size); thread-safe.

    The key holds the bundle's ``content_digest``, so answers of another bundle are never served.
    """

    def __init__(self, max_entries: int = 256, max_bytes: int = 16 * 1024 * 1024) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._data: OrderedDict[tuple[str, ...], tuple[str, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(content_digest: str, generator_fingerprint: str, request: AnswerRequest) -> tuple[str, ...]:
        """Return the cache key of a request answered from a bundle by a generator."""
        question = fold(request.query)
        flt = json.dumps(request.filter.model_dump(mode="json") if request.filter else None, sort_keys=True)
        return (content_digest, generator_fingerprint, question, flt, request.mode,
                str(request.max_context_tokens), str(request.published_only))

    def get(self, key: tuple[str, ...]) -> dict[str, Any] | None:
        """Return a copy of the cached body, or ``None``."""
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return json.loads(entry[0])  # type: ignore[no-any-return]

    def put(self, key: tuple[str, ...], body: dict[str, Any]) -> None:
        """Store ``body``; evict least recently used entries beyond the bounds (a body larger than
        ``max_bytes`` is not stored)."""
        text = json.dumps(body, ensure_ascii=False)
        size = len(text.encode("utf-8"))
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._data[key] = (text, size)
            self._bytes += size
            while len(self._data) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, dropped) = self._data.popitem(last=False)
                self._bytes -= dropped

    def info(self) -> dict[str, int]:
        """Return ``{entries, bytes, hits, misses}``."""
        with self._lock:
            return {"entries": len(self._data), "bytes": self._bytes, "hits": self.hits, "misses": self.misses}
