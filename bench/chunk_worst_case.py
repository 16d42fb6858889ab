"""Build cost of one pathological Markdown file: CPU seconds of a real ``build_bundle`` per unit and size.

For each unit (one long line of ``[``, backticks, letters, ``ab1``, ``=``, ``*a``, ``é`` ...) and each
size (``--sizes``, default 1 MiB and 2 MiB, just under the default ``--max-file-bytes``), a Git
repository of one ``worst.md`` plus one ordinary page is built from scratch into a new store with the
``hash-64`` embedder, as ``gitrag build`` does (parse, chunk, embed in a child process, Whoosh,
hnswlib, graph, publish).  One JSON row per build: ``unit``, ``bytes``, ``cpu_s`` (this process and
its children: user + system), the manifest's stage seconds (wall) and ``chunks``; then a row per unit
with ``cpu_ratio`` (largest size over smallest; linear: the size ratio).

    PYTHONPATH=. .venv/bin/python bench/chunk_worst_case.py [--sizes 1048576,2097152] [--units '[' '`'] [--tree DIR]

``--tree DIR`` imports gitrag from another checkout (e.g. the code before a change).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

UNITS = ["[", "`", "a", "ab1", "=", "*a", "é", "[[", "<"]


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.org", *args],
                   check=True, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=f"{1024 * 1024},{2 * 1024 * 1024}")
    parser.add_argument("--units", nargs="*", default=UNITS)
    parser.add_argument("--tree", default=None, help="import gitrag from this checkout")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.tree).resolve() if args.tree else Path(__file__).resolve().parent.parent))
    from artifacts.embedding import load_embedder
    from indexer.build import build_bundle
    sizes = [int(s) for s in args.sizes.split(",")]
    embedder = load_embedder("hash-64")
    for unit in args.units:
        cpu: dict[int, float] = {}
        for size in sizes:
            work = Path(tempfile.mkdtemp(prefix="gitrag-worst-"))
            try:
                repo = work / "repo"
                repo.mkdir()
                subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
                body = (unit * (size // len(unit.encode()) + 1))
                data = body.encode()[:size].decode("utf-8", errors="ignore")
                (repo / "worst.md").write_text(data, encoding="utf-8")
                (repo / "page.md").write_text("# Page\n\nAn ordinary page.\n", encoding="utf-8")
                _git(repo, "add", "-A")
                _git(repo, "commit", "-q", "-m", "worst")
                started = _cpu()
                result = build_bundle(repo, work / "store", embedder=embedder, max_file_bytes=size + 4096)
                cpu[size] = _cpu() - started
                manifest = result.manifest
                print(json.dumps({"unit": unit, "bytes": len(data.encode()), "cpu_s": round(cpu[size], 2),
                                  "stages_s": {k: round(v, 2) for k, v in manifest.stats.timings.items()},
                                  "chunks": manifest.counts.chunks, "skipped": manifest.counts.skipped}),
                      flush=True)
            finally:
                shutil.rmtree(work, ignore_errors=True)
        print(json.dumps({"unit": unit, "sizes": sizes,
                          "cpu_ratio": round(cpu[sizes[-1]] / max(cpu[sizes[0]], 1e-3), 2),
                          "size_ratio": round(sizes[-1] / sizes[0], 2)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
