"""A build over the inputs of issue 12/13: what is skipped and why, what reaches the text index."""

from __future__ import annotations

import json
from pathlib import Path

from artifacts import config
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.bm25 import bm25_ranking
from tests.conftest import RepoBuilder

LFS = ("version https://git-lfs.github.com/spec/v1\n"
       "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n")
BOMB = ("---\ns: &s " + "x" * 1800 + "\n" + "a: &a [" + ", ".join(["*s"] * 10) + "]\n"
        + "b: &b [" + ", ".join(["*a"] * 10) + "]\n" + "c: &c [" + ", ".join(["*b"] * 10) + "]\n"
        + "d: [" + ", ".join(["*c"] * 85) + "]\n---\nBody\n")
PASTED = ("# Pasted from Word\n\nBefore <!--StartFragment--><w:p><w:r><w:t>Hello quokka</w:t></w:r></w:p>"
          "<!--EndFragment--> after.\n\n<!--\n## Draft section\nzanzibar draft words\n-->\n")


def test_build_skips_with_reasons_and_keeps_hidden_html_out_of_the_index(repo: RepoBuilder, tmp_path: Path,
                                                                         hash_embedder) -> None:  # type: ignore[no-untyped-def]
    repo.write("big.bin.md", LFS)
    repo.write("bomb.md", BOMB)
    repo.write("hugo.md", '+++\ntitle = "Hugo page"\ntags = ["toml"]\n+++\nTOML body text.\n')
    repo.write("pasted.md", PASTED)
    repo.write("setext.md", "Setext page\n===========\n\nIntro.\n\nSecond part\n-----------\n\nMore.\n")
    repo.write("norway.md", "---\ntitle: No\npublished: off\ntags: [en, no]\n---\nText.\n")
    repo.commit()
    result = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    m = result.manifest
    assert [(s.path, s.reason) for s in m.skipped] == [("big.bin.md", "lfs_pointer"),
                                                       ("bomb.md", "front_matter_too_large")]
    recorded = m.config.model_dump()
    assert (recorded.get("parser_version"), recorded.get("chunking_version")) == (4, 3) == (
        config.PARSER_VERSION, config.CHUNKING_VERSION)
    assert m.config.embedding_input_version == config.EMBEDDING_INPUT_VERSION == 4
    docs = {d["path"]: d for d in map(json.loads, (result.bundle_path / "docs.jsonl").read_text().splitlines())}
    assert sorted(docs) == ["hugo.md", "norway.md", "pasted.md", "setext.md"]
    assert (docs["hugo.md"]["title"], docs["hugo.md"]["tags"], docs["hugo.md"]["body"]) == (
        "Hugo page", ["toml"], "TOML body text.\n")
    assert (docs["norway.md"]["title"], docs["norway.md"]["published"]) == ("No", True)
    assert "StartFragment" in docs["pasted.md"]["body"]  # the raw body keeps it
    chunks = [json.loads(x) for x in (result.bundle_path / "chunks.jsonl").read_text().splitlines()]
    setext = [c["heading_path"] for c in chunks if c["path"] == "setext.md"]
    assert setext in ([["Setext page"]], [["Setext page"], ["Setext page", "Second part"]])
    bundle = open_bundle(result.bundle_path, embedder=hash_embedder)
    try:
        def top(query: str) -> list[str]:
            hits, _ = bm25_ranking(bundle, query, depth=10, published_only=True)
            return [bundle.chunks[bundle.chunk_index[cid]].path for cid, *_ in hits]

        assert top("quokka")[:1] == ["pasted.md"]
        assert top("StartFragment") == [] and top("zanzibar") == [] and top("Draft section") == []
    finally:
        bundle.close()


def test_a_front_matter_description_is_searched_and_a_store_of_older_bundles_embeds_only_it(
        repo: RepoBuilder, tmp_path: Path, hash_embedder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import indexer.build
    import indexer.chunking
    from artifacts.config import BuildConfig
    from query.search.fusion import rank_chunks
    from query.search.request import SearchOptions, parse_search_request
    from query.search.response import search

    repo.write("rozhovor.md", "---\ntitle: Rozhovor o komunitě\ndescription: Jakub Nešetřil vybudoval a v roce 2017 "
               "prodal technologickou firmu Apiary.\n---\n# Rozhovor\n\nOtázka o dobrovolnících a odpověď.\n\n"
               "## Druhá část\n\nDalší otázka o státu.\n")
    repo.write("jine.md", "---\ntitle: Jiné\ndescription: Text o něčem jiném.\n---\nText o něčem jiném.\n")
    repo.commit()
    store = tmp_path / "store"
    with monkeypatch.context() as old:  # what gitrag wrote before: chunking version 2, no description chunks
        old.setattr(indexer.chunking, "_front_matter_pieces", lambda doc, cfg: [])
        old.setattr(indexer.build, "BuildConfig", lambda **kw: BuildConfig(chunking_version=2, **kw))
        before = build_bundle(repo.path, store, embedder=hash_embedder)
    assert before.manifest.config.chunking_version == 2 and before.manifest.stats.embeddings_computed == 2
    after = build_bundle(repo.path, store, embedder=hash_embedder)
    assert after.bundle_id != before.bundle_id and after.manifest.config.chunking_version == config.CHUNKING_VERSION
    # a new configuration: no incremental base, every document re-chunked, but the vectors of the unchanged
    # chunks come from the older bundle (same embedder and embedding input): only the description is embedded
    assert (after.manifest.stats.embeddings_computed, after.manifest.stats.embeddings_reused) == (1, 2)
    bundle = open_bundle(after.bundle_path, embedder=hash_embedder)
    try:
        described = bundle.chunks[bundle.chunk_index["rozhovor.md#0"]]
        assert (described.heading_path, described.text) == (
            ["description"], "Jakub Nešetřil vybudoval a v roce 2017 prodal technologickou firmu Apiary.")
        # jine.md's description is its body: not indexed twice
        assert [c.heading_path for c in bundle.chunks if c.path == "jine.md"] == [[]]
        ranking = rank_chunks(bundle, "Apiary Nešetřil", depth=10)  # both arms see the description chunk
        assert ranking.bm25[0][0] == ranking.vector[0][0] == "rozhovor.md#0"
        body = search(bundle, parse_search_request({"query": "firmu Apiary"}), SearchOptions())
        top = body["results"][0]
        assert (top["chunk_id"], top["heading_path"], top["match"]) == ("rozhovor.md#0", ["description"], "both")
        assert "**Apiary**" in top["snippet"]
    finally:
        bundle.close()
