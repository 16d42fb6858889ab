"""``gitrag eval --answers`` on a tiny thesis wiki (real Git, real builds with the hash embedder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from query.bundle import open_bundle
from query.cli.eval import eval_command
from query.eval.answers import folded, recheck_claim, score_body, totals
from tests.query.answer_wiki import build_wiki

QUESTIONS = [
    {"id": "q1", "question": "Aké práce má Ján Holp?", "relevant": ["pages/students/2016/jan_holp/README.md"],
     "expected": ["Prepis súdnych nahrávok", "2019", "2021"], "split": "dev"},
    {"id": "q2", "question": "Čo je v zadaní diplomovej práce Jána Holpa?",
     "relevant": ["pages/students/2016/jan_holp/README.md"],
     "expected": ["Natrénujte akustický model pre slovenčinu."], "split": "dev"},
    {"id": "q3", "question": "Kto vyhral majstrovstvá sveta vo futbale?", "relevant": [], "split": "dev"},
    {"id": "q4", "question": "Aké práce má Peter Lukáč?", "relevant": [], "should_answer": False, "split": "dev"},
    {"id": "q5", "question": "Koľko študentov má prácu v roku 2018?", "split": "test",
     "relevant": ["pages/students/2015/petra_strakova/README.md", "pages/students/2015/martin_kovac/README.md"],
     "expected": ["2", "Petra Straková", "Martin Kováč"]},
]


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> dict[str, Any]:
    return build_wiki(tmp_path_factory.mktemp("evalwiki"), hash_embedder)


def test_eval_answers_cli_and_reproduce(wiki: dict[str, Any], tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS), encoding="utf-8")
    out = tmp_path / "result.json"
    args = ["--answers", "--questions", str(questions), "--repo", str(wiki["repo"].path), "--store",
            str(wiki["store"]), "--embedder", "hash-64", "--json", "--out", str(out)]
    result = CliRunner().invoke(eval_command, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    t = data["totals"]
    rows = {r["id"]: r for r in data["questions"]}
    assert (rows["q1"]["correct"], rows["q1"]["engine"], rows["q1"]["found"]) == (True, "graph", 3)
    assert rows["q2"]["correct"] and rows["q2"]["engine"] == "graph+text", rows["q2"]
    assert rows["q3"]["status"] == "no_answer" and rows["q3"]["correct"]
    assert (rows["q4"]["reason"], rows["q4"]["correct"]) == ("unknown_person", True)
    assert rows["q5"]["correct"] and set(rows["q5"]["cited_documents"]) == set(QUESTIONS[4]["relevant"])
    assert (t["answer_accuracy"], t["false_refusal_rate"], t["refusal_accuracy"]) == (1.0, 0.0, 1.0)
    assert (t["citation_precision"], t["citation_recall"], t["unsupported_claims"]) == (1.0, 1.0, 0)
    assert t["latency_ms"]["p50"] is not None and data["generator"]["name"] == "extractive"
    assert data["bundles"][wiki["commit"]]["content_digest"]

    again = CliRunner().invoke(eval_command, ["--answers", "--reproduce", str(out)])
    assert again.exit_code == 0, again.output
    assert "reproduced" in again.output

    dev = CliRunner().invoke(eval_command, args[:-2] + ["--split", "test"])
    assert dev.exit_code == 0 and json.loads(dev.stdout)["totals"]["questions"] == 1


def test_scoring_and_independent_recheck(wiki: dict[str, Any], hash_embedder: Any) -> None:
    from query.eval.answers import AnswerQuestion

    bundle = open_bundle(wiki["result"].bundle_path, verify=False, embedder=hash_embedder)
    try:
        chunk = next(c for c in bundle.chunks if c.path == "pages/info/sprievodca.md" and "zeleným" in c.text)
        good = {"text": "Tlačiareň sa zapína zeleným tlačidlom.", "source_ids": ["S1"], "evidence": [
            {"evidence_id": "E1", "source_id": "S1", "chunk_id": chunk.chunk_id, "document_path": chunk.path,
             "quote": "sa zapína zeleným tlačidlom"}]}
        assert recheck_claim(bundle, good) == []
        moved = {**good, "evidence": [{**good["evidence"][0], "chunk_id": "pages/info/pokyny.md#0",
                                       "document_path": "pages/info/pokyny.md"}]}
        assert recheck_claim(bundle, moved)  # the quote is not on the page it cites
        assert recheck_claim(bundle, {**good, "evidence": []}) == ["no evidence"]
        year = {**good, "text": "Od roku 2019 sa tlačiareň zapína zeleným tlačidlom."}
        assert recheck_claim(bundle, year)  # 2019 is not in that chunk
        q = AnswerQuestion("x", "?", "jsonl", True, ("ZELENÝM tlačidlom",), ("pages/info/sprievodca.md",))
        row = score_body(q, {"status": "ok", "answer": "Tlačiareň sa zapína zelenym tlacidlom. [S1]",
                             "claims": [good], "sources": [{"document_path": chunk.path}]}, bundle, 12.0)
        assert row["correct"] and row["correct_citations"] == 1 and row["unsupported_claims"] == []
        assert folded("Ján  HOLP") == folded("jan holp")
        assert totals([row])["answer_accuracy"] == 1.0
    finally:
        bundle.close()


def test_scoring_reads_like_a_reader() -> None:
    """Whole-number matching, a cited relevant page required, partial answers counted apart."""
    from query.eval.answers import AnswerQuestion, score_body, totals

    def body(text: str, cited: list[str]) -> dict:
        return {"status": "ok", "answer": text, "claims": [],
                "sources": [{"document_path": p} for p in cited]}

    three = AnswerQuestion("q1", "How many?", "jsonl", True, ("3",), ("a.md",))
    assert not score_body(three, body("Dynamics 365 is used.", ["a.md"]), None, 1.0)["correct"]  # type: ignore[arg-type]
    assert score_body(three, body("It has 3 parts.", ["a.md"]), None, 1.0)["correct"]  # type: ignore[arg-type]
    assert not score_body(three, body("It has 3 parts.", ["b.md"]), None, 1.0)["correct"]  # type: ignore[arg-type]
    two = AnswerQuestion("q2", "Which two?", "jsonl", True, ("alpha", "beta"), ("a.md",))
    half = score_body(two, body("Only alpha.", ["a.md"]), None, 1.0)  # type: ignore[arg-type]
    assert half["partial"] and not half["correct"]
    none = AnswerQuestion("q3", "Unanswerable?", "jsonl", False, (), ())
    wrong = score_body(none, body("Something.", ["a.md"]), None, 1.0)  # type: ignore[arg-type]
    t = totals([half, wrong])
    assert t["partial_rate"] == 1.0 and t["wrong_rate"] == 0.5
