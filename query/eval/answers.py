"""Answer evaluation (``gitrag eval --answers``): run questions through :func:`query.answer.pipeline.answer` and
score what a user would get.

Question files: the thesis-wiki gold JSON (``kind``, ``expected``, ``expected_sources``,
``should_answer``, ``commit``) or JSONL (``id``, ``question``, ``relevant``, optional ``answers`` /
``expected`` (expected strings), ``should_answer`` (default: has relevant documents), ``split``,
``filter``, ``commit``, ``kind`` (a label the totals are broken down by; default ``jsonl``)),
validated by :func:`query.eval.retrieval.load_questions`.

Per question: ``should_answer`` vs ``answered`` (status ok), the expected strings found in the
answer text (NFC, case and diacritics folded, whitespace collapsed), cited documents vs relevant
ones, claims whose evidence does not hold when re-checked independently against the bundle
(:func:`recheck_claim`), and latency (ms).  Expected strings per gold ``kind``:

=============================  =====================================================================
kind                           expected strings
=============================  =====================================================================
``year_of_work``               every year
``title_of_work``              every title
``works_of_person``            every title and year
``persons_with_work_in_year``  the count and every person
``common_tags``                every tag
``content_assignment``         the assignment points: correct when >= 80 % occur verbatim and every
                               cited page is an expected page
``historical_at_commit``       as its ``sub_kind``, answered from the bundle of ``commit``
``no_answer_*``                none: correct when refused (status no_answer)
``ambiguous_person``           none: correct when status is ambiguous
=============================  =====================================================================

Totals: ``answer_accuracy`` (answerable questions answered with every expected string, each matched on
word boundaries so an expected ``3`` is not found in ``365``, citing a relevant page when the file names
one), ``partial_rate`` (answered with some but not all expected strings, counted apart),
``wrong_rate`` (over all questions: answered with none of the expected strings, or answered where a
refusal was expected), ``false_refusal_rate`` (answerable questions refused), ``refusal_accuracy`` (no-answer and
ambiguous questions refused the right way), citation ``precision`` (cited evidence items from a
relevant document) and ``recall`` (relevant documents cited), ``unsupported_claims`` (delivered
claims failing the re-check), latency ``p50``/``p95`` (ms), and per kind.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from artifacts import __version__
from artifacts.analysis import fold
from query.answer.evidence import Generator
from query.answer.pipeline import answer, parse_answer_request
from query.bundle import OpenedBundle
from query.eval.retrieval import QuestionFileError, load_questions, tool_commit
from query.graph.words import phrasings
from query.search.request import SearchOptions

RESULT_FORMAT = "gitrag-answer-eval/1"
ASSIGNMENT_SHARE = 0.8


def _template(template: str, **groups: str) -> str:
    """A regex for a graph answer phrase (``"{subject}: tagy {object}."``): each ``{name}`` becomes ``groups[name]``."""
    out = re.escape(template)
    for name, group in groups.items():
        out = out.replace(re.escape("{" + name + "}"), group)
    return out


_COUNTS = [re.compile("^" + _template(p.count, count=r"(\d+)") + "$") for p in phrasings()]
_VALUES = [re.compile("^" + _template(p.predicates[k], subject="[^:]+", object="(.+)") + "$")
           for p in phrasings() for k in ("tagged", "has_topic") if k in p.predicates]
_LINKS = [re.compile("^" + _template(p.predicates["links_to"], subject=".+", object=r"(.+)") + "$")
          for p in phrasings() if "links_to" in p.predicates]
_TITLE = re.compile("|".join(f"{re.escape(p.quotes[0])}(.+?){re.escape(p.quotes[1])}"
                             for p in {p.quotes: p for p in phrasings()}.values()))


def count_of(text: str) -> int | None:
    """The N of a graph count claim (``"Počet: N."``, ``"Count: N."``, any language of the answers), else ``None``."""
    for pattern in _COUNTS:
        if match := pattern.match(text):
            return int(match.group(1))
    return None


def _titles(text: str) -> list[str]:
    return [next(g for g in m.groups() if g is not None) for m in _TITLE.finditer(text)]


def recheck_count(body: dict[str, Any], claim: dict[str, Any]) -> list[str]:
    """Re-check a graph count claim (``"Počet: N."``): N must equal the number of distinct documents
    the answer's other claims cite (each listed person or document is one page), unless the answer
    says its list is cut (``complete`` false), where N may only be larger."""
    n = count_of(claim["text"])
    assert n is not None
    listed = {ev["document_path"] for c in body.get("claims") or [] if c is not claim for ev in c["evidence"]}
    if n == len(listed) or (body.get("complete") is False and n > len(listed)):
        return []
    return [f"count {n} differs from the {len(listed)} documents listed"]


@dataclass(frozen=True)
class AnswerQuestion:
    """One question with what a correct answer contains."""

    id: str
    question: str
    kind: str
    should_answer: bool
    expected: tuple[str, ...]
    relevant: tuple[str, ...]
    split: str | None = None
    commit: str | None = None
    expect_status: str | None = None
    filter: dict[str, Any] | None = None


def _strings(kind: str, expected: dict[str, Any]) -> tuple[str, ...]:
    kind = expected.get("sub_kind") or kind
    out: list[Any] = []
    if kind == "year_of_work":
        out = list(expected.get("years") or [])
    elif kind == "title_of_work":
        out = list(expected.get("titles") or [])
    elif kind == "works_of_person":
        out = list(expected.get("titles") or []) + list(expected.get("years") or [])
    elif kind == "persons_with_work_in_year":
        out = [expected["count"]] + list(expected.get("persons") or []) if "count" in expected else []
    elif kind == "common_tags":
        out = list(expected.get("tags") or [])
    elif kind == "content_assignment":
        out = list(expected.get("assignment") or [])
    return tuple(str(x) for x in out)


def load_answer_questions(path: Path | str) -> tuple[list[AnswerQuestion], str, str]:
    """Read a question file; return ``(questions, sha256 hex of the file, format)``.

    :raises QuestionFileError: the file is malformed (see :func:`query.eval.retrieval.load_questions`).
    """
    qset = load_questions(path)  # validates ids, texts, paths, filters
    text = Path(path).read_text(encoding="utf-8-sig")
    raw: list[dict[str, Any]]
    if qset.format == "jsonl":
        raw = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        raw = json.loads(text)["questions"]
    questions = []
    problems = []
    for obj, base in zip(raw, qset.questions, strict=True):
        if qset.format == "jsonl":
            strings = obj.get("expected", obj.get("answers")) or []
            if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
                problems.append(f"question {base.id!r}: 'expected' must be a list of strings")
                continue
            should = obj.get("should_answer", bool(base.relevant))
            if not isinstance(should, bool):
                problems.append(f"question {base.id!r}: 'should_answer' must be true or false")
                continue
            kind = cast(str, obj.get("kind") if isinstance(obj.get("kind"), str) and obj.get("kind") else "jsonl")
            questions.append(AnswerQuestion(base.id, base.question, kind, should, tuple(strings), base.relevant,
                                            base.split, base.commit,
                                            filter=obj.get("filter")))
        else:
            expected = obj.get("expected") or {}
            kind = str(obj.get("kind") or "unknown")
            should = bool(obj.get("should_answer", bool(base.relevant)))
            status = expected.get("status") if isinstance(expected, dict) else None
            questions.append(AnswerQuestion(base.id, base.question, kind, should,
                                            _strings(kind, expected) if should and isinstance(expected, dict) else (),
                                            base.relevant, base.split, base.commit, expect_status=status))
    if problems:
        raise QuestionFileError(f"question file has {len(problems)} problem(s)", problems)
    return questions, qset.sha256, qset.format


def folded(text: str) -> str:
    """Return ``text`` NFC-normalised, case and diacritics folded, punctuation-insensitive word spacing."""
    return " ".join(fold(unicodedata.normalize("NFC", text)).split())


def contains_whole(text: str, needle: str) -> bool:
    """True when folded ``needle`` occurs in folded ``text`` on word boundaries (``3`` is not in ``365``)."""
    if not needle:
        return True
    return re.search(r"(?<!\w)" + re.escape(needle) + r"(?!\w)", text) is not None


def _norm_quote(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


_YEAR = re.compile(r"(?<!\d)(1[89]\d\d|20\d\d)(?!\d)")


def _all_titles(bundle: OpenedBundle) -> set[str]:
    cached = bundle.graph_cache.get("eval_titles")
    if cached is None:
        cached = bundle.graph_cache["eval_titles"] = {_norm_quote(d.title) for d in bundle.docs.values() if d.title}
    return cached


def recheck_claim(bundle: OpenedBundle, claim: dict[str, Any]) -> list[str]:
    """Re-check a delivered claim against the bundle itself; return the problems (empty: it holds).

    Chunk evidence: the quote must occur (NFC, case and whitespace folded) in the text of the cited
    chunk of this bundle, and every year in the claim text must occur in that chunk.  Graph
    evidence (quotes that are rendered facts): the quoted title, every year and every listed value
    (tags, topics) of the claim text must occur in the cited document (title, body or front
    matter).  A claim citing nothing is a problem.
    """
    problems = []
    if not claim.get("evidence"):
        return ["no evidence"]
    doc_texts: dict[str, str] = {}
    for ev in claim["evidence"]:
        path = ev.get("document_path")
        cid = ev.get("chunk_id")
        chunk = bundle.chunks[bundle.chunk_index[cid]] if cid in bundle.chunk_index else None
        if chunk is not None and _norm_quote(ev["quote"]) in _norm_quote(chunk.text):
            problems += [f"year {y} not in {cid}" for y in _YEAR.findall(claim["text"]) if y not in chunk.text]
            continue
        if path not in doc_texts:
            doc = bundle.docs.get(path)
            front = json.dumps(doc.front_matter, ensure_ascii=False, default=str) if doc else ""
            doc_texts[path] = _norm_quote(
                f"{doc.title}\n{bundle.document_body(path) or ''}\n{front}" if doc else "")
        text = doc_texts[path]
        titles = _titles(claim["text"])
        values = next((m for p in _VALUES if (m := p.match(claim["text"]))), None)
        link = next((m for p in _LINKS if (m := p.match(claim["text"]))), None)
        if not titles and not _YEAR.findall(claim["text"]) and not values:
            problems.append(f"quote not in {cid or path}")
            continue
        # a link's target is named by its own title, which the linking page need not contain: it
        # must be the title of a page of the bundle
        targets = set(_titles(link.group(1))) if link else set()
        problems += [f"title not in {path}" for t in titles
                     if _norm_quote(t) not in text and not (t in targets and _norm_quote(t) in _all_titles(bundle))]
        problems += [f"year {y} not in {path}" for y in _YEAR.findall(claim["text"]) if y not in text]
        if values and not titles:
            problems += [f"value not in {path}" for v in values.group(1).split(", ") if _norm_quote(v) not in text]
    return problems


def score_body(q: AnswerQuestion, body: dict[str, Any], bundle: OpenedBundle, ms: float) -> dict[str, Any]:
    """Return the per-question row for answer ``body`` (see the module docstring)."""
    answered = body.get("status") == "ok"
    text = folded(body.get("answer") or "")
    found = [s for s in q.expected if contains_whole(text, folded(s))]
    cited_items = [(ev.get("document_path"), ev.get("chunk_id")) for c in body.get("claims") or []
                   for ev in c.get("evidence") or []]
    cited_docs = sorted({s["document_path"] for s in body.get("sources") or []}) if answered else []
    unsupported = [{"text": c["text"], "problems": p} for c in body.get("claims") or []
                   if (p := recheck_count(body, c) if count_of(c["text"]) is not None else recheck_claim(bundle, c))]
    if q.should_answer:
        if q.kind == "content_assignment":
            share = len(found) / len(q.expected) if q.expected else 1.0
            correct = answered and share >= ASSIGNMENT_SHARE and bool(cited_docs) and set(cited_docs) <= set(q.relevant)
        else:
            correct = answered and len(found) == len(q.expected)
        # a reader counts an answer only when it cites a page that holds it (the question file names them)
        if correct and q.relevant and not set(cited_docs) & set(q.relevant):
            correct = False
    elif q.kind == "ambiguous_person" or q.expect_status == "ambiguous":
        correct = body.get("status") == "ambiguous"
    else:
        correct = body.get("status") in ("no_answer", "ambiguous")
    return {
        "id": q.id, "kind": q.kind, "split": q.split, "commit": q.commit, "should_answer": q.should_answer,
        "status": body.get("status"), "reason": body.get("reason"), "engine": body.get("engine"),
        "answered": answered, "correct": correct, "expected": len(q.expected), "found": len(found),
        "partial": bool(answered and q.should_answer and not correct and found),
        "missing": [s for s in q.expected if s not in found],
        "cited_documents": cited_docs, "relevant": list(q.relevant),
        "citations": len(cited_items), "correct_citations": sum(1 for p, _ in cited_items if p in q.relevant),
        "unsupported_claims": unsupported, "ms": round(ms, 2),
    }


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))
    return round(ordered[index], 2)


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the totals of per-question rows (see the module docstring); ratios are ``None`` when
    nothing was there to count."""
    answerable = [r for r in rows if r["should_answer"]]
    refusable = [r for r in rows if not r["should_answer"]]
    citations = sum(r["citations"] for r in rows)
    recall_rows = [r for r in answerable if r["relevant"]]

    def ratio(a: float, b: float) -> float | None:
        return round(a / b, 4) if b else None

    kinds: dict[str, dict[str, Any]] = {}
    for r in rows:
        k = kinds.setdefault(r["kind"], {"questions": 0, "correct": 0})
        k["questions"] += 1
        k["correct"] += int(r["correct"])
    for k in kinds.values():
        k["accuracy"] = ratio(k["correct"], k["questions"])
    latencies = [r["ms"] for r in rows]
    return {
        "questions": len(rows),
        "answer_accuracy": ratio(sum(r["correct"] for r in answerable), len(answerable)),
        "false_refusal_rate": ratio(sum(not r["answered"] for r in answerable), len(answerable)),
        "partial_rate": ratio(sum(bool(r.get("partial")) for r in answerable), len(answerable)),
        "wrong_rate": ratio(sum(r["answered"] and not r["correct"] and not r.get("partial") for r in answerable)
                            + sum(r["answered"] for r in refusable), len(rows)),
        "refusal_accuracy": ratio(sum(r["correct"] for r in refusable), len(refusable)),
        "citation_precision": ratio(sum(r["correct_citations"] for r in rows), citations),
        "citation_recall": ratio(sum(len(set(r["cited_documents"]) & set(r["relevant"])) for r in recall_rows),
                                 sum(len(r["relevant"]) for r in recall_rows)),
        "unsupported_claims": sum(len(r["unsupported_claims"]) for r in rows),
        "latency_ms": {"p50": _pct(latencies, 0.5), "p95": _pct(latencies, 0.95)},
        "kinds": dict(sorted(kinds.items())),
    }


async def evaluate_answers(bundle: OpenedBundle, questions: list[AnswerQuestion], generator: Generator,
                           options: SearchOptions) -> list[dict[str, Any]]:
    """Answer every question from ``bundle`` (no answer cache) and return the per-question rows."""
    rows = []
    for q in questions:
        payload: dict[str, Any] = {"query": q.question}
        if q.filter:
            payload["filter"] = q.filter
        request = parse_answer_request(payload)
        started = time.perf_counter()
        body = await answer(bundle, request, options, generator, cache=None)
        ms = (time.perf_counter() - started) * 1000
        rows.append(score_body(q, body, bundle, ms))
    return rows


def make_answer_result(rows: list[dict[str, Any]], *, bundles: dict[str, dict[str, Any]], dataset: dict[str, Any],
                       generator: Generator, config: dict[str, Any]) -> dict[str, Any]:
    """Assemble the result object of ``gitrag eval --answers`` (format ``gitrag-answer-eval/1``)."""
    return {
        "format": RESULT_FORMAT,
        "totals": totals(rows),
        "questions": rows,
        "bundles": bundles,
        "dataset_sha256": dataset["sha256"],
        "dataset": dataset,
        "generator": {"name": generator.name, "fingerprint": generator.fingerprint()},
        "tool_version": __version__,
        "tool_commit": tool_commit(),
        "config": config,
    }


_COMPARED = ("answer_accuracy", "false_refusal_rate", "refusal_accuracy", "citation_precision", "citation_recall",
             "unsupported_claims")


def compare_answer_results(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Return the differences between two answer results (empty: reproduced); latencies are ignored."""
    diffs = []
    if old.get("dataset_sha256") != new.get("dataset_sha256"):
        diffs.append("dataset_sha256 differs")
    for commit, info in (old.get("bundles") or {}).items():
        now = (new.get("bundles") or {}).get(commit) or {}
        if info.get("content_digest") != now.get("content_digest"):
            diffs.append(f"bundle of {commit[:12]}: content_digest differs")
    if (old.get("generator") or {}).get("fingerprint") != (new.get("generator") or {}).get("fingerprint"):
        diffs.append("generator fingerprint differs")
    for key in _COMPARED:
        a, b = (old.get("totals") or {}).get(key), (new.get("totals") or {}).get(key)
        if a != b:
            diffs.append(f"{key}: {a} -> {b}")
    new_rows = {r["id"]: r for r in new.get("questions") or []}
    for row in old.get("questions") or []:
        now = new_rows.get(row["id"])
        if now is None:
            diffs.append(f"question {row['id']!r}: missing")
            continue
        for key in ("status", "reason", "correct", "found", "cited_documents"):
            if row.get(key) != now.get(key):
                diffs.append(f"question {row['id']!r}: {key} {row.get(key)} -> {now.get(key)}")
    return diffs


__all__ = ["AnswerQuestion", "compare_answer_results", "evaluate_answers", "folded",
           "load_answer_questions", "make_answer_result", "recheck_claim", "score_body", "totals"]
