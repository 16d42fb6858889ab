"""gitrag eval lists every problem of a question file at once: its own and relevant paths absent from the commit."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from artifacts.cli import main
from tests.conftest import RepoBuilder
from tests.query.test_eval import _write
from tests.query.test_eval import wiki as wiki  # noqa: F401 - fixture


def test_eval_lists_file_and_tree_problems_together(wiki: RepoBuilder, tmp_path: Path) -> None:  # noqa: F811
    questions = _write(tmp_path / "q.jsonl", [
        {"id": "q1", "question": "káva", "relevant": ["cs/missing.md"]},   # not in the commit
        "{not json",                                                        # a file problem
        {"id": "q2", "question": "sítě", "relevant": ["cs/sit.md"], "bogus": 1},  # an unknown field
        {"id": "q3", "question": "Kaffee", "relevant": ["de/gone.md"]},    # not in the commit either
    ])
    result = CliRunner().invoke(main, ["eval", "--questions", str(questions), "--repo", str(wiki.path),
                                       "--store", str(tmp_path / "store"), "--embedder", "hash-64",
                                       "--engines", "bm25", "--json"])
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    assert body["reason"] == "invalid_questions"
    problems = body["problems"]
    assert "line 2: invalid JSON" in problems and "line 3: unknown field(s) bogus" in problems
    assert [p.split(" is not in commit")[0] for p in problems if "is not in commit" in p] == [
        "question 'q1': relevant path 'cs/missing.md'", "question 'q3': relevant path 'de/gone.md'"]
    assert len(problems) == 4
    assert not (tmp_path / "store" / "bundles").exists()  # still rejected before any build
