"""Calibrate the relevance gates of ``/answer`` (``query.answer.rag.MIN_SUPPORT`` and ``MIN_SUPPORT_RESTRICTED``).

For every question the best *support* (idf-weighted share of the question's content words found in
a candidate chunk, see :mod:`query.answer.rag`) is computed the way the router computes it, and for each
threshold the share of answerable questions that pass and of no-answer questions that are refused
is printed (JSON).  Two gates:

* ``text`` (whole bundle): answerable = every answerable question of the gold split (their texts
  name persons, works and titles the pages contain) asked as plain text questions; no-answer =
  ``bench/data/answer_noanswer.jsonl`` (off-topic questions written for this bench, no corpus
  text) plus the gold ``no_answer_*`` questions of the split.
* ``restricted`` (the pages of persons the graph resolved, ``graph+text``): answerable = the gold
  ``content_assignment`` questions of the split; no-answer = for each of those persons, questions
  about things the pages never describe (built here from a fixed template list and the person's
  name as the graph resolved it).

    .venv/bin/python bench/answer_calibration.py --bundle STORE/bundles/<id> [--split dev]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

SHARED = Path(os.environ.get("GITRAG_SHARED") or Path(__file__).resolve().parents[2] / "shared")
HERE = Path(__file__).resolve().parent
OFF_TOPIC_ABOUT_PERSON = [
    "Aké je obľúbené jedlo osoby {name}?", "Koľko súrodencov má {name}?", "Aké auto šoféruje {name}?",
    "Kde trávi {name} letnú dovolenku?", "Aký šport hrá {name} vo voľnom čase?",
]
THRESHOLDS = [round(0.05 * i, 2) for i in range(1, 17)]


def main() -> int:
    sys.path.insert(0, str(HERE.parent))
    from query.answer.pipeline import parse_answer_request, route_question
    from query.answer.rag import MIN_SUPPORT, MIN_SUPPORT_RESTRICTED, text_context
    from query.bundle import open_bundle
    from query.search.request import SearchOptions

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", required=True, type=Path)
    parser.add_argument("--gold", type=Path, default=SHARED / "corpora" / "thesis-wiki.gold.json")
    parser.add_argument("--split", default="dev")
    args = parser.parse_args()
    gold = [q for q in json.loads(args.gold.read_text(encoding="utf-8"))["questions"]
            if q["split"] == args.split and not q.get("commit")]
    off_topic = [json.loads(line)["question"] for line in (HERE / "data" / "answer_noanswer.jsonl")
                 .read_text(encoding="utf-8").splitlines() if line.strip()]
    bundle = open_bundle(args.bundle, verify=False)
    options = SearchOptions()

    def best(question: str, paths: set[str] | None = None, names: list[str] | None = None) -> float:
        ctx = text_context(bundle, question, max_tokens=3000, options=options, paths=paths, min_support=1.01,
                           resolved_words=names or [])
        return ctx.best_support or 0.0

    text_yes = [best(q["question"]) for q in gold if q["should_answer"]]
    text_no = [best(q) for q in off_topic] + [best(q["question"]) for q in gold if q["kind"].startswith("no_answer")]
    restricted_yes: list[float] = []
    restricted_no: list[float] = []
    for q in gold:
        if q["kind"] != "content_assignment":
            continue
        routed = route_question(bundle, parse_answer_request({"query": q["question"], "mode": "retrieve"}), options,
                                min_support=1.01)
        persons = (routed.graph_body or {}).get("entities", {}).get("persons") or []
        paths = {p["path"] for p in persons if p.get("path")}
        names = [w for p in persons for w in str(p.get("matched") or "").split()]
        restricted_yes.append(best(q["question"], paths, names))
        name = persons[0]["name"] if persons else q["expected"]["person"]
        for template in OFF_TOPIC_ABOUT_PERSON:
            restricted_no.append(best(template.format(name=name), paths, name.split()))

    def table(yes: list[float], no: list[float]) -> list[dict[str, float]]:
        return [{"threshold": t, "answerable_pass": round(sum(v >= t for v in yes) / max(len(yes), 1), 3),
                 "no_answer_refused": round(sum(v < t for v in no) / max(len(no), 1), 3)} for t in THRESHOLDS]

    print(json.dumps({
        "bundle": str(args.bundle.name), "split": args.split,
        "text": {"current": MIN_SUPPORT, "answerable": len(text_yes), "no_answer": len(text_no),
                 "grid": table(text_yes, text_no)},
        "restricted": {"current": MIN_SUPPORT_RESTRICTED, "answerable": len(restricted_yes),
                       "no_answer": len(restricted_no), "grid": table(restricted_yes, restricted_no)},
    }, indent=1))
    bundle.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
