"""Slow: /answer's pipeline on the shared thesis wiki and its gold questions (dev split, HEAD).

Built with the hash-64 embedder (the graph and BM25 carry these questions); the published
figures use MiniLM through ``gitrag eval --answers`` (see the notes / README).
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from indexer.build import build_bundle
from query.answer.generators import make_generator
from query.bundle import open_bundle
from query.eval.answers import evaluate_answers, load_answer_questions, totals
from query.search.request import SearchOptions
from tests.conftest import require_shared

pytestmark = pytest.mark.slow


def test_gold_dev_with_the_extractive_generator(tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    corpus = require_shared("corpora/thesis-wiki.bundle")
    gold = require_shared("corpora/thesis-wiki.gold.json")
    repo = tmp_path / "tw"
    subprocess.run(["git", "clone", "-q", str(corpus), str(repo)], check=True)
    result = build_bundle(repo, tmp_path / "store", embedder=hash_embedder)
    questions, _, _ = load_answer_questions(gold)
    dev = [q for q in questions if q.split == "dev" and not q.commit]
    bundle = open_bundle(result.bundle_path, verify=False, embedder=hash_embedder)
    try:
        rows = asyncio.run(evaluate_answers(bundle, dev, make_generator("extractive", {}), SearchOptions()))
    finally:
        bundle.close()
    t = totals(rows)
    assert t["unsupported_claims"] == 0
    assert t["refusal_accuracy"] == 1.0
    assert t["false_refusal_rate"] <= 0.05
    graph_kinds = [r for r in rows if r["kind"] in ("year_of_work", "title_of_work", "works_of_person",
                                                    "persons_with_work_in_year", "common_tags")]
    assert sum(r["correct"] for r in graph_kinds) >= 0.9 * len(graph_kinds)
    assignments = [r for r in rows if r["kind"] == "content_assignment"]
    assert assignments and all(set(r["cited_documents"]) == set(r["relevant"]) for r in assignments)
    assert sum(r["found"] for r in assignments) >= 0.8 * sum(r["expected"] for r in assignments)
