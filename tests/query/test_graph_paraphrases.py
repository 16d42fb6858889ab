"""Paraphrased graph questions from an outside tester, asked of two fixture corpora built without flags.

``tests/data/graph_paraphrases/`` holds a thesis wiki, a blog and ``paraphrases.jsonl`` (questions in
Slovak, Czech and English with hand-computed expected answers; see its README for the rules).  Both
fixtures become real Git repositories, are built **without** ``--graph-schema`` (the preset is
detected) with the hash embedder, and every question is asked through :func:`answer_graph`.

The test fails when any question is answered ``ok`` with a wrong or partial answer, when any
out-of-scope question (``status_not: ok``) is answered ``ok``, or when fewer than 90% are answered
correctly.  It prints accuracy per intent and per language (``pytest -s``); ``python -m
tests.query.test_graph_paraphrases`` prints the same report and every miss.
"""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "graph_paraphrases"
MIN_ACCURACY = 0.90


def _set(items: Any) -> list[str]:
    return sorted(json.dumps(i, ensure_ascii=False, sort_keys=True) for i in items or [])


def judge(expected: dict[str, Any], body: dict[str, Any], all_types: list[str]) -> tuple[str, str]:
    """Return ``(verdict, why)``: ``correct``, ``declined`` (not ok where ok was expected) or ``wrong``
    (ok with a wrong or partial answer, or ok where the question must not be answered)."""
    status, reason = body.get("status"), body.get("reason")
    if "status_not" in expected:
        return ("wrong", "answered ok") if status == expected["status_not"] else ("correct", "")
    if expected["status"] != "ok":
        if (status, reason) == (expected["status"], expected["reason"]):
            return "correct", ""
        return ("wrong" if status == "ok" else "declined"), f"got {status}/{reason}"
    if status != "ok":
        return "declined", f"got {status}/{reason} intent={body.get('intent')}"
    answer = body.get("answer") or {}
    if isinstance(answer, dict) and "authors" in answer and isinstance(answer["authors"], list) \
            and answer["authors"] and isinstance(answer["authors"][0], dict):
        return "wrong", "answer for several authors"
    bad = []
    for key, want in expected.items():
        if key == "status":
            continue
        got = answer.get(key)
        if key == "works":
            ok = _set({k: w.get(k) for k in ("type", "year", "title")} for w in got or []) == _set(want)
        elif key == "work_types" and want is None:
            ok = sorted(got or []) == sorted(all_types)
        elif key == "count":
            ok = got == want == (body.get("aggregation") or {}).get("count")
        elif isinstance(want, list):
            ok = _set(got) == _set(want)
        else:
            ok = got == want
        if not ok:
            bad.append(f"{key}: got {got!r}")
    return ("correct", "") if not bad else ("wrong", "; ".join(bad))


def build_fixtures(tmp: Path, embedder: Any) -> dict[str, Any]:
    """Build ``wiki`` and ``blog`` as Git repositories without ``--graph-schema``; return opened bundles."""
    from indexer.build import build_bundle
    from query.bundle import open_bundle

    bundles = {}
    for corpus in ("wiki", "blog"):
        repo = tmp / corpus
        shutil.copytree(DATA / corpus, repo)
        for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                     ["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", corpus]):
            subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
        result = build_bundle(repo, tmp / f"store-{corpus}", embedder=embedder)
        bundles[corpus] = open_bundle(result.bundle_path, verify=False, load_model=False)
    return bundles


def run_paraphrases(bundles: dict[str, Any], name: str = "paraphrases.jsonl") -> dict[str, Any]:
    """Ask every question of ``name``; return per-question results and per-intent / per-language accuracy."""
    from artifacts.graphmap import mapping_from_config
    from query.graph.dispatch import answer_graph

    rows = [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()
            if line.strip()]
    results = []
    for row in rows:
        bundle = bundles[row["corpus"]]
        mapping = mapping_from_config(bundle.manifest.config.model_dump().get("graph_mapping"))
        all_types = sorted(mapping.works.types) if mapping.works else []
        body = answer_graph(bundle, {"query": row["question"]})
        verdict, why = judge(row["expected"], body, all_types)
        results.append({**row, "verdict": verdict, "why": why, "got_intent": body.get("intent"),
                        "got_status": body.get("status")})

    def table(key: str) -> dict[str, dict[str, Any]]:
        groups: dict[str, list[str]] = collections.defaultdict(list)
        for r in results:
            groups[r[key]].append(r["verdict"])
        return {k: {"n": len(v), "correct": v.count("correct"), "declined": v.count("declined"),
                    "wrong": v.count("wrong"), "accuracy": round(v.count("correct") / len(v), 3)}
                for k, v in sorted(groups.items())}

    correct = sum(r["verdict"] == "correct" for r in results)
    return {"results": results, "per_intent": table("intent"), "per_language": table("lang"),
            "per_corpus": table("corpus"), "n": len(results), "correct": correct,
            "accuracy": correct / len(results)}


def format_report(report: dict[str, Any]) -> str:
    lines = []
    for title in ("per_intent", "per_language", "per_corpus"):
        lines.append(f"{title}:")
        for key, row in report[title].items():
            lines.append(f"  {key:22} {row['correct']:>3}/{row['n']:<3} {row['accuracy']:.3f}"
                         f"  declined {row['declined']}  wrong {row['wrong']}")
    lines.append(f"overall {report['correct']}/{report['n']} = {report['accuracy']:.3f}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def paraphrase_report(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> dict[str, Any]:
    bundles = build_fixtures(tmp_path_factory.mktemp("paraphrases"), hash_embedder)
    try:
        yield run_paraphrases(bundles)
    finally:
        for bundle in bundles.values():
            bundle.close()


def test_presets_are_detected_without_flags(paraphrase_report: dict[str, Any], tmp_path: Path,
                                            hash_embedder: Any) -> None:
    assert paraphrase_report["n"] >= 140
    bundles = build_fixtures(tmp_path, hash_embedder)
    try:
        wiki = bundles["wiki"].manifest.model_extra["graph_mapping_choice"]
        blog = bundles["blog"].manifest.model_extra["graph_mapping_choice"]
        assert (wiki["name"], wiki["source"]) == ("thesis-wiki", "detected")
        assert (blog["name"], blog["source"]) == ("generic", "detected")
        assert "content/authors.yaml" in blog["reason"]
        mapping = bundles["blog"].manifest.config.graph_mapping
        assert mapping["author_names"]["file"] == "content/authors.yaml"
        assert mapping["permalinks"]["field"] == "slug"
    finally:
        for bundle in bundles.values():
            bundle.close()


def test_no_question_is_answered_ok_wrongly(paraphrase_report: dict[str, Any]) -> None:
    print("\n" + format_report(paraphrase_report))
    wrong = [(r["id"], r["question"], r["why"]) for r in paraphrase_report["results"] if r["verdict"] == "wrong"]
    assert wrong == []


def test_out_of_scope_questions_are_never_ok(paraphrase_report: dict[str, Any]) -> None:
    out_of_scope = [r for r in paraphrase_report["results"] if "status_not" in r["expected"]]
    assert len(out_of_scope) >= 16
    assert [r["id"] for r in out_of_scope if r["got_status"] == "ok"] == []


def test_paraphrase_accuracy_is_at_least_90_percent(paraphrase_report: dict[str, Any]) -> None:
    declined = [(r["id"], r["question"], r["why"]) for r in paraphrase_report["results"] if r["verdict"] != "correct"]
    assert paraphrase_report["accuracy"] >= MIN_ACCURACY, declined
    for language, row in paraphrase_report["per_language"].items():
        assert row["n"] >= 10, language


if __name__ == "__main__":  # a report with every miss: python -m tests.query.test_graph_paraphrases
    import tempfile

    from artifacts.embedding import load_embedder

    with tempfile.TemporaryDirectory() as tmp:
        opened = build_fixtures(Path(tmp), load_embedder("hash-64"))
        report = run_paraphrases(opened, next((a for a in sys.argv[1:] if a.endswith(".jsonl")),
                                              "paraphrases.jsonl"))
        for r in report["results"]:
            if r["verdict"] != "correct":
                print(f"{r['verdict']:8} {r['id']} [{r['intent']}->{r['got_intent']}] {r['question']} :: {r['why']}")
        print(format_report(report))
        if "--json" in sys.argv:
            print(json.dumps(report, ensure_ascii=False, indent=1))
        for b in opened.values():
            b.close()


def test_heldout_questions_written_after_the_vocabulary(paraphrase_report: dict[str, Any], tmp_path: Path,
                                                        hash_embedder: Any) -> None:
    """``heldout.jsonl``: 37 phrasings written by the implementer after the vocabulary was fixed,
    with the tester's expected values for the same facts (first run: 34/37, two wrong ``ok``)."""
    bundles = build_fixtures(tmp_path, hash_embedder)
    try:
        report = run_paraphrases(bundles, "heldout.jsonl")
    finally:
        for bundle in bundles.values():
            bundle.close()
    print("\nheld-out:\n" + format_report(report))
    assert [r["id"] for r in report["results"] if r["verdict"] == "wrong"] == []
    assert report["accuracy"] >= MIN_ACCURACY
