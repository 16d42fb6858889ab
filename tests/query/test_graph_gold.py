"""The thesis-wiki gold questions (shared corpus) on a bundle built WITHOUT ``--graph-schema``.

The preset must be detected from the corpus, and every question of every split (except
``content_assignment``, which must point to ``/search``, and ``historical_at_commit``, which
``bench/graph_eval.py`` covers by building old commits) is scored by the bench's own exact scorer.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_shared

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _scorer() -> Any:
    spec = importlib.util.spec_from_file_location("graph_eval", ROOT / "bench" / "graph_eval.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.score


def test_gold_questions_without_flags(tmp_path: Path, hash_embedder: Any) -> None:
    from indexer.build import build_bundle
    from query.bundle import open_bundle
    from query.graph.dispatch import answer_graph

    gold = json.loads(require_shared("corpora/thesis-wiki.gold.json").read_text(encoding="utf-8"))
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(require_shared("corpora/thesis-wiki.bundle")), str(repo)], check=True)
    result = build_bundle(repo, tmp_path / "store", gold["head"], embedder=hash_embedder)
    assert result.manifest.model_extra["graph_mapping_choice"]["name"] == "thesis-wiki"
    score = _scorer()
    per_kind: dict[str, list[bool]] = collections.defaultdict(list)
    bundle = open_bundle(result.bundle_path, verify=False, load_model=False)
    try:
        for q in gold["questions"]:
            if q["kind"] == "historical_at_commit":
                continue
            body = answer_graph(bundle, {"query": q["question"]})
            if q["kind"] == "content_assignment":
                per_kind[q["kind"]].append(body["reason"] == "unsupported_question"
                                           and body["suggested_endpoint"] == "/search")
                continue
            per_kind[q["kind"]].append(score(q["kind"], q["expected"], body)[0])
    finally:
        bundle.close()
    scored = [ok for kind, oks in per_kind.items() if kind != "content_assignment" for ok in oks]
    assert len(scored) >= 120
    assert sum(scored) / len(scored) >= 0.97, {k: f"{sum(v)}/{len(v)}" for k, v in per_kind.items()}
    for kind in ("no_answer_unknown_person", "no_answer_unknown_year", "ambiguous_person", "content_assignment"):
        assert all(per_kind[kind]), kind
