"""Names and fixed parameters of the files inside a bundle (shared by writer and reader)."""

from __future__ import annotations

DOCS_FILE = "docs.jsonl"
CHUNKS_FILE = "chunks.jsonl"
TEXT_DIR = "text"
VECTORS_DIR = "vectors"
VECTORS_FILE = "vectors/vectors.npy"
IDS_FILE = "vectors/ids.json"
HNSW_FILE = "vectors/index.hnsw"
GRAPH_DIR = "graph"
BM25_DIR = "bm25"
"""Per-field BM25 inputs as arrays (:mod:`artifacts.bm25matrix`); since feature version 2, optional."""

HNSW_SPACE = "ip"
"""Inner product on L2-normalised vectors = cosine similarity."""
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
HNSW_SEED = 100
HEADINGS_FILE = "headings.json"
"""Each document's top-level headings as parsed (``{path: [[ordinal, level, text, line, end, [path...]], ...]}``),
so that an incremental build's graph need not parse unchanged documents again; optional, build-side only."""
