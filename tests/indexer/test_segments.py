"""Embedding inputs past the model's limit become several vector rows; `include` limits a build."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from artifacts.config import EmbedderSpec
from artifacts.embedding import HashEmbedder
from artifacts.layout import IDS_FILE, VECTORS_FILE
from artifacts.records import Chunk, Document
from artifacts.store import verify_bundle
from indexer.build import build_bundle, embedding_parts, embedding_text
from query.bundle import open_bundle
from query.search.bm25 import bm25_ranking
from query.search.vectors import vector_ranking
from query.search.weighting import bm25_matrix
from tests.conftest import MINILM, RepoBuilder


class SegmentingHashEmbedder(HashEmbedder):
    """Hash embedder with a 40-word input limit, so segmentation runs without a neural model."""

    WORDS = 40

    def __init__(self) -> None:
        super().__init__(64)
        self.spec = EmbedderSpec(model_id="hash-seg-64", dim=64, max_seq_tokens=self.WORDS,
                                 fingerprint=hashlib.sha256(b"hash-seg-64").hexdigest())

    def split_passage(self, text: str, header: str = "") -> list[str]:
        head = f"{header}\n\n" if header else ""
        words = text.split()
        return [head + " ".join(words[i : i + self.WORDS]) for i in range(0, len(words), self.WORDS)] or [head + text]


LONG = " ".join(f"slovo{i} bežné" for i in range(60)) + " zebraplanktón horské jazero"


def _rows(bundle_path: Path) -> tuple[list[str], np.ndarray]:
    ids = json.loads((bundle_path / IDS_FILE).read_text(encoding="utf-8"))
    return ids, np.load(bundle_path / VECTORS_FILE)


@pytest.fixture
def seg_repo(repo: RepoBuilder) -> RepoBuilder:
    repo.write("docs/long.md", f"---\ntitle: Dlhá\n---\n# Dlhá\n\n{LONG}\n")
    repo.write("docs/short.md", "---\ntitle: Krátka\n---\n# Krátka\n\nKrátky text o sieťach.\n")
    repo.write("other/x.md", "# X\n\nIný text.\n")
    repo.commit()
    return repo


def test_long_input_has_one_row_per_segment_and_is_found_by_its_last_words(seg_repo: RepoBuilder,
                                                                            tmp_path: Path) -> None:
    model = SegmentingHashEmbedder()
    result = build_bundle(seg_repo.path, tmp_path / "store", embedder=model)
    ids, vectors = _rows(result.bundle_path)
    counts = result.manifest.counts
    assert counts.vectors == len(ids) == vectors.shape[0] > counts.chunks == 3
    long_id = next(c for c in set(ids) if c.startswith("docs/long.md"))
    rows = [i for i, cid in enumerate(ids) if cid == long_id]
    head, body = embedding_parts(_chunk(result.bundle_path, long_id))
    assert len(rows) == len(model.split_passage(body, head)) > 1
    assert rows == list(range(rows[0], rows[0] + len(rows)))  # one chunk's segments are consecutive
    verify_bundle(result.bundle_path)

    bundle = open_bundle(result.bundle_path, embedder=model)
    hits = vector_ranking(bundle, "zebraplanktón horské jazero", depth=10, published_only=True)
    assert hits[0][0] == long_id  # the words only in the last segment still find the chunk
    assert len({cid for cid, _ in hits}) == len(hits) == 3  # each chunk returned once
    # The BM25 matrix (one row per chunk) is used although the vector labels are more than the chunks.
    assert bm25_matrix(bundle) is not None and bm25_matrix(bundle).n_rows == counts.chunks
    lexical, _ = bm25_ranking(bundle, "zebraplanktón horské jazero", depth=10, published_only=True, engine="matrix")
    assert lexical[0][0] == long_id
    bundle.close()


def _chunk(bundle_path: Path, chunk_id: str) -> Chunk:
    for line in (bundle_path / "chunks.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["chunk_id"] == chunk_id:
            return Chunk(**record)
    raise AssertionError(chunk_id)


def test_incremental_build_reuses_all_segment_rows(seg_repo: RepoBuilder, tmp_path: Path) -> None:
    model = SegmentingHashEmbedder()
    first = build_bundle(seg_repo.path, tmp_path / "store", embedder=model)
    seg_repo.write("docs/short.md", "---\ntitle: Krátka\n---\n# Krátka\n\nZmenený krátky text.\n")
    seg_repo.write("docs/renamed.md", f"---\ntitle: Dlhá\n---\n# Dlhá\n\n{LONG}\n")
    seg_repo.remove("docs/long.md")
    seg_repo.commit()
    second = build_bundle(seg_repo.path, tmp_path / "store", embedder=model)
    scratch = build_bundle(seg_repo.path, tmp_path / "scratch", embedder=model, scratch=True)
    assert second.manifest.built_from == first.bundle_id
    assert second.manifest.stats.embeddings_computed == 1  # only the edited short page
    assert second.manifest.content_digest == scratch.manifest.content_digest
    ids2, vec2 = _rows(second.bundle_path)
    ids_s, vec_s = _rows(scratch.bundle_path)
    assert ids2 == ids_s
    np.testing.assert_allclose(vec2, vec_s, atol=1e-6)


def test_embedding_text_carries_title_authors_tags_and_heading_path() -> None:
    chunk = Chunk(chunk_id="a.md#0", path="a.md", ordinal=0, title="Sieťové protokoly",
                  heading_path=["Úvod", "Ciele"], text="Telo.", tokens=2, sha256="0" * 64, published=True)
    doc = Document(path="a.md", blob_id="0" * 40, size=10, title="Sieťové protokoly", title_source="front_matter",
                   authors=["Ján Holp"],
                   tags=["siete", "tcp"])
    text = embedding_text(chunk, doc)
    assert text == "Sieťové protokoly\nJán Holp\nsiete, tcp\nÚvod > Ciele\n\nTelo."
    assert embedding_text(chunk) == "Sieťové protokoly\nÚvod > Ciele\n\nTelo."


def test_include_limits_the_bundle_to_matching_paths(seg_repo: RepoBuilder, tmp_path: Path,
                                                     hash_embedder) -> None:  # type: ignore[no-untyped-def]
    full = build_bundle(seg_repo.path, tmp_path / "store", embedder=hash_embedder)
    part = build_bundle(seg_repo.path, tmp_path / "store", embedder=hash_embedder, include=["docs/"])
    pattern = build_bundle(seg_repo.path, tmp_path / "store", embedder=hash_embedder, include=["*/x.md"])
    docs = [json.loads(line)["path"] for line in (part.bundle_path / "docs.jsonl").read_text().splitlines()]
    assert sorted(docs) == ["docs/long.md", "docs/short.md"]
    assert part.manifest.config.include == ["docs/"] and not part.manifest.skipped
    assert part.bundle_id != full.bundle_id  # a different selection is a different configuration
    assert pattern.manifest.counts.documents == 1 and full.manifest.counts.documents == 3


@pytest.mark.model
def test_real_model_segments_an_over_long_chunk(repo: RepoBuilder, tmp_path: Path) -> None:
    from artifacts.embedding import load_embedder

    model = load_embedder(MINILM)
    # ~450 cl100k tokens of Slovak become more than MiniLM's 256 word pieces: two or more segments.
    body = " ".join(f"Študent {i} skúma smerovanie v počítačových sieťach." for i in range(60))
    repo.write("a.md", f"# Siete\n\n{body} Záverečná zmienka o fotosyntéze rastlín.\n")
    repo.write("b.md", "# Varenie\n\nRecept na halušky s bryndzou.\n")
    repo.commit()
    result = build_bundle(repo.path, tmp_path / "store", embedder=model)
    ids, _ = _rows(result.bundle_path)
    a_ids = [cid for cid in ids if cid.startswith("a.md")]
    assert len(a_ids) > len(set(a_ids))
    assert result.manifest.config.embedder.max_seq_tokens == 256
    bundle = open_bundle(result.bundle_path, embedder=model)
    hits = vector_ranking(bundle, "photosynthesis in plants", depth=10, published_only=True)
    assert len(hits) == len({cid for cid, _ in hits}) == len(set(ids))
    assert re.match(r"a\.md", hits[0][0])
    bundle.close()


def test_a_bundle_with_another_configuration_donates_its_vectors(seg_repo: RepoBuilder, tmp_path: Path) -> None:
    model = SegmentingHashEmbedder()
    part = build_bundle(seg_repo.path, tmp_path / "store", embedder=model, include=["docs/"])
    # The store now remembers include=docs/ (artifacts.storeconfig): "every file" must be said.
    full = build_bundle(seg_repo.path, tmp_path / "store", embedder=model, include=["*"])
    scratch = build_bundle(seg_repo.path, tmp_path / "scratch", embedder=model, include=["*"])
    assert full.manifest.built_from is None  # another configuration is never an incremental base
    assert full.summary()["vectors_donor"] == part.bundle_id
    assert full.manifest.stats.embeddings_computed == 1  # only other/x.md was not in the donor
    assert full.manifest.content_digest == scratch.manifest.content_digest
    ids_f, vec_f = _rows(full.bundle_path)
    ids_s, vec_s = _rows(scratch.bundle_path)
    assert ids_f == ids_s
    np.testing.assert_allclose(vec_f, vec_s, atol=1e-6)


def test_cap_header_shortens_the_longest_line_first() -> None:
    from artifacts.embedding import cap_header

    def count(text: str) -> int:  # one token per word plus two special tokens
        return len(text.split()) + 2

    header = "Title of page\nAlice\n" + ", ".join(f"tag{i}" for i in range(120)) + "\nPart > Sub"
    capped = cap_header(header, count, 20)
    assert count(capped) - 2 <= 20
    lines = capped.split("\n")
    assert lines[0] == "Title of page" and lines[1] == "Alice" and lines[-1] == "Part > Sub"
    assert lines[2].startswith("tag0, tag1") and "tag119" not in lines[2]
    assert cap_header("Short title", count, 20) == "Short title"
    assert cap_header("a b c", count, 0) == ""


@pytest.mark.model
def test_a_header_longer_than_the_model_input_never_crowds_out_the_body(repo: RepoBuilder,
                                                                        tmp_path: Path) -> None:
    from artifacts import embedding

    share = getattr(embedding, "HEADER_SHARE", 0.25)  # getattr: the test also runs on older code
    model = embedding.load_embedder(MINILM)
    tags = ", ".join(f"značka-{i}" for i in range(120))
    body = " ".join(f"Veta {i} opisuje fotosyntézu rastlín a chlorofyl." for i in range(25))
    repo.write("tags.md", f"---\ntitle: Stránka s mnohými značkami\ntags: [{tags}]\n---\n# Úvod\n\n{body}\n")
    repo.write("other.md", "# Varenie\n\nRecept na halušky s bryndzou.\n")
    repo.commit()
    result = build_bundle(repo.path, tmp_path / "store", embedder=model)
    chunk = next(c for c in (json.loads(x) for x in (result.bundle_path / "chunks.jsonl").read_text().splitlines())
                 if c["path"] == "tags.md")
    head, text = embedding_parts(Chunk.model_validate(chunk), Document(
        path="tags.md", blob_id="0" * 40, size=1, title=chunk["title"], title_source="front_matter",
        tags=[f"značka-{i}" for i in range(120)]))
    segments = model.split_passage(text, head)
    limit = model.spec.max_seq_tokens
    tokenizer = model._model.tokenizer
    for segment in segments:  # every segment fits the model and carries body text after a short header
        assert len(tokenizer(segment)["input_ids"]) <= limit
        header_part, _, body_part = segment.partition("\n\n")
        assert len(tokenizer(header_part, add_special_tokens=False)["input_ids"]) <= limit * share
        assert len(body_part.split()) > 30
    assert len(segments) <= 3
    ids, vectors = _rows(result.bundle_path)
    rows = vectors[[i for i, cid in enumerate(ids) if cid == chunk["chunk_id"]]]
    assert len(rows) == len(segments)
    if len(rows) > 1:  # never identical vectors (the header alone filled the input before)
        assert float(np.max(rows[0] @ rows[1:].T)) < 0.999
