"""Evidence packing (query.answer.rag) on real bundles: token budget, per-document limit, lead sections, gate."""

from __future__ import annotations

from typing import Any

import pytest

from artifacts.config import ChunkConfig
from indexer.build import build_bundle
from indexer.chunking import count_tokens as indexer_count_tokens
from query.answer.graph_evidence import render_facts
from query.answer.rag import count_tokens, pack_chunks, question_weights, support, text_context
from query.bundle import open_bundle
from tests.conftest import RepoBuilder


def _long_page() -> str:
    sections = "".join(
        f"## Kapitola {i}\n\n" + " ".join(f"Veta {i}.{j} o téme číslo {i} a zebroidoch." for j in range(40)) + "\n\n"
        for i in range(1, 6)
    )
    return "---\ntitle: Dlhá stránka\n---\n\n# Dlhá stránka\n\nÚvod: táto stránka opisuje zebroidy.\n\n" + sections


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("rag")
    repo = RepoBuilder(tmp / "repo")
    repo.write("long.md", _long_page())
    repo.write("other.md", "# Iná\n\nTlačiareň sa zapína zeleným tlačidlom.\n")
    commit = repo.commit("pages")
    result = build_bundle(repo.path, tmp / "store", commit, embedder=hash_embedder,
                          chunking=ChunkConfig(max_tokens=120, overlap_tokens=10, min_tokens=20))
    opened = open_bundle(result.bundle_path, verify=False, embedder=hash_embedder)
    yield opened
    opened.close()


def test_token_count_is_the_indexers(bundle: Any) -> None:
    chunk = bundle.chunks[0]
    assert count_tokens(chunk.text) == indexer_count_tokens(chunk.text) == chunk.tokens


def test_budget_is_respected_and_named(bundle: Any) -> None:
    ids = [c.chunk_id for c in bundle.chunks if c.path == "long.md" and c.ordinal > 0]
    assert len(ids) >= 4
    budget = bundle.chunks[bundle.chunk_index[ids[0]]].tokens + 5
    ctx = pack_chunks(bundle, ids, max_tokens=budget, max_items=10, max_per_document=10)
    assert ctx.tokens <= budget
    assert sum(item.tokens for item in ctx.items) == ctx.tokens
    assert "llm_context_budget" in ctx.truncation_reasons
    assert [item.evidence_id for item in ctx.items] == [f"E{i}" for i in range(1, len(ctx.items) + 1)]


def test_per_document_limit_and_lead_section(bundle: Any) -> None:
    mids = [c.chunk_id for c in bundle.chunks if c.path == "long.md" and c.ordinal >= 2]
    ctx = pack_chunks(bundle, mids, max_tokens=10_000, max_items=10, max_per_document=2)
    chunk_items = [i for i in ctx.items if i.chunk_id != "long.md#0"]
    assert len(chunk_items) == 2
    assert "evidence_limit" in ctx.truncation_reasons
    # the lead section follows the ranked chunks
    assert ctx.items[-1].chunk_id == "long.md#0" and len(ctx.items) == 3
    item = ctx.items[0]
    assert item.commit == bundle.manifest.commit and item.source_id == "S1"
    assert item.heading_path and item.heading_path[-1].startswith("Kapitola")
    assert item.text == bundle.chunks[bundle.chunk_index[item.chunk_id]].text


def test_no_lead_without_budget(bundle: Any) -> None:
    mid = next(c for c in bundle.chunks if c.path == "long.md" and c.ordinal == 3)
    ctx = pack_chunks(bundle, [mid.chunk_id], max_tokens=mid.tokens, max_items=10)
    assert [i.chunk_id for i in ctx.items] == [mid.chunk_id]


def test_support_gate(bundle: Any) -> None:
    weights = question_weights(bundle, "Zapína sa tlačiareň tlačidlom?")
    assert "sa" not in weights  # function words of two letters do not count
    assert support(weights, "Tlačiareň sa zapína zeleným tlačidlom.") == 1.0
    # an inflected form counts through its stem prefix; a word the pages never use weighs most
    assert support(weights, "Tlačiarne sa zapínajú.") == pytest.approx(
        (weights["zapina"] + weights["tlaciaren"]) / sum(weights.values()))
    assert support(weights, "Úplne iná veta.") == 0.0
    assert text_context(bundle, "Kto vyhral futbalové majstrovstvá?", max_tokens=3000).items == []
    hit = text_context(bundle, "Zapína sa tlačiareň zeleným tlačidlom?", max_tokens=3000)
    assert hit.items and hit.items[0].document_path == "other.md"


def test_restricted_to_paths(bundle: Any) -> None:
    ctx = text_context(bundle, "zebroidy kapitola", max_tokens=3000, paths={"long.md"})
    assert ctx.items and {i.document_path for i in ctx.items} == {"long.md"}
    none = text_context(bundle, "tlačiareň zapína", max_tokens=3000, paths={"long.md"})
    assert none.items == []



def test_graph_facts_are_phrased_with_words_not_predicate_names() -> None:
    facts = [{"subject": "content/posts/hackday.md", "predicate": "authored_by", "object": "Tomáš Znamenáček"},
             {"subject": "Ján Holp", "predicate": "supervised_by", "object": "Daniel Hládek"}]
    assert render_facts(facts) == ["content/posts/hackday.md: autor Tomáš Znamenáček.",
                                   "Ján Holp: vedúci práce Daniel Hládek."]
