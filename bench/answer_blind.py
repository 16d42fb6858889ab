"""Run a frozen blind question set through ``/answer``'s pipeline and score it automatically.

The set (JSONL, written by someone who never saw the code; kept outside the repository because it is
derived from the pages) has per line: ``id``, ``question``, ``lang``, ``kind`` (``fact``, ``number``,
``howto``, ``definition``, ``crosslang``, ``unanswerable``, ``false_premise``), ``answerable``,
``relevant`` (paths), ``expected`` (alternatives: any one is enough), ``answer``, ``pair`` (the id of the
same question asked in the pages' language, for ``crosslang``).

For each question the store's ``CURRENT`` bundle answers with the extractive generator, once with the
answerability score and once without it (``--variants``), and each response is classified:

* answerable: ``correct`` (status ok, an expected string on word boundaries in the answer, a relevant
  page cited), ``wrong`` (status ok otherwise: confidently wrong or at best partial; hand review decides),
  ``refused`` (a false refusal);
* not answerable (unanswerable, false premise): ``refused`` (right) or ``wrong`` (answered).

    .venv/bin/python bench/answer_blind.py --store STORE --questions Q.jsonl --out RESPONSES.jsonl

Prints JSON totals per variant: ``wrong_of_all`` (confidently wrong over all questions), ``correct_of_answerable``,
``refused_of_unanswerable``, and ``crosslang`` (correct share of the cross-language questions vs their
twins in the pages' language).  The automatic ``correct`` is strict (a paraphrase without the expected
string counts as wrong); the figures to report are the hand-reviewed ones.
"""

from __future__ import annotations

import asyncio
import json

from answer_harness import answer_each, cited_paths, open_question_set, question_set_parser


def _classify(q: dict, body: dict) -> str:  # type: ignore[type-arg]
    from query.eval.answers import contains_whole, folded

    ok = body.get("status") == "ok"
    if not q.get("answerable", True):
        return "wrong" if ok else "refused"
    if not ok:
        return "refused"
    text = folded(body.get("answer") or "")
    cited = {s["document_path"] for s in body.get("sources") or []}
    hit = any(contains_whole(text, folded(e)) for e in q.get("expected") or [])
    rel = not q.get("relevant") or bool(cited & set(q["relevant"]))
    return "correct" if hit and rel else "wrong"


def _normalised(q: dict) -> dict:  # type: ignore[type-arg]
    """The writers' later field names (``category``, ``accept``) read as ``kind`` and ``expected``."""
    return {**q, "kind": q.get("kind") or q.get("category"), "expected": q.get("expected") or q.get("accept") or []}


def _totals(rows: list[dict]) -> dict:  # type: ignore[type-arg]
    answerable = [r for r in rows if r["answerable"]]
    refusable = [r for r in rows if not r["answerable"]]

    def share(part: int, whole: int) -> float | None:
        return round(part / whole, 3) if whole else None

    by_id = {r["id"]: r for r in rows}
    cross = [r for r in rows if r["kind"] == "crosslang" and r.get("pair") in by_id]
    return {
        "questions": len(rows), "answerable": len(answerable), "not_answerable": len(refusable),
        "wrong_of_all": share(sum(r["outcome"] == "wrong" for r in rows), len(rows)),
        "wrong": sum(r["outcome"] == "wrong" for r in rows),
        "correct_of_answerable": share(sum(r["outcome"] == "correct" for r in answerable), len(answerable)),
        "false_refusals_of_answerable": share(sum(r["outcome"] == "refused" for r in answerable), len(answerable)),
        "refused_of_unanswerable": share(sum(r["outcome"] == "refused" for r in refusable), len(refusable)),
        "crosslang_vs_rest": {"crosslang_correct": share(sum(r["outcome"] == "correct" for r in answerable
                                                             if r["kind"] == "crosslang"),
                                                         sum(1 for r in answerable if r["kind"] == "crosslang")),
                              "rest_correct": share(sum(r["outcome"] == "correct" for r in answerable
                                                        if r["kind"] != "crosslang"),
                                                    sum(1 for r in answerable if r["kind"] != "crosslang"))},
        "crosslang": {"questions": len(cross),
                      "correct": share(sum(r["outcome"] == "correct" for r in cross), len(cross)),
                      "twins_correct": share(sum(by_id[r["pair"]]["outcome"] == "correct" for r in cross), len(cross))},
        "by_kind": {k: {"n": len(v), "correct": sum(r["outcome"] == "correct" for r in v),
                        "wrong": sum(r["outcome"] == "wrong" for r in v),
                        "refused": sum(r["outcome"] == "refused" for r in v)}
                    for k in sorted({r["kind"] for r in rows})
                    for v in [[r for r in rows if r["kind"] == k]]},
    }


async def _run(bundle, questions, use_score: bool) -> list[dict]:  # type: ignore[no-untyped-def, type-arg]
    rows = []
    async for q, body, ms in answer_each(bundle, questions, answerability=use_score):
        rows.append({
            "id": q["id"], "kind": q["kind"], "lang": q.get("lang"), "answerable": bool(q.get("answerable", True)),
            "pair": q.get("pair"), "question": q["question"], "status": body.get("status"),
            "reason": body.get("reason"), "engine": body.get("engine"), "answer": body.get("answer"),
            "cited": cited_paths(body),
            "quotes": [ev["quote"] for c in body.get("claims") or [] for ev in c.get("evidence") or []],
            "outcome": _classify(q, body), "ms": ms,
        })
    return rows


def main() -> int:
    parser = question_set_parser(__doc__.splitlines()[0], "responses JSONL (keep it outside the repository)")
    parser.add_argument("--variants", default="score,baseline", help="comma list of: score, baseline")
    args = parser.parse_args()
    bundle, questions = open_question_set(args)
    questions = [_normalised(q) for q in questions]
    report: dict = {"questions": str(args.questions), "bundle": bundle.bundle_id, "variants": {}}  # type: ignore[type-arg]
    with args.out.open("w", encoding="utf-8") as out:
        for variant in args.variants.split(","):
            rows = asyncio.run(_run(bundle, questions, variant == "score"))
            for row in rows:
                out.write(json.dumps({"variant": variant, **row}, ensure_ascii=False) + "\n")
            report["variants"][variant] = _totals(rows)
    print(json.dumps(report, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
