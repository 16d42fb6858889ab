"""Answer golden files: the recorded behaviour of ``/answer`` on the small wikis the tests build.

One file per corpus, ``tests/data/answers/<corpus>.jsonl``, one question per line: ``question``,
``status``, ``reason``, ``cites`` (document paths that must be cited), ``contains`` (strings the answer
must contain), ``absent`` (strings it must not contain).  The corpora are the test wikis of
``tests/query/answer_wiki.py`` and ``tests/query/relevance_wiki.py`` (written for the tests, built with
the hash embedder).  A behaviour change shows here as a diff: after an intended change, record anew with
``GITRAG_UPDATE_GOLDEN=1 pytest tests/query/test_answer_golden.py`` and review the diff of the files;
``contains`` records the opening of each delivered quote, ``absent`` lines written by hand survive a
re-recording.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from indexer.build import build_bundle
from query.bundle import open_bundle
from tests.conftest import RepoBuilder
from tests.query import answer_wiki, relevance_wiki
from tests.query.answer_fixtures import ask_extractive

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "answers"
CORPORA = {"answer_wiki": answer_wiki.write_wiki, "relevance_wiki": relevance_wiki.write}
UPDATE = os.environ.get("GITRAG_UPDATE_GOLDEN") == "1"


def _load(corpus: str) -> list[dict[str, Any]]:
    path = GOLDEN / f"{corpus}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _record(body: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    quotes = [ev["quote"] for c in body.get("claims") or [] for ev in c.get("evidence") or []]
    return {"question": old["question"], "status": body["status"], "reason": body.get("reason"),
            "cites": sorted({s["document_path"] for s in body.get("sources") or []}),
            "contains": [" ".join(q.split()[:8]) for q in quotes[:3]], "absent": old.get("absent", [])}


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_answer_golden(corpus: str, tmp_path: Path, hash_embedder: Any) -> None:
    repo = RepoBuilder(tmp_path / "repo")
    CORPORA[corpus](repo)
    commit = repo.commit("golden")
    result = build_bundle(repo.path, tmp_path / "store", commit, embedder=hash_embedder)
    bundle = open_bundle(result.bundle_path, verify=False, embedder=hash_embedder)
    rows = _load(corpus)
    assert rows, f"{corpus}: empty golden file"
    problems, recorded = [], []
    try:
        for row in rows:
            body = ask_extractive(bundle, row["question"])
            recorded.append(_record(body, row))
            answer = " ".join((body.get("answer") or "").split())
            got = {"status": body["status"], "reason": body.get("reason")}
            if got != {"status": row["status"], "reason": row["reason"]}:
                problems.append(f"{row['question']!r}: {got} != {row['status']}/{row['reason']}")
                continue
            cited = {s["document_path"] for s in body.get("sources") or []}
            problems += [f"{row['question']!r}: {p} not cited" for p in row.get("cites", []) if p not in cited]
            problems += [f"{row['question']!r}: {s!r} missing" for s in row.get("contains", []) if s not in answer]
            problems += [f"{row['question']!r}: {s!r} present" for s in row.get("absent", []) if s in answer]
    finally:
        bundle.close()
    if UPDATE:
        (GOLDEN / f"{corpus}.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recorded), encoding="utf-8")
        return
    assert not problems, f"{len(problems)} of {len(rows)} differ:\n" + "\n".join(problems)
