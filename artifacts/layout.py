"""Names and fixed parameters of the files inside a bundle (shared by writer and reader)."""

from __future__ import annotations

from typing import Final

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

HNSW_SPACE: Final = "ip"
"""Inner product on L2-normalised vectors = cosine similarity."""
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
HNSW_SEED = 100
