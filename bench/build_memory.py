"""Benchmark: peak memory of ``gitrag build`` (the whole process tree), for subsets of a corpus and
for several versions of the code, run interleaved in one session.

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/build_memory.py --repo CLONE --work DIR \\
        --embedder sentence-transformers/all-MiniLM-L6-v2 \\
        --subset en/ --subset en/,de/ --subset en/,de/,fr/,es/ \\
        [--code /path/to/old/tree --code /path/to/new/tree] [--out result.json]

Each ``--subset`` is a comma-separated list of ``--include`` patterns (``all``: the whole corpus).
Each ``--code`` directory goes first on ``PYTHONPATH`` of its builds (default: this tree); for
every subset the code versions are run one after the other, in turns, so that load from other
processes falls on both alike.  Every build is a separate ``gitrag build --scratch --json`` process
into an empty store under ``--work``.

The build process and all its descendants (an embedding child process included) are sampled every
``--interval`` seconds from ``/proc``: ``tree_peak_mb`` is the largest *sum* of their resident sets
seen at one sample (what the machine had to hold), ``build_peak_mb`` the build process's own peak
(``VmHWM``-style, from its ``--json`` summary), ``embedder_peak_mb`` the largest ended embedding
child.  Sampling can miss a peak shorter than the interval; the per-process peaks cannot.
Prints one JSON object per build, then a summary table.
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

ROOT = Path(__file__).resolve().parents[1]


def _tree_rss_mb(root: int) -> float:
    """Sum of VmRSS (MB) of ``root`` and all its descendants, read from /proc."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", encoding="ascii", errors="replace") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(fields.get("PPid", "0").strip() or 0)
        rss[pid] = int((fields.get("VmRSS", "0 kB").split() or ["0"])[0])
    total = 0
    for pid, kb in rss.items():
        p = pid
        while p and p != root:
            p = parents.get(p, 0)
        if p == root:
            total += kb
    return total / 1024


def run_build(code: Path, repo: Path, store: Path, embedder: str, include: list[str],
              interval: float) -> dict[str, object]:
    """Run one scratch build with ``code`` first on PYTHONPATH; return its memory and time figures."""
    env = {**os.environ, "PYTHONPATH": str(code), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [str(Path(sys.executable).parent / "gitrag"), "build", "--repo", str(repo), "--store", str(store),
           "--embedder", embedder, "--scratch", "--json", "--quiet"]
    for pattern in include:
        cmd += ["--include", pattern]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tree_peak = 0.0
    while proc.poll() is None:
        tree_peak = max(tree_peak, _tree_rss_mb(proc.pid))
        time.sleep(interval)
    out, err = proc.communicate()
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"build failed ({proc.returncode}): {err[-2000:]}")
    summary = json.loads(out)
    return {
        "code": str(code), "include": include, "chunks": summary.get("chunks"),
        "vectors": summary.get("vectors"), "seconds": round(seconds, 1),
        "tree_peak_mb": round(tree_peak, 1), "build_peak_mb": summary.get("peak_rss_mb"),
        "embedder_peak_mb": summary.get("peak_rss_mb_embedder"),
        "peak_rss_mb_by_stage": summary.get("peak_rss_mb_by_stage"),
        "embed_seconds": (summary.get("timings") or {}).get("embed"),
        "load_average": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--embedder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--subset", action="append", required=True,
                        help="comma-separated --include patterns; 'all' for the whole corpus")
    parser.add_argument("--code", type=Path, action="append", help="source tree to run (default: this one)")
    parser.add_argument("--interval", type=float, default=0.25)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    codes = [c.resolve() for c in (args.code or [ROOT])]
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for s, subset in enumerate(args.subset):
        include = [] if subset == "all" else [p for p in subset.split(",") if p]
        order = codes if s % 2 == 0 else list(reversed(codes))  # alternate who goes first
        for c, code in enumerate(order):
            store = args.work / f"store-{s}-{c}"
            shutil.rmtree(store, ignore_errors=True)
            row = run_build(code, args.repo, store, args.embedder, include, args.interval)
            shutil.rmtree(store, ignore_errors=True)
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.out:
                args.out.write_text(json.dumps(rows, indent=1))
    print(f"{'code':<28} {'chunks':>7} {'tree MB':>8} {'build MB':>9} {'child MB':>9} {'s':>7} load")
    for row in rows:
        print(f"{str(row['code'])[-28:]:<28} {row['chunks']!s:>7} {row['tree_peak_mb']!s:>8} "
              f"{row['build_peak_mb']!s:>9} {row['embedder_peak_mb']!s:>9} {row['seconds']!s:>7} {row['load_average']}")


if __name__ == "__main__":
    main()
