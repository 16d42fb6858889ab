"""gitrag eval: strict question files, per-engine metrics on a real bundle, and --reproduce."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from artifacts.cli import main
from query.eval.retrieval import QuestionFileError, compare_results, load_questions, select_questions
from query.search.request import SearchOptions
from tests.conftest import RepoBuilder


def _write(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)
                              for line in lines) + "\n", encoding="utf-8")
    return path


def test_a_broken_question_file_is_rejected_with_every_problem(tmp_path: Path) -> None:
    path = _write(tmp_path / "q.jsonl", [
        {"id": "a", "question": "ok", "relevant": ["x.md"]},
        {"id": "a", "question": "again", "relevant": ["y.md"]},          # duplicate id
        {"id": "b", "relevant": ["x.md"]},                                # missing question
        {"id": "c", "question": "q", "relevant": "x.md"},                 # relevant not a list
        {"id": "d", "question": "q", "relevant": [], "filter": {"bogus": 1}},  # invalid filter
        {"id": "e", "question": "q", "relevant": [], "relevnt": []},      # unknown field
        "{not json",
        {"id": "f", "question": "q", "relevant": ["x.md", "x.md"]},      # a path twice
        {"id": "g", "question": "q", "relevant": [], "answers": "308"},   # answers not a list
        {"id": "h", "question": "q", "relevant": [], "filter": {"year": "2020"}},  # year as a string
    ])
    with pytest.raises(QuestionFileError) as info:
        load_questions(path)
    problems = "\n".join(info.value.problems)
    assert "duplicate id" in problems and "missing field 'question'" in problems
    assert "line 4: 'relevant' must be a list" in problems and "line 5: 'filter'" in problems
    assert "unknown field(s) relevnt" in problems and "line 7: invalid JSON" in problems
    assert "line 8: 'relevant' lists a path twice" in problems
    assert "line 9: 'answers' must be a list of strings" in problems
    assert "line 10: 'filter' is not a valid filter object (bad or unknown key: year" in problems
    assert "bad or unknown key: bogus" in problems
    with pytest.raises(QuestionFileError):
        load_questions(_write(tmp_path / "empty.jsonl", [""]))


def test_gold_json_expected_sources_are_the_relevant_documents(tmp_path: Path) -> None:
    path = tmp_path / "gold.json"
    path.write_text(json.dumps({"format": "thesis-wiki-gold/1", "questions": [
        {"id": "g1", "question": "Kto?", "expected_sources": ["a.md"], "split": "dev", "kind": "x"},
        {"id": "g2", "question": "Nikto?", "expected_sources": [], "split": "dev"},
        {"id": "g3", "question": "Kedysi?", "expected_sources": ["a.md"], "split": "dev", "commit": "abc123"},
        {"id": "g4", "question": "Test?", "expected_sources": ["a.md"], "split": "test"},
    ]}), encoding="utf-8")
    qset = load_questions(path)
    assert qset.format == "thesis-wiki-gold/1" and qset.questions[0].relevant == ("a.md",)
    chosen, skipped = select_questions(qset, "dev", "f" * 40)
    assert [q.id for q in chosen] == ["g1"]
    assert skipped == {"other_split": 1, "other_commit": 1, "no_relevant": 1}
    chosen, _ = select_questions(qset, "all", "abc123" + "0" * 34)
    assert [q.id for q in chosen] == ["g1", "g3", "g4"]


@pytest.fixture
def wiki(repo: RepoBuilder) -> RepoBuilder:
    repo.write("cs/sit.md", "---\ntitle: Počítačové sítě\ntags: [sítě]\n---\n# Počítačové sítě\n\n"
                            "Směrování paketů mezi routery a protokol OSPF.\n")
    repo.write("cs/kava.md", "---\ntitle: Káva\n---\n# Káva\n\nPražení kávových zrn a espresso.\n")
    repo.write("de/netz.md", "---\ntitle: Netzwerke\n---\n# Netzwerke\n\nRouting von Paketen mit OSPF.\n")
    repo.write("de/kaffee.md", "---\ntitle: Kaffee\n---\n# Kaffee\n\nRösten von Kaffeebohnen und Espresso.\n")
    repo.commit("first")
    return repo


def test_eval_reports_metrics_per_engine_and_reproduces(wiki: RepoBuilder, tmp_path: Path) -> None:
    questions = _write(tmp_path / "q.jsonl", [
        {"id": "q1", "question": "směrování paketů OSPF", "relevant": ["cs/sit.md"], "split": "dev",
         "filter": {"path_prefix": "cs/"}},
        {"id": "q2", "question": "Kaffeebohnen rösten", "relevant": ["de/kaffee.md"], "split": "dev"},
        {"id": "q3", "question": "espresso", "relevant": ["cs/kava.md"], "split": "test",
         "filter": {"path_prefix": "cs/"}},
    ])
    store, out = tmp_path / "store", tmp_path / "result.json"
    runner = CliRunner()
    args = ["eval", "--questions", str(questions), "--repo", str(wiki.path), "--store", str(store),
            "--embedder", "hash-64", "--split", "dev", "--out", str(out), "--json"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)  # progress of the build goes to stderr
    assert set(body["engines"]) == {"bm25", "vector", "hybrid"}
    assert set(body["engines"]["bm25"]) == {"hit@1", "hit@3", "hit@5", "mrr", "recall@5", "ndcg@10"}
    assert body["engines"]["bm25"]["hit@1"] == 1.0 and body["engines"]["hybrid"]["hit@1"] == 1.0
    assert [q["id"] for q in body["questions"]] == ["q1", "q2"]
    assert body["questions"][0]["ranks"]["bm25"] == 1
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert saved["dataset_sha256"] and saved["embedder"]["model_id"] == "hash-64" and saved["tool_version"]
    assert saved["index_version"]["bundle_id"].startswith(saved["index_version"]["commit"])
    assert saved["config"]["search"] == SearchOptions().retrieval_config()

    # A later commit changes the corpus; --reproduce still evaluates the recorded commit.
    wiki.write("cs/novy.md", "---\ntitle: Nový\n---\n# Nový\n\nSměrování paketů OSPF OSPF OSPF.\n")
    wiki.commit("second")
    again = runner.invoke(main, ["eval", "--reproduce", str(out)])
    assert again.exit_code == 0, again.output
    assert "reproduced" in again.output

    tampered = dict(saved, engines={**saved["engines"], "bm25": {**saved["engines"]["bm25"], "mrr": 0.1}})
    (tmp_path / "tampered.json").write_text(json.dumps(tampered), encoding="utf-8")
    failed = runner.invoke(main, ["eval", "--reproduce", str(tmp_path / "tampered.json")])
    assert failed.exit_code == 1 and "bm25 mrr: 0.1 -> 1.0" in failed.output
    assert compare_results(saved, saved) == []


def test_eval_rejects_a_relevant_path_absent_from_the_commit(wiki: RepoBuilder, tmp_path: Path) -> None:
    questions = _write(tmp_path / "q.jsonl", [{"id": "q1", "question": "káva", "relevant": ["cs/missing.md"]}])
    result = CliRunner().invoke(main, ["eval", "--questions", str(questions), "--repo", str(wiki.path),
                                       "--store", str(tmp_path / "store"), "--embedder", "hash-64",
                                       "--engines", "bm25", "--json"])
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    assert body["reason"] == "invalid_questions"
    assert body["problems"] == ["question 'q1': relevant path 'cs/missing.md' is not in commit "
                                + body["problems"][0].split("commit ")[1]]
    assert not (tmp_path / "store" / "bundles").exists()  # rejected before any build


def test_eval_never_moves_current_and_names_paths_excluded_by_include(wiki: RepoBuilder, tmp_path: Path) -> None:
    runner, store = CliRunner(), tmp_path / "store"
    built = runner.invoke(main, ["build", "--repo", str(wiki.path), "--store", str(store), "--embedder", "hash-64",
                                 "--json"])
    assert built.exit_code == 0, built.output
    current = (store / "CURRENT").read_text()
    questions = _write(tmp_path / "q.jsonl", [{"id": "q1", "question": "Kaffee", "relevant": ["de/kaffee.md"]}])
    base = ["eval", "--questions", str(questions), "--repo", str(wiki.path), "--store", str(store),
            "--embedder", "hash-64", "--engines", "bm25"]
    assert runner.invoke(main, [*base, "--include", "de/"]).exit_code == 0
    assert (store / "CURRENT").read_text() == current  # a server on this store keeps its bundle
    excluded = runner.invoke(main, [*base, "--include", "cs/", "--json"])
    assert excluded.exit_code == 1
    assert json.loads(excluded.stdout)["problems"] == [
        "question 'q1': relevant path 'de/kaffee.md' is excluded by --include cs/"]
    nothing = runner.invoke(main, ["build", "--repo", str(wiki.path), "--store", str(store), "--embedder", "hash-64",
                                   "--include", "cs"])
    assert nothing.exit_code == 1 and "matches no Markdown file" in nothing.output


def test_eval_rejects_bad_result_files_and_option_mixes_cleanly(wiki: RepoBuilder, tmp_path: Path) -> None:
    runner = CliRunner()
    for name, content in (("list.json", "[1, 2]"), ("cfg.json", json.dumps({"format": "gitrag-eval/1", "config": "x"})),
                          ("cut.json", '{"format": "gitrag-eval/1", "con')):
        (tmp_path / name).write_text(content, encoding="utf-8")
        result = runner.invoke(main, ["eval", "--reproduce", str(tmp_path / name)])
        assert result.exit_code == 1 and "gitrag eval result" in result.output, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
    questions = _write(tmp_path / "q.jsonl", [{"id": "q1", "question": "Kaffee", "relevant": ["de/kaffee.md"]}])
    mixed = runner.invoke(main, ["eval", "--reproduce", str(tmp_path / "list.json"), "--split", "dev"])
    assert mixed.exit_code == 2 and "--split" in mixed.output
    missing_dir = runner.invoke(main, ["eval", "--questions", str(questions), "--repo", str(wiki.path), "--store",
                                       str(tmp_path / "s"), "--embedder", "hash-64",
                                       "--out", str(tmp_path / "no/x.json")])
    assert missing_dir.exit_code == 2 and not (tmp_path / "s").exists()
    bad_k = runner.invoke(main, ["eval", "--questions", str(questions), "--repo", str(wiki.path), "--store",
                                 str(tmp_path / "s"), "--rrf-k", "0"])
    assert bad_k.exit_code == 2 and "--rrf-k" in bad_k.output
