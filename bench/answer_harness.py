"""What the answer benches share (``answer_units.py``, ``answer_blind.py``): their command line, the question
set, the store's ``CURRENT`` bundle and the per-question run of ``/answer``'s pipeline.

The benches run as scripts (``.venv/bin/python bench/answer_blind.py ...``), so this module is imported from
beside them; the repository is put on ``sys.path`` by :func:`open_question_set`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def question_set_parser(description: str, out_help: str) -> argparse.ArgumentParser:
    """Return the benches' parser: ``--store`` (its ``CURRENT`` bundle answers), ``--questions`` (JSONL, one
    question a line) and ``--out`` (JSONL, ``out_help``); a bench adds its own options to it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--store", required=True, type=Path)
    parser.add_argument("--questions", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path, help=out_help)
    return parser


def open_question_set(args: argparse.Namespace) -> tuple[Any, list[dict[str, Any]]]:
    """Return the ``CURRENT`` bundle of ``args.store`` (opened without verifying, its model loaded) and the
    questions of ``args.questions`` in file order."""
    sys.path.insert(0, str(ROOT))
    from artifacts.store import Store
    from query.bundle import open_bundle

    text = args.questions.read_text(encoding="utf-8")
    questions = [json.loads(line) for line in text.splitlines() if line.strip()]
    return open_bundle(Store(args.store).current_path(), verify=False), questions


async def answer_each(bundle: Any, questions: list[dict[str, Any]], *,
                      answerability: bool = True) -> AsyncIterator[tuple[dict[str, Any], dict[str, Any], float]]:
    """Answer each question as ``POST /answer`` does with the extractive generator: yield ``(question, response
    body, ms)`` in order, ``ms`` the wall time of that answer.  ``answerability`` false: the rules alone decide
    (the baseline without the score)."""
    from query.answer.generators import make_generator
    from query.answer.pipeline import answer, parse_answer_request
    from query.search.request import SearchOptions

    generator = make_generator("extractive", {})
    for q in questions:
        started = time.perf_counter()
        body = await answer(bundle, parse_answer_request({"query": q["question"]}), SearchOptions(), generator,
                            answerability=answerability)
        yield q, body, round((time.perf_counter() - started) * 1000, 1)


def cited_paths(body: dict[str, Any]) -> list[str]:
    """The document paths a response cites, sorted."""
    return sorted({s["document_path"] for s in body.get("sources") or []})
