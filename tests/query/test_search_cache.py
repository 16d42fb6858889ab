"""The per-bundle LRU of query vectors (the default model's query embedding is most of a hybrid search)."""

from __future__ import annotations

import numpy as np

from query.search.vectors import QueryVectorCache


def test_query_vectors_are_cached_per_bundle_by_normalised_text() -> None:
    class Counting:
        calls = 0

        def embed_query(self, text: str):  # type: ignore[no-untyped-def]
            Counting.calls += 1
            return np.full(4, len(text), dtype=np.float32)

    cache = QueryVectorCache(size=2)
    model = Counting()
    first = cache.get(model, "Café ")
    assert cache.get(model, "Cafe\u0301") is first and Counting.calls == 1  # NFC and stripped: one key
    assert not first.flags.writeable
    cache.get(model, "b")
    cache.get(model, "c")  # evicts "Café", the least recently used
    cache.get(model, "Café")
    assert Counting.calls == 4 and (cache.hits, cache.misses) == (1, 4)
