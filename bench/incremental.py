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

One-commit mode (``--base-store STORE --rev REV``), each build a separate ``gitrag build --json``
process under ``/usr/bin/time -v`` (so peak RSS is per build)::

    .venv/bin/python bench/incremental.py --repo CLONE --work DIR --embedder hash-64 \
        --base-store STORE_WITH_PARENT_BUNDLE --rev REV [--rounds 1] [--queries 100]

Per round: an incremental build of ``REV`` into a copy of ``STORE`` (whose bundle of an ancestor is
the base) and a scratch build of ``REV`` into an empty store, alternating which goes first.  Then
compares the two bundles: ``content_digest``, the BM25 rankings (chunk ids and scores) of
``--queries`` queries (document titles and chunk phrases), and the vector index's recall@10 of the
incremental bundle against the scratch one (exact k-NN over ``vectors.npy`` as ground truth).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
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


def _subprocess_build(repo: Path, store: Path, rev: str, embedder: str, scratch: bool) -> dict:  # type: ignore[type-arg]
    """Run one ``gitrag build --json`` under ``/usr/bin/time -v``; return its summary plus wall and peak RSS."""
    gitrag = str(Path(sys.executable).with_name("gitrag"))
    cmd = ["/usr/bin/time", "-v", gitrag, "build", "--repo", str(repo), "--store", str(store), "--rev", rev,
           "--embedder", embedder, "--json", "--quiet"] + (["--scratch"] if scratch else [])
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    summary = json.loads(done.stdout)
    rss = next(int(line.split(":")[1]) for line in done.stderr.splitlines() if "Maximum resident set size" in line)
    keep = ("bundle_path", "built_from", "changes", "embeddings_computed", "timings", "content_digest")
    row = {k: summary.get(k) for k in keep}
    row.update({"label": "scratch" if scratch else "incremental", "seconds": round(wall, 2),
                "peak_rss_mb": round(rss / 1024, 1), "index_reuse": _manifest_extra(summary["bundle_path"])})
    print(json.dumps({k: row[k] for k in ("label", "seconds", "peak_rss_mb")}), flush=True)
    return row


def _manifest_extra(bundle_path: str) -> object:
    return json.loads((Path(bundle_path) / "manifest.json").read_text()).get("index_reuse")


def _queries(bundle_path: Path, n: int) -> list[str]:
    """``n`` queries from a bundle: every other one a document title, else 3-6 words of a chunk."""
    import random

    from artifacts.records import Chunk, Document, read_records

    rng = random.Random(15)
    docs = list(read_records(bundle_path / "docs.jsonl", Document))
    chunks = list(read_records(bundle_path / "chunks.jsonl", Chunk))
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(rng.choice(docs).title)
        else:
            words = rng.choice(chunks).text.split()
            start = rng.randrange(max(1, len(words) - 6))
            out.append(" ".join(words[start : start + rng.randint(3, 6)]))
    return out


def compare_bundles(inc_path: Path, scratch_path: Path, n_queries: int) -> dict:  # type: ignore[type-arg]
    """BM25 rankings of ``n_queries`` queries and vector recall@10 of two bundles of one commit."""
    import numpy as np

    from artifacts.embedding import load_embedder
    from query.bundle import open_bundle
    from query.search.bm25 import bm25_ranking

    manifest = json.loads((scratch_path / "manifest.json").read_text())
    model = load_embedder(manifest["config"]["embedder"]["model_id"])
    a = open_bundle(inc_path, embedder=model)
    b = open_bundle(scratch_path, embedder=model)
    queries = _queries(scratch_path, n_queries)
    same = 0
    differing = []
    for q in queries:
        hits_a, _ = bm25_ranking(a, q, depth=10, published_only=True)
        hits_b, _ = bm25_ranking(b, q, depth=10, published_only=True)
        if hits_a == hits_b:
            same += 1
        else:
            differing.append(q)
    # Vector recall@10: query vectors = 200 stored rows; truth = exact inner product over the rows.
    vectors = np.load(scratch_path / "vectors/vectors.npy")
    rng = np.random.default_rng(15)
    picks = rng.choice(len(vectors), size=min(200, len(vectors)), replace=False)
    qv = vectors[picks]
    truth = np.argsort(-(qv @ vectors.T), axis=1)[:, :10]

    def recall(bundle) -> float:  # type: ignore[no-untyped-def]
        ids = [c.chunk_id for c in bundle.chunks]
        scratch_ids = json.loads((scratch_path / "vectors/ids.json").read_text())
        bundle.hnsw.set_ef(200)
        labels, _ = bundle.hnsw.knn_query(qv, k=10)
        hits = 0
        for row, found in zip(truth, labels, strict=True):
            want = {scratch_ids[j] for j in row}
            hits += len(want & {ids[j] for j in found})
        return round(hits / (10 * len(qv)), 4)

    result = {"queries": len(queries), "bm25_top10_identical": same, "differing_queries": differing[:5],
              "vector_recall@10_incremental": recall(a), "vector_recall@10_scratch": recall(b)}
    a.close()
    b.close()
    return result


def one_commit(args: argparse.Namespace) -> None:
    work = args.work
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    rev = _commit(args.repo, args.rev)
    rounds = []
    for r in range(args.rounds):
        inc_store, scratch_store = work / f"inc{r}", work / f"scratch{r}"
        shutil.copytree(args.base_store, inc_store, symlinks=True)
        order = [False, True] if r % 2 == 0 else [True, False]
        rows = {}
        for scratch in order:
            load = os.getloadavg()[0]
            row = _subprocess_build(args.repo, scratch_store if scratch else inc_store, rev, args.embedder, scratch)
            row["load_before"] = round(load, 2)
            rows[row["label"]] = row
        inc, scr = rows["incremental"], rows["scratch"]
        rounds.append({"incremental": inc, "scratch": scr,
                       "ratio": round(inc["seconds"] / scr["seconds"], 4),
                       "content_digest_equal": inc["content_digest"] == scr["content_digest"],
                       "compare": compare_bundles(Path(inc["bundle_path"]), Path(scr["bundle_path"]),
                                                  args.queries)})
    report = {"embedder": args.embedder, "rev": rev, "rounds": rounds}
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--embedder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--far", type=int, default=10)
    parser.add_argument("--scratch-head", action="store_true")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--base-store", type=Path, help="one-commit mode: a store holding a bundle of an ancestor")
    parser.add_argument("--rev", default="HEAD", help="one-commit mode: the commit to build")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    if args.base_store is not None:
        one_commit(args)
        return

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
