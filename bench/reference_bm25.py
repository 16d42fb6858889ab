"""Reference BM25 outside Whoosh: SQLite FTS5 over the chunks of a gitrag bundle.

Scores a question file (the same JSONL / gold JSON ``gitrag eval`` reads, same strict validation)
with SQLite's own BM25 (``unicode61 remove_diacritics 2`` tokenizer, any-term OR query, the
original system's lexical engine) over exactly the chunks of a built bundle, so that gitrag's Whoosh
BM25 can be checked against an independent implementation.  A document takes the rank of its best
chunk; each question's ``filter`` is honoured (published, ``path_prefix``, tags, categories, year).

    .venv/bin/python bench/reference_bm25.py --bundle STORE/bundles/<id> \\
        --questions ../shared/bench/xquad-de.qrels.jsonl --split dev [--text title+body] [--json]

Prints the same metrics as ``gitrag eval`` (engine ``fts5``).  Nothing is written to disk besides
an in-memory SQLite database.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from artifacts.errors import ArtifactError  # noqa: E402
from artifacts.layout import CHUNKS_FILE, DOCS_FILE  # noqa: E402
from artifacts.manifest import read_manifest  # noqa: E402
from artifacts.records import Chunk, Document  # noqa: E402
from query.eval.retrieval import DOC_DEPTH, QuestionFileError, load_questions, select_questions  # noqa: E402
from query.search.filters import _doc_matches  # noqa: E402
from query.search.metrics import first_relevant_rank, mean_scores, score_question  # noqa: E402

WORD = re.compile(r"\w+", re.UNICODE)


def _read(path: Path, model):  # type: ignore[no-untyped-def]
    with open(path, encoding="utf-8") as handle:
        return [model.model_validate_json(line) for line in handle if line.strip()]


def build_fts(chunks: list[Chunk], docs: dict[str, Document], text: str) -> sqlite3.Connection:
    """Return an in-memory FTS5 table ``c(path, body)`` with one row per chunk (rowid = chunk order)."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE c USING fts5(path UNINDEXED, body, "
               "tokenize='unicode61 remove_diacritics 2')")
    rows = []
    for i, chunk in enumerate(chunks):
        parts = [chunk.text]
        if "title" in text:
            doc = docs[chunk.path]
            parts = [chunk.title, " ".join(chunk.heading_path), " ".join([*doc.tags, *doc.authors]), chunk.text]
        rows.append((i, chunk.path, "\n".join(parts)))
    db.executemany("INSERT INTO c(rowid, path, body) VALUES (?, ?, ?)", rows)
    return db


def fts_query(question: str) -> str | None:
    """Return an FTS5 any-term query (each word quoted) or ``None`` when the question has no words."""
    words = list(dict.fromkeys(w.lower() for w in WORD.findall(question)))
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words) if words else None

DUMP_DEPTH = 100
"""Documents kept per question by ``--dump`` (RRF with the dense arm needs more than the ten scored)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", required=True, type=Path, help="a built bundle directory")
    parser.add_argument("--questions", required=True, type=Path)
    parser.add_argument("--split", default="all", choices=["dev", "test", "all"])
    parser.add_argument("--text", default="body", choices=["body", "title+body"],
                        help="what is indexed per chunk: the chunk text, or title, headings, tags, authors and text")
    parser.add_argument("--depth", type=int, default=1000, help="chunks fetched per question")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dump", type=Path, default=None,
                        help=f"also write each question's document ranking (JSON lines: id, ranking: at most "
                             f"{DUMP_DEPTH} paths) for bench/fusion_calibrate.py --fts5")
    args = parser.parse_args()

    try:
        manifest = read_manifest(args.bundle)
        docs = {d.path: d for d in _read(args.bundle / DOCS_FILE, Document)}
        chunks = _read(args.bundle / CHUNKS_FILE, Chunk)
        qset = load_questions(args.questions)
        chosen, skipped = select_questions(qset, args.split, manifest.commit)
        tree = set(docs) | {s.path for s in manifest.skipped}
        problems = [f"question {q.id!r}: relevant path {p!r} is not in the bundle"
                    for q in chosen for p in q.relevant if p not in tree]
        if problems:
            raise QuestionFileError(f"question file has {len(problems)} problem(s)", problems)
    except QuestionFileError as exc:
        sys.exit(f"{exc}:\n  " + "\n  ".join(exc.problems))
    except (ArtifactError, OSError) as exc:
        sys.exit(f"{args.bundle} is not a readable gitrag bundle: {exc}")
    db = build_fts(chunks, docs, args.text)
    keep = DUMP_DEPTH if args.dump is not None else DOC_DEPTH
    dump = args.dump.open("w", encoding="utf-8") if args.dump is not None else None
    scores, rows = [], []
    for q in chosen:
        match = fts_query(q.question)
        ranking: list[str] = []
        if match:
            for (path,) in db.execute("SELECT path FROM c WHERE c MATCH ? ORDER BY bm25(c) LIMIT ?",
                                      (match, args.depth)):
                doc = docs[path]
                if not doc.published or (q.filter is not None and not _doc_matches(doc, q.filter)):
                    continue
                if path not in ranking:
                    ranking.append(path)
                    if len(ranking) == keep:
                        break
        scores.append(score_question(ranking[:DOC_DEPTH], q.relevant))
        rows.append({"id": q.id, "rank": first_relevant_rank(ranking[:DOC_DEPTH], q.relevant)})
        if dump is not None:
            dump.write(json.dumps({"id": q.id, "ranking": ranking}, ensure_ascii=False) + "\n")
    if dump is not None:
        dump.close()
    result = {"engine": "fts5", "sqlite": sqlite3.sqlite_version, "text": args.text,
              "bundle_id": manifest.bundle_id, "dataset_sha256": qset.sha256, "split": args.split,
              "evaluated": len(chosen), "skipped": skipped, "metrics": mean_scores(scores)}
    if args.json:
        print(json.dumps({**result, "questions": rows}, ensure_ascii=False, indent=1))
    else:
        print(f"{args.questions.name} split={args.split}: {len(chosen)} questions, skipped {skipped}")
        print("fts5     " + " ".join(f"{k}={v:.4f}" for k, v in result["metrics"].items()))


if __name__ == "__main__":
    main()
