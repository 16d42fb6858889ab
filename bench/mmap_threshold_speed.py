"""Embedding speed with glibc's default malloc vs a fixed mmap threshold, runs alternated.

The build's embedding child fixes ``M_MMAP_THRESHOLD`` (``artifacts.embedding.fix_mmap_threshold``) so
that a CPU torch model's resident set stays flat; this measures what that costs in passages/s.  Each
run is a fresh interpreter (the threshold is read by glibc at start from ``MALLOC_MMAP_THRESHOLD_``)
that embeds the same passages in-process in batches of 16 after one warm-up batch::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/mmap_threshold_speed.py --repo /tmp/obsidian-help \\
        [--folder en/] [--passages 320] [--rounds 2] [--threshold 131072 --threshold 4194304]

Prints one line per run (setting, passages, seconds, passages/s) and per round the ratio of each
threshold to the default.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import glob, sys, time
sys.path.insert(0, {root!r})
from artifacts.embedding import load_embedder
texts = []
for p in sorted(glob.glob({pattern!r}, recursive=True)):
    t = open(p, encoding="utf-8", errors="replace").read()
    texts += [t[i:i + 1500] for i in range(0, min(len(t), 6000), 1500)]
texts = texts[:{count}]
m = load_embedder({model!r})
m.embed_passages(texts[:16])
start = time.perf_counter()
for i in range(0, len(texts), 16):
    m.embed_passages(texts[i:i + 16])
print(len(texts), time.perf_counter() - start)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", required=True, help="a clone of a Markdown corpus")
    parser.add_argument("--folder", default="en/", help="folder of the corpus to read (default en/)")
    parser.add_argument("--passages", type=int, default=320)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--threshold", type=int, action="append", help="bytes (default: 131072)")
    args = parser.parse_args()
    thresholds = args.threshold or [131072]
    code = CHILD.format(root=str(ROOT), pattern=str(Path(args.repo) / args.folder / "**" / "*.md"),
                        count=args.passages, model=args.model)
    for round_no in range(1, args.rounds + 1):
        rates: dict[str, float] = {}
        for setting in ["default", *map(str, thresholds)]:
            env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
            if setting != "default":
                env["MALLOC_MMAP_THRESHOLD_"] = setting
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            count, seconds = out.stdout.split()
            rates[setting] = int(count) / float(seconds)
            print(f"round {round_no} {setting:>9}: {count} passages in {float(seconds):.1f} s = "
                  f"{rates[setting]:.1f}/s", flush=True)
        print(f"round {round_no} ratio to default: " + ", ".join(
            f"{k} {v / rates['default']:.2f}" for k, v in rates.items() if k != "default"), flush=True)


if __name__ == "__main__":
    main()
