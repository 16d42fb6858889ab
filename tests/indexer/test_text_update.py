"""Incremental text index: the parent's Whoosh segments plus one new segment, BM25 from a matrix equal to scratch."""

from __future__ import annotations

import json
from pathlib import Path

from artifacts.store import verify_bundle
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.bm25 import bm25_ranking
from tests.conftest import RepoBuilder

QUERIES = ("plankton", "horské jazerá", "jazera", "novy text", "strana 7", "sieť", "planktón v jazere",
           "premenovaná", "úplne nová stránka", "stranaa", "text o", "obsah 11")


def _doc(title: str, body: str) -> str:
    return f"---\ntitle: {title}\ntags: [t{len(title) % 3}]\n---\n# {title}\n\n{body}\n"


def _chunk_paths(bundle_path: Path) -> list[str]:
    return [json.loads(line)["path"] for line in (bundle_path / "chunks.jsonl").read_text().splitlines()]


def _files(bundle_path: Path, folder: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((bundle_path / folder).iterdir())}


def _assert_same_bm25(a_path: Path, b_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    a = open_bundle(a_path, embedder=hash_embedder)
    b = open_bundle(b_path, embedder=hash_embedder)
    try:
        for query in QUERIES:
            for published in (True, False):
                hits_a = bm25_ranking(a, query, depth=20, published_only=published)
                hits_b = bm25_ranking(b, query, depth=20, published_only=published)
                assert hits_a == hits_b, query
            # (Whole searches may differ: the dense arm's updated hnswlib index is approximate.)
        assert any(bm25_ranking(a, q, depth=5, published_only=True)[0] for q in QUERIES)
    finally:
        a.close()
        b.close()


def test_incremental_text_index_equals_scratch_bm25(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    for i in range(40):
        body = f"Horské jazerá a plankton {i}. " * (i + 1) + f"\n\n## Obsah {i}\n\nSieť."
        repo.write(f"p{i}.md", _doc(f"Strana {i}", body))
    repo.commit()
    store = tmp_path / "inc"
    first = build_bundle(repo.path, store, embedder=hash_embedder)
    repo.write("p3.md", _doc("Strana 3", "Úplne nový text o planktóne."))        # changed
    repo.remove("p5.md")                                                          # deleted
    repo.write("new.md", _doc("Úplne nová stránka", "Nový text o horských jazerách."))  # added
    repo.move("p7.md", "moved/premenovaná.md")                                    # renamed
    repo.commit()
    inc = build_bundle(repo.path, store, embedder=hash_embedder)
    reuse = inc.manifest.model_extra["index_reuse"]["text"]
    assert reuse["from"] == first.bundle_id and reuse["segments"] == 2
    base_chunks = [json.loads(line) for line in (first.bundle_path / "chunks.jsonl").read_text().splitlines()]
    gone = [c for c in base_chunks if c["path"] in {"p3.md", "p5.md", "p7.md"}]
    fresh = [p for p in _chunk_paths(inc.bundle_path) if p in {"p3.md", "new.md", "moved/premenovaná.md"}]
    assert reuse["deleted"] == len(gone) > 0 and reuse["added"] == len(fresh) > 0
    scratch = build_bundle(repo.path, tmp_path / "scratch", embedder=hash_embedder, scratch=True)
    assert scratch.manifest.model_extra["index_reuse"]["text"]["from"] is None
    assert inc.manifest.content_digest == scratch.manifest.content_digest
    # The BM25 matrix is byte for byte a scratch build's; Whoosh's own files are not.
    assert _files(inc.bundle_path, "bm25") == _files(scratch.bundle_path, "bm25")
    assert _files(inc.bundle_path, "text") != _files(scratch.bundle_path, "text")
    _assert_same_bm25(inc.bundle_path, scratch.bundle_path, hash_embedder)
    # The base bundle was only read.
    assert verify_bundle(first.bundle_path).content_digest == first.manifest.content_digest

    # A second incremental build on top: three segments, still equal to scratch.
    repo.write("p9.md", _doc("Strana 9", "Sieť planktón v jazere."))
    repo.commit()
    inc2 = build_bundle(repo.path, store, embedder=hash_embedder)
    assert inc2.manifest.model_extra["index_reuse"]["text"]["segments"] == 3
    scratch2 = build_bundle(repo.path, tmp_path / "scratch2", embedder=hash_embedder, scratch=True)
    assert _files(inc2.bundle_path, "bm25") == _files(scratch2.bundle_path, "bm25")
    _assert_same_bm25(inc2.bundle_path, scratch2.bundle_path, hash_embedder)


def test_incremental_graph_parses_only_changed_documents(repo: RepoBuilder, tmp_path: Path, hash_embedder,
                                                        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from indexer import graph_extract

    for i in range(6):
        repo.write(f"p{i}.md", _doc(f"Strana {i}", f"Úvod {i}.\n\n## Časť {i}\n\nText.\n\nNadpis\n------\n\nViac."))
    repo.commit()
    store = tmp_path / "store"
    first = build_bundle(repo.path, store, embedder=hash_embedder)
    assert '"outline"' in (first.bundle_path / "docs.jsonl").read_text(encoding="utf-8")
    repo.write("p2.md", _doc("Strana 2", "Nový úvod.\n\n## Iná časť\n\nText."))
    repo.commit()
    unrecorded: list[str] = []  # documents the graph would have to parse (no recorded outline)
    real = graph_extract.document_outline
    monkeypatch.setattr(graph_extract, "document_outline",
                        lambda doc: (doc.outline is None and unrecorded.append(doc.path)) or real(doc))
    inc = build_bundle(repo.path, store, embedder=hash_embedder)
    assert unrecorded == []  # unchanged pages keep their outline from the parent's docs.jsonl
    scratch = build_bundle(repo.path, tmp_path / "scratch", embedder=hash_embedder, scratch=True)
    assert inc.manifest.digests["graph"] == scratch.manifest.digests["graph"]
