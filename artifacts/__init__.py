"""gitrag bundle format and store.

A bundle is an immutable, commit-addressed directory holding a Whoosh BM25 index, hnswlib
vectors, an embedded graph database, the parsed documents and chunks, and a manifest with
hashes.  This package owns the format (records, manifest, analysis, embedder spec) and the
store (publish, ``CURRENT``/``PINNED`` pointers, verification).  It imports nothing from
``indexer``, ``query`` or ``hooks``.
"""

__version__ = "0.1.0"
