"""Do several code trees give the same ``/graph`` and ``/answer`` bodies for the same questions on one bundle?

For a change that must not change answers (a speed-up): every question of a gold file (the
thesis-wiki gold by default, questions bound to a commit left out) is asked through
``query.graph.dispatch.answer_graph`` and ``query.answer.pipeline.answer`` (extractive generator,
``mode=answer``) in one worker process per tree, importing that tree, on the same bundle.  Timings
are dropped from the bodies; everything else must be equal.  Prints, per tree, the questions whose
graph or answer body differs from the first tree's (none: ``identical``), and the status counts.

    PYTHONPATH=. .venv/bin/python bench/answers_same.py --bundle STORE/bundles/<id> \\
        --tree before=/path/to/old/checkout --tree after=. [--questions $GITRAG_SHARED/corpora/thesis-wiki.gold.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GITRAG_SHARED") or ROOT.parent / "shared")

WORKER = r"""
import asyncio, json, sys
from query.answer.generators import make_generator
from query.answer.pipeline import answer, parse_answer_request
from query.bundle import open_bundle
from query.graph.dispatch import answer_graph
from query.search.request import SearchOptions

def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in ("timings", "latency_ms", "took_ms")}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value

bundle = open_bundle(sys.argv[1], verify=False, load_model=True)
generator = make_generator("extractive")
for line in sys.stdin:
    question = json.loads(line)
    graph = answer_graph(bundle, {"question": question})
    body = asyncio.run(answer(bundle, parse_answer_request({"query": question}), SearchOptions(), generator))
    print(json.dumps({"graph": strip(graph), "answer": strip(body)}, ensure_ascii=False, sort_keys=True), flush=True)
"""


def run_tree(tree: Path, bundle: str, questions: list[str]) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", WORKER, bundle], env=env, cwd="/", check=True, text=True,
                          input="".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions),
                          capture_output=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--tree", action="append", required=True, metavar="NAME=DIR")
    parser.add_argument("--questions", default=str(SHARED / "corpora" / "thesis-wiki.gold.json"))
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args()
    gold = json.loads(Path(args.questions).read_text(encoding="utf-8"))
    questions = [q["question"] for q in gold["questions"] if q.get("kind") != "historical_at_commit"]
    trees = {name: Path(path).resolve() for name, path in (t.split("=", 1) for t in args.tree)}
    bodies = {name: run_tree(tree, args.bundle, questions) for name, tree in trees.items()}
    first = next(iter(bodies))
    report: dict[str, Any] = {"bundle": args.bundle, "questions": len(questions), "trees": {}}
    for name, rows in bodies.items():
        differ = [q for q, a, b in zip(questions, rows, bodies[first], strict=True) if a != b]
        statuses = collections.Counter(f"{part}:{row[part]['status']}" for row in rows for part in ("graph", "answer"))
        report["trees"][name] = {"differ": differ, "statuses": dict(sorted(statuses.items()))}
        print(f"{name}: {len(rows)} questions, " + ("identical to " + first if not differ and name != first else
              f"{len(differ)} differ from {first}" if name != first else "reference") + "; "
              + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
        for q in differ[:20]:
            print(f"  differs: {q}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
