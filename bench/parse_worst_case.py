"""Parse cost of pathological Markdown: CPU seconds to parse and chunk one file of a repeated unit.

For each unit (``[``, ``[[``, ``![``, ``*a``, ``_a``, a backtick, ``<`` and a few link-shaped ones) a
body of ``--bytes`` bytes (default 2 MiB, just under the default ``--max-file-bytes``) is parsed with
:func:`indexer.markdown.parse_markdown` and chunked with :func:`indexer.chunking.chunk_document`, as
a build does; one JSON row per unit: ``unit``, ``bytes``, ``layout`` (``line``: one line;
``lines``: 80-character lines, one paragraph), ``parse_cpu_s`` and ``chunk_cpu_s`` (process CPU
seconds of the two steps), ``chunks``.

    PYTHONPATH=. .venv/bin/python bench/parse_worst_case.py [--bytes 2097152] [--units '[' '*a']
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

UNITS = ["[", "[[", "![", "*a", "_a", "`", "<", "[a](", "[]", "[[a|", "\\[", "aaaaaaa[", "[a](b.md)", "&a", "`a"]


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from artifacts.config import ChunkConfig
    from indexer.chunking import chunk_document
    from indexer.markdown import outline, parse_markdown

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=int, default=2 * 1024 * 1024)
    parser.add_argument("--units", nargs="*", default=UNITS)
    parser.add_argument("--layout", choices=("line", "lines", "both"), default="both")
    args = parser.parse_args()
    layouts = ("line", "lines") if args.layout == "both" else (args.layout,)
    for layout in layouts:
        for unit in args.units:
            body = (unit * (args.bytes // len(unit) + 1))[: args.bytes]
            if layout == "lines":
                body = "\n".join(body[i : i + 79] for i in range(0, len(body), 79))[: args.bytes]
            outline.cache_clear()
            started = time.process_time()
            doc = parse_markdown("worst.md", body.encode(), blob_id="0" * 40, max_bytes=args.bytes + 4096)
            parsed = time.process_time()
            chunks = chunk_document(doc, ChunkConfig())
            row = {"unit": unit, "bytes": len(body.encode()), "layout": layout,
                   "parse_cpu_s": round(parsed - started, 2), "chunk_cpu_s": round(time.process_time() - parsed, 2),
                   "chunks": len(chunks)}
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
