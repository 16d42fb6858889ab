"""Benchmark: scratch build vs incremental builds, measured side by side in one run.

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/incremental.py --repo CLONE --work DIR \\
        [--embedder sentence-transformers/all-MiniLM-L6-v2] [--far 10] [--out result.json]

Steps, all in one process with one loaded model:

1. scratch build of ``HEAD~far`` (the reference scratch cost, on a corpus within ``far`` commits
   of HEAD);
2. incremental ``HEAD~1`` from ``HEAD~far``, then incremental ``HEAD`` from ``HEAD~1``;
3. in a second store holding only the ``HEAD~far`` bundle: incremental ``HEAD`` from ``HEAD~far``;
4. optionally (``--scratch-head``) a scratch build of ``HEAD`` too.

Prints one JSON object: per build the wall seconds, embeddings computed/reused, documents
changed, and the ratio to the scratch build.  The corpus is only read; results go to ``--work``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from pathlib import Path

from artifacts.embedding import load_embedder
from indexer.build import build_bundle


def _commit(repo: Path, rev: str) -> str:
    return subprocess.run(["git", "rev-parse", rev], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def _timed(label: str, repo: Path, store: Path, rev: str, model, scratch: bool = False) -> dict:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = build_bundle(repo, store, rev, embedder=model, scratch=scratch)
    seconds = time.perf_counter() - start
    m = result.manifest
    row = {
        "label": label, "commit": m.commit, "built_from": m.built_from, "seconds": round(seconds, 2),
        "documents": m.counts.documents, "chunks": m.counts.chunks,
        "embeddings_computed": m.stats.embeddings_computed, "embeddings_reused": m.stats.embeddings_reused,
        "changes": (m.model_extra or {}).get("changes"), "timings": m.stats.timings,
        "content_digest": m.content_digest,
    }
    print(json.dumps({k: row[k] for k in ("label", "seconds", "embeddings_computed", "embeddings_reused")}),
          flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--embedder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--far", type=int, default=10)
    parser.add_argument("--scratch-head", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    model = load_embedder(args.embedder)
    work = args.work
    if work.exists():
        shutil.rmtree(work)
    store, store_far = work / "store", work / "store-far"
    far = _commit(args.repo, f"HEAD~{args.far}")
    rows = [_timed(f"scratch HEAD~{args.far}", args.repo, store, far, model, scratch=True)]
    shutil.copytree(store, store_far)
    rows.append(_timed(f"incremental HEAD~1 from HEAD~{args.far}", args.repo, store, _commit(args.repo, "HEAD~1"),
                       model))
    rows.append(_timed("incremental HEAD from HEAD~1", args.repo, store, _commit(args.repo, "HEAD"), model))
    rows.append(_timed(f"incremental HEAD from HEAD~{args.far}", args.repo, store_far, _commit(args.repo, "HEAD"),
                       model))
    if args.scratch_head:
        rows.append(_timed("scratch HEAD", args.repo, work / "store-scratch", _commit(args.repo, "HEAD"), model,
                           scratch=True))
    reference = rows[0]["seconds"]
    for row in rows:
        row["ratio_to_scratch"] = round(row["seconds"] / reference, 4)
    report = {"embedder": model.spec.model_id, "repo_head": _commit(args.repo, "HEAD"), "builds": rows}
    if args.scratch_head:
        report["incremental_equals_scratch_digest"] = rows[2]["content_digest"] == rows[-1]["content_digest"]
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
