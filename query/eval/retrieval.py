"""Retrieval evaluation: question files, document rankings per engine, metrics, reproducible results.

Question files (strictly validated, see :func:`load_questions`):

* JSONL, one object per line: ``id`` (str), ``question`` (str), ``relevant`` (list of document
  paths), optional ``answers`` (list), ``split`` (str, e.g. ``dev``/``test``), ``filter`` (a
  :class:`~query.search.request.SearchFilter` object), ``commit`` (the question holds at that commit only);
* the thesis-wiki gold JSON (``{"format": "thesis-wiki-gold/1", "questions": [...]}``), whose
  ``expected_sources`` are the relevant documents.

A question without relevant documents (a no-answer question) or bound to another commit is
skipped and counted.  Rankings are document rankings: a document takes the rank of its best chunk.

Result file (``gitrag eval --out``), format ``gitrag-eval/1``: ``engines`` (mean metrics per engine),
``questions`` (``{id, ranks: {engine: 1-based rank of the first relevant document or null}}``),
``index_version``, ``dataset_sha256``, ``dataset``, ``embedder``, ``tool_version``, ``config`` and
``timings`` (informational).  :func:`compare_results` decides whether a re-run reproduced a result.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from artifacts import __version__
from query.bundle import OpenedBundle
from query.errors import QueryError
from query.search.fusion import rank_chunks, top_documents
from query.search.metrics import METRICS, first_relevant_rank, mean_scores, score_question
from query.search.request import SearchFilter, SearchOptions

RESULT_FORMAT = "gitrag-eval/1"
ENGINES = ("bm25", "vector", "hybrid")
SPLITS = ("dev", "test", "all")
DOC_DEPTH = 100
"""Documents kept per ranking (ranks beyond this count as not found)."""

_JSONL_FIELDS = {"id", "question", "relevant", "answers", "split", "filter", "commit", "expected", "should_answer",
                 "kind", "lang"}
"""JSONL keys; ``expected``, ``should_answer`` and ``kind`` are read by the answer evaluation
(:mod:`query.eval.answers`); ``lang`` is a label for people (strings, not otherwise read)."""


class QuestionFileError(QueryError):
    """A question file is malformed; ``problems`` lists every problem found (``"line 3: ..."``)."""

    reason = "invalid_questions"
    status = 400

    def __init__(self, message: str, problems: list[str]) -> None:
        super().__init__(message)
        self.problems = problems


@dataclass(frozen=True)
class Question:
    """One evaluation question; ``relevant`` holds NFC document paths (empty for a no-answer question)."""

    id: str
    question: str
    relevant: tuple[str, ...]
    split: str | None = None
    filter: SearchFilter | None = None
    commit: str | None = None


@dataclass
class QuestionSet:
    """A validated question file: its questions, sha256 (hex, of the file bytes) and format name."""

    path: Path
    sha256: str
    format: str
    questions: list[Question] = field(default_factory=list)


def _nfc(path: str) -> str:
    return unicodedata.normalize("NFC", path)


def _parse_question(obj: Any, where: str, problems: list[str], *, gold: bool) -> Question | None:
    if not isinstance(obj, dict):
        problems.append(f"{where}: not a JSON object")
        return None
    relevant_key = "expected_sources" if gold else "relevant"
    before = len(problems)
    if not gold:
        unknown = sorted(set(obj) - _JSONL_FIELDS)
        if unknown:
            problems.append(f"{where}: unknown field(s) {', '.join(unknown)}")
    for key in ("id", "question", relevant_key):
        if key not in obj:
            problems.append(f"{where}: missing field {key!r}")
    qid, text, relevant = obj.get("id"), obj.get("question"), obj.get(relevant_key, [])
    if "id" in obj and (not isinstance(qid, str) or not qid.strip()):
        problems.append(f"{where}: 'id' must be a non-empty string")
    if "question" in obj and (not isinstance(text, str) or not text.strip()):
        problems.append(f"{where}: 'question' must be a non-empty string")
    if not isinstance(relevant, list) or not all(isinstance(p, str) and p for p in relevant):
        problems.append(f"{where}: {relevant_key!r} must be a list of document paths")
        relevant = []
    elif len({_nfc(p) for p in relevant}) != len(relevant):
        problems.append(f"{where}: {relevant_key!r} lists a path twice")
    answers = obj.get("answers")
    if not gold and answers is not None and (
            not isinstance(answers, list) or not all(isinstance(a, str) for a in answers)):
        problems.append(f"{where}: 'answers' must be a list of strings")
    split = obj.get("split")
    if split is not None and not isinstance(split, str):
        problems.append(f"{where}: 'split' must be a string")
    for label in ("kind", "lang"):
        if not gold and obj.get(label) is not None and not isinstance(obj[label], str):
            problems.append(f"{where}: {label!r} must be a string")
    commit = obj.get("commit")
    if commit is not None and not isinstance(commit, str):
        problems.append(f"{where}: 'commit' must be a string")
    flt = None
    if obj.get("filter") is not None:
        try:
            flt = SearchFilter.model_validate(obj["filter"], strict=True)
        except ValidationError as exc:
            fields = sorted({".".join(str(part) for part in err["loc"]) or "(object)" for err in exc.errors()})
            problems.append(f"{where}: 'filter' is not a valid filter object (bad or unknown key: "
                            f"{', '.join(fields)}; allowed: path_prefix, tags, categories, year)")
    if len(problems) > before:
        return None
    # no problem was found, so id and question are strings
    return Question(id=cast(str, qid), question=cast(str, text),
                    relevant=tuple(dict.fromkeys(_nfc(p) for p in relevant)), split=split, filter=flt, commit=commit)


def load_questions(path: Path | str) -> QuestionSet:
    """Read and validate a question file (JSONL or thesis-wiki gold JSON).

    Raises :class:`QuestionFileError` listing every problem: unreadable file, invalid JSON, a
    missing or mistyped field, an unknown field (JSONL), a duplicate id, an invalid filter, an
    empty file.
    """
    qset, problems = read_questions(path)
    if problems:
        raise QuestionFileError(f"question file has {len(problems)} problem(s)", problems)
    return qset


def read_questions(path: Path | str) -> tuple[QuestionSet, list[str]]:
    """Read a question file and return its valid questions with the list of every problem found.

    Like :func:`load_questions`, but returns the problems instead of raising, so that a caller can
    add the problems of later checks (relevant paths missing from the commit) and report all of
    them at once.  Raises :class:`QuestionFileError` only when the file is unreadable or not UTF-8.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise QuestionFileError("question file is unreadable", [f"{path.name}: cannot be read"]) from exc
    digest = hashlib.sha256(data).hexdigest()
    problems: list[str] = []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise QuestionFileError("question file is not UTF-8", [f"{path.name}: not UTF-8"]) from exc
    questions: list[Question] = []
    fmt = "jsonl"
    whole: Any = None
    if text.lstrip().startswith("{"):
        try:
            whole = json.loads(text)
        except ValueError:
            whole = None
    if isinstance(whole, dict) and isinstance(whole.get("questions"), list):
        fmt = str(whole.get("format") or "gold-json")
        for i, obj in enumerate(whole["questions"]):
            q = _parse_question(obj, f"questions[{i}]", problems, gold=True)
            if q is not None:
                questions.append(q)
    else:
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                problems.append(f"line {lineno}: invalid JSON")
                continue
            q = _parse_question(obj, f"line {lineno}", problems, gold=False)
            if q is not None:
                questions.append(q)
    seen: set[str] = set()
    for q in questions:
        if q.id in seen:
            problems.append(f"question {q.id!r}: duplicate id")
        seen.add(q.id)
    if not questions and not problems:
        problems.append(f"{path.name}: no questions")
    return QuestionSet(path=path.resolve(), sha256=digest, format=fmt, questions=questions), problems


def select_questions(qset: QuestionSet, split: str, commit: str) -> tuple[list[Question], dict[str, int]]:
    """Return the questions to evaluate at ``commit`` for ``split`` and the counts of those skipped.

    Skipped (by reason): ``other_split``, ``other_commit`` (bound to another commit),
    ``no_relevant`` (no-answer questions; they have no ranking to score).
    """
    chosen: list[Question] = []
    skipped = {"other_split": 0, "other_commit": 0, "no_relevant": 0}
    for q in qset.questions:
        if split != "all" and q.split != split:
            skipped["other_split"] += 1
        elif q.commit is not None and not commit.startswith(q.commit) and not q.commit.startswith(commit):
            skipped["other_commit"] += 1
        elif not q.relevant:
            skipped["no_relevant"] += 1
        else:
            chosen.append(q)
    return chosen, skipped


def check_relevant_paths(questions: list[Question], bundle: OpenedBundle) -> None:
    """Raise :class:`QuestionFileError` when a relevant path is not a Markdown file of the bundle's commit.

    The commit's Markdown files are the bundle's documents plus the files it skipped (recorded in
    the manifest).
    """
    tree = set(bundle.docs) | {_nfc(s.path) for s in bundle.manifest.skipped}
    problems = [f"question {q.id!r}: relevant path {p!r} is not in commit {bundle.manifest.commit[:12]}"
                for q in questions for p in q.relevant if p not in tree]
    if problems:
        raise QuestionFileError(f"question file has {len(problems)} problem(s)", problems)


def document_ranking(bundle: OpenedBundle, chunk_ids: list[str], depth: int = DOC_DEPTH) -> list[str]:
    """Return document paths in order of their best chunk in ``chunk_ids`` (at most ``depth``)."""
    return top_documents(bundle, chunk_ids, depth)


def evaluate(bundle: OpenedBundle, questions: list[Question], engines: tuple[str, ...],
             options: SearchOptions, published_only: bool = True) -> dict[str, Any]:
    """Run every question through ``engines`` and return ``{engines, questions, seconds}``.

    ``engines``: mean metrics per engine (see :data:`~query.search.metrics.METRICS`); ``questions``:
    ``[{id, ranks: {engine: rank or None}}]`` in input order; ``seconds``: wall time per engine set.
    """
    arms = tuple(a for a in ("bm25", "vector") if a in engines or "hybrid" in engines)
    scores: dict[str, list[dict[str, float]]] = {e: [] for e in engines}
    rows = []
    started = time.perf_counter()
    for q in questions:
        ranking = rank_chunks(bundle, q.question, depth=options.candidates, published_only=published_only,
                              flt=q.filter, options=options, engines=arms)
        ranks: dict[str, int | None] = {}
        for engine in engines:
            docs = document_ranking(bundle, ranking.chunk_ids(engine))
            scores[engine].append(score_question(docs, q.relevant))
            ranks[engine] = first_relevant_rank(docs, q.relevant)
        rows.append({"id": q.id, "ranks": ranks})
    return {
        "engines": {e: mean_scores(scores[e]) for e in engines},
        "questions": rows,
        "seconds": round(time.perf_counter() - started, 3),
    }


def tool_commit() -> str | None:
    """Return the Git commit of the gitrag source tree this code runs from (``+dirty`` if modified), or None."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def make_result(bundle: OpenedBundle, qset: QuestionSet, split: str, engines: tuple[str, ...],
                options: SearchOptions, outcome: dict[str, Any], skipped: dict[str, int], *,
                repo: str | None, store: str | None, rev: str, published_only: bool = True) -> dict[str, Any]:
    """Assemble the result object written by ``gitrag eval --out`` (see the module docstring)."""
    m = bundle.manifest
    spec = m.config.embedder
    return {
        "format": RESULT_FORMAT,
        "engines": outcome["engines"],
        "questions": outcome["questions"],
        "index_version": bundle.index_version.model_dump(mode="json"),
        "dataset_sha256": qset.sha256,
        "dataset": {"path": str(qset.path), "format": qset.format, "questions": len(qset.questions),
                    "evaluated": len(outcome["questions"]), "skipped": skipped},
        "embedder": {"model_id": spec.model_id, "fingerprint": spec.fingerprint, "dim": spec.dim,
                     "revision": spec.revision},
        "tool_version": __version__,
        "tool_commit": tool_commit(),
        "config": {
            "split": split, "engines": list(engines), "published_only": published_only, "doc_depth": DOC_DEPTH,
            "search": options.for_bundle(m.fusion).retrieval_config(), "build": m.config.model_dump(mode="json"),
            "config_fingerprint": m.config_fingerprint, "repo": repo, "store": store, "rev": rev,
        },
        "timings": {"seconds": outcome["seconds"]},
    }


def compare_results(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Return the differences between two results of the same evaluation (empty: reproduced).

    Compares the index version, the dataset hash, the embedder, every engine metric and every
    per-question rank exactly; timings and tool commit are ignored.
    """
    diffs: list[str] = []
    if old.get("dataset_sha256") != new.get("dataset_sha256"):
        diffs.append("dataset_sha256 differs")
    for key in ("commit", "bundle_id", "content_digest"):
        a, b = (old.get("index_version") or {}).get(key), (new.get("index_version") or {}).get(key)
        if a != b:
            diffs.append(f"index_version.{key}: {a} -> {b}")
    for key in ("model_id", "fingerprint"):
        a, b = (old.get("embedder") or {}).get(key), (new.get("embedder") or {}).get(key)
        if a != b:
            diffs.append(f"embedder.{key}: {a} -> {b}")
    for engine, metrics in (old.get("engines") or {}).items():
        now = (new.get("engines") or {}).get(engine)
        if now is None:
            diffs.append(f"{engine}: missing")
            continue
        for name in METRICS:
            if metrics.get(name) != now.get(name):
                diffs.append(f"{engine} {name}: {metrics.get(name)} -> {now.get(name)}")
    new_ranks = {row["id"]: row["ranks"] for row in new.get("questions") or []}
    for row in old.get("questions") or []:
        ranks = new_ranks.get(row["id"])
        if ranks is None:
            diffs.append(f"question {row['id']!r}: missing")
        elif ranks != row["ranks"]:
            diffs.append(f"question {row['id']!r}: ranks {row['ranks']} -> {ranks}")
    if len(new_ranks) != len(old.get("questions") or []):
        diffs.append(f"questions evaluated: {len(old.get('questions') or [])} -> {len(new_ranks)}")
    return diffs
