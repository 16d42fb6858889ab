"""Make a description-to-page question file (like ``obsidian-desc-*``) for one language folder.

Each page of ``FOLDER`` in the obsidian-help vault whose front matter has a ``description:`` gives
one question: the description is the query, the page is the one relevant document, and the
question is filtered to the folder.  Index the pages *without* their descriptions:
``../shared/bench/obsidian-nodesc.bundle`` is the vault with every ``description:`` removed, so
a bundle of it (``--include ru/``) is the matching corpus.  The file is written outside the
repository (it is derived from a shared corpus and never committed).

    git clone -q ../shared/corpora/obsidian-help.bundle /tmp/ev/obsidian-help
    .venv/bin/python bench/make_desc_qrels.py --repo /tmp/ev/obsidian-help --folder ru/ \\
        --out /tmp/ev/obsidian-desc-ru.qrels.jsonl

The Cyrillic set checks fusion with an arm that carries no signal (an English-only model on
Russian text).  Pages are read from ``--rev`` (default ``HEAD``) through pygit2, the same tree
walk the indexer uses; the question id is ``<lang>-<nnn>`` in path order.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pygit2
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from artifacts.gittree import markdown_entries  # noqa: E402


def front_matter(text: str) -> dict[str, object]:
    """Return the YAML front matter of a Markdown page as a dict (empty when absent or invalid)."""
    if not text.startswith("---\n"):
        return {}
    end = text.find("\n---", 4)
    if end < 0:
        return {}
    try:
        data = YAML(typ="safe").load(text[4:end])
    except Exception:  # noqa: BLE001 - a broken header only drops that page from the set
        return {}
    return data if isinstance(data, dict) else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--folder", required=True, help="language folder, e.g. ru/")
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    folder = args.folder if args.folder.endswith("/") else args.folder + "/"
    repo = pygit2.Repository(args.repo)
    tree = repo.revparse_single(args.rev).peel(pygit2.Commit).tree
    rows = []
    for path, entry in markdown_entries(repo, tree):
        if not path.startswith(folder) or entry.filemode == pygit2.GIT_FILEMODE_LINK:
            continue
        try:
            text = repo[entry.id].data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        description = front_matter(text).get("description")
        if isinstance(description, str) and description.strip():
            rows.append((path, " ".join(description.split())))
    lang = folder.rstrip("/").replace("/", "-")
    with args.out.open("w", encoding="utf-8") as fh:
        for i, (path, question) in enumerate(sorted(rows)):
            fh.write(json.dumps({"id": f"{lang}-{i:03d}", "question": question, "relevant": [path],
                                 "filter": {"path_prefix": folder}}, ensure_ascii=False) + "\n")
    print(f"{len(rows)} questions -> {args.out}")


if __name__ == "__main__":
    main()
