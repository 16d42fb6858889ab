"""Where an answer is lost: retrieval, unit choice or the answerability threshold (one question set, one store).

For each question of a set (JSONL with ``id``, ``question``, ``answerable``, ``relevant`` (paths), and the
strings that show a right answer in ``accept`` or ``expected``), this routes the question as ``/answer``
does, then scores **every** unit of the text-route evidence with the answerability model in use and
marks a unit a *hit* when it contains an accepted string on word boundaries and comes from a relevant
page.  It also runs the real pipeline (extractive generator, score on) for the delivered outcome.

    .venv/bin/python bench/answer_units.py --store STORE --questions Q.jsonl --out UNITS.jsonl

Per question (``--out``): route, the rank of the first relevant evidence item, the number of units,
``ceiling`` (some unit is a hit), ``top_hit`` (the best-scoring unit is a hit), ``best_p`` / ``best_hit_p``,
the delivered outcome, and every scored unit (text, kind, path, probability, features, hit) so that
thresholds and refits can be tried offline.  Prints totals: the share of answerable questions lost at
each stage.  Labels come from string matching (noisy: a paraphrase of the answer is no hit); they are for
development sets only, never for reporting.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TextIO

from answer_harness import answer_each, cited_paths, open_question_set, question_set_parser


def _accept(q: dict) -> list[str]:  # type: ignore[type-arg]
    return [a for a in (q.get("accept") or q.get("expected") or []) if a]


def _hit(text: str, path: str, q: dict) -> bool:  # type: ignore[type-arg]
    from query.eval.answers import contains_whole, folded

    relevant = set(q.get("relevant") or [])
    if relevant and path not in relevant:
        return False
    body = folded(text)
    return any(contains_whole(body, folded(a)) for a in _accept(q))


def _units(bundle, q: dict, *, drop_relevant: bool = False) -> dict:  # type: ignore[no-untyped-def, type-arg]
    """The routed evidence's scored units of ``q``; ``drop_relevant``: the same evidence without the relevant
    pages' items (the right topic without the value: every unit is a negative)."""
    from query.answer.answerability import unit_pool
    from query.answer.pipeline import _scorer, parse_answer_request, route_question
    from query.search.request import SearchOptions

    request = parse_answer_request({"query": q["question"]})
    routed = route_question(bundle, request, SearchOptions(), None)
    relevant = set(q.get("relevant") or [])
    items = [it for it in routed.context.items if it.kind == "chunk"
             and not (drop_relevant and it.document_path in relevant)]
    first_rel = next((i for i, it in enumerate(items) if it.document_path in relevant), None)
    row: dict = {"route": routed.engine, "route_status": routed.status, "items": len(items),  # type: ignore[type-arg]
                 "first_relevant": first_rel, "units": []}
    if routed.engine != "text" or not items:
        return row
    context = routed.context
    if drop_relevant:
        from dataclasses import replace

        context = replace(context, items=items)
    scorer = _scorer(bundle, q["question"], context)
    if scorer is None:
        return row
    every = unit_pool(items)
    row["ceiling_all"] = any(_hit(text, it.document_path, q) for it, _u, text in every)
    texts = {(it.evidence_id, u.kind, u.order): text for it, u, text in every}
    for p, feats, it, u in scorer.prime(items):  # the units best_units scores, as the answer path scores them
        row["units"].append({"p": round(p, 4), "kind": u.kind, "path": it.document_path, "item": it.evidence_id,
                             "text": texts[(it.evidence_id, u.kind, u.order)][:400],
                             "hit": _hit(texts[(it.evidence_id, u.kind, u.order)], it.document_path, q),
                             "features": {k: round(v, 4) for k, v in feats.items()}})
    row["variant"] = scorer.variant_name
    row["threshold"] = scorer.variant.threshold if scorer.variant is not None else None
    row["units"].sort(key=lambda r: -r["p"])
    return row


def _delivered(body: dict) -> dict:  # type: ignore[type-arg]
    return {"status": body.get("status"), "reason": body.get("reason"), "answer": body.get("answer"),
            "cited": cited_paths(body), "engine": body.get("engine")}


def threshold_table(rows: list[dict], steps: tuple[float, ...] = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)) -> dict:  # type: ignore[type-arg]
    """Deliver-the-best-unit simulation per threshold: ``{t: [right, wrong]}`` -- right: an answerable question
    whose best unit is a hit and reaches ``t``; wrong: any other question whose best unit reaches ``t``."""
    table = {}
    for t in steps:
        right = sum(1 for r in rows if r["units"] and r["units"][0]["p"] >= t and r["answerable"]
                    and r["units"][0]["hit"])
        wrong = sum(1 for r in rows if r["units"] and r["units"][0]["p"] >= t
                    and not (r["answerable"] and r["units"][0]["hit"]))
        table[str(t)] = [right, wrong]
    return table


async def _run(bundle, questions: list[dict], out: TextIO, totals: dict,  # type: ignore[no-untyped-def, type-arg]
               negatives: list[dict] | None) -> None:  # type: ignore[type-arg]
    """Write one row per question to ``out`` (the delivered answer, then every scored unit) and count ``totals``;
    ``negatives``: also collect each answerable text-route question's units scored without its relevant pages."""
    from query.eval.answers import contains_whole, folded

    async for q, body, _ms in answer_each(bundle, questions):
        row = _units(bundle, q)
        row.update({"id": q["id"], "question": q["question"], "answerable": bool(q.get("answerable", True)),
                    "category": q.get("category") or q.get("kind"), "accept": _accept(q),
                    "relevant": q.get("relevant") or []})
        row["delivered"] = _delivered(body)
        units = row["units"]
        row["ceiling"] = any(u["hit"] for u in units)
        row["top_hit"] = bool(units) and units[0]["hit"]
        row["best_p"] = units[0]["p"] if units else None
        row["best_hit_p"] = max((u["p"] for u in units if u["hit"]), default=None)
        d = row["delivered"]
        ok = d["status"] == "ok"
        if row["answerable"]:
            totals["answerable"] += 1
            totals["text_route"] += row["route"] == "text"
            totals["relevant_retrieved"] += row["first_relevant"] is not None
            totals["ceiling"] += row["ceiling"]
            totals["ceiling_all"] = totals.get("ceiling_all", 0) + bool(row.get("ceiling_all"))
            totals["top_hit"] += row["top_hit"]
            threshold = row.get("threshold")
            totals["top_hit_passes"] += row["top_hit"] and threshold is not None and units[0]["p"] >= threshold
            hit = ok and any(contains_whole(folded(d["answer"] or ""), folded(a)) for a in row["accept"])
            totals["delivered_correct"] += bool(hit)
        else:
            totals["not_answerable"] += 1
            totals["delivered_on_unanswerable"] += ok
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        if negatives is not None and row["answerable"] and row["route"] == "text":
            neg = _units(bundle, q, drop_relevant=True)
            neg.update({"id": q["id"], "question": q["question"], "answerable": False, "group": "removed"})
            for u in neg["units"]:
                u["hit"] = False
            negatives.append(neg)


def main() -> int:
    parser = question_set_parser(__doc__.splitlines()[0], "JSONL, keep it outside the repository")
    parser.add_argument("--negatives", type=Path,
                        help="also write, per answerable question, its units scored without the relevant pages "
                             "(JSONL; negatives for bench/answerability_fit.py --units)")
    args = parser.parse_args()
    bundle, questions = open_question_set(args)
    totals = {"answerable": 0, "text_route": 0, "relevant_retrieved": 0, "ceiling": 0, "top_hit": 0,
              "top_hit_passes": 0, "delivered_correct": 0, "not_answerable": 0, "delivered_on_unanswerable": 0}
    negatives: list[dict] | None = [] if args.negatives is not None else None  # type: ignore[type-arg]
    with args.out.open("w", encoding="utf-8") as out:
        asyncio.run(_run(bundle, questions, out, totals, negatives))
    if negatives is not None:
        args.negatives.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in negatives),
                                  encoding="utf-8")
    rows = [json.loads(x) for x in args.out.read_text(encoding="utf-8").splitlines()]
    totals["thresholds"] = threshold_table(rows)
    print(json.dumps({"bundle": bundle.bundle_id, "questions": str(args.questions), **totals}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
