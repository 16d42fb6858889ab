"""Links of a documentation site's Markdown: what is in the files against what the parser finds and resolves.

Parses every Markdown file of ``--rev`` (``--include`` as the build's) exactly as ``gitrag build``
does (:func:`indexer.markdown.parse_markdown`, :func:`indexer.markdown.resolve_links`) and counts

* ``in_files``: distinct link syntax in each page, counted independently with a plain scanner outside
  fenced code and inline code: inline links ``[text](dest)``, reference definitions ``[ref]: dest``
  and Hugo ``[text]({{< relref "x" >}})``
  whose destination is not a URL with a scheme, ``//host``, an ``#anchor`` or an image/file
  (``.png``, ``.pdf``, ...), plus ``[[wikilinks]]``;
* ``found``: links the parser recorded, ``resolved``: those that name a page of the commit;

per shape of the target (``.md``, ``folder/``, extension-less, ``.html``, site-absolute ``/x``,
shortcode, wikilink).  Run it with ``PYTHONPATH`` at two checkouts to compare parsers:

    PYTHONPATH=. .venv/bin/python bench/doc_links.py --repo /work/.mirror/vuejs+docs/repo [--include src/] [--json]
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"(?<!!)\[[^\[\]\n]*\]\(\s*(\{\{[<%].*?[%>]\}\}|<[^>\n]*>|[^)\s]*)[^)\n]*\)")
_WIKI = re.compile(r"\[\[[^\[\]\n]+\]\]")
_REF_DEF = re.compile(r"^ {0,3}\[(?!\^)[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)", re.M)
_FILE = re.compile(r"\.(?!md$|html?$)[A-Za-z][A-Za-z0-9]{0,7}$")


def shape(dest: str) -> str:
    """The shape of a link destination (see the module docstring)."""
    if dest.startswith("{{"):
        return "shortcode"
    path = dest.split("#", 1)[0].split("?", 1)[0]
    if path.startswith("/"):
        return "site-absolute"
    if path.endswith("/") or path in (".", ".."):
        return "folder/"
    if path.lower().endswith(".md"):
        return ".md"
    if path.lower().endswith((".html", ".htm")):
        return ".html"
    return "extension-less"


def links_in_text(text: str) -> Counter[str]:
    """Page links written in ``text`` (outside code), by shape."""
    text = _CODE.sub("", _FENCE.sub("", text))
    counts: Counter[str] = Counter()
    seen: set[str] = set()
    for match in _LINK.finditer(text):
        if match.group(0) in seen:  # the parser keeps one of exact duplicates in a page: so does this count
            continue
        seen.add(match.group(0))
        dest = match.group(1).strip().strip("<>")
        bare = dest.split("#", 1)[0]
        if (not dest or dest.startswith(("#", "//")) or re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", dest)
                or (not dest.startswith("{{") and _FILE.search(posixpath.basename(bare.rstrip("/"))))):
            continue
        counts[shape(dest)] += 1
    for match in _REF_DEF.finditer(text):  # reference definitions: [ref]: /path/
        dest = match.group(1).strip("<>")
        name = posixpath.basename(dest.split("#")[0].rstrip("/"))
        if (match.group(0) in seen or not dest or dest.startswith(("#", "//", "{{"))
                or re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", dest) or _FILE.search(name)):
            continue
        seen.add(match.group(0))
        counts[shape(dest)] += 1
    counts["wikilink"] += len(set(_WIKI.findall(text)))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--include", action="append", default=[])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from artifacts.config import path_included
    from indexer.gitsource import iter_markdown, open_repo, resolve_commit
    from indexer.markdown import parse_markdown, resolve_links

    repo = open_repo(args.repo)
    info = resolve_commit(repo, args.rev)
    docs, in_files = [], Counter()
    for source in iter_markdown(repo, info.tree):
        if not path_included(source.path, args.include):
            continue
        try:
            doc = parse_markdown(source.path, source.read(), blob_id=source.blob_id, max_bytes=2 << 20)
        except Exception:  # noqa: BLE001 - skipped as the build would
            continue
        docs.append(doc)
        in_files += links_in_text(doc.body)
    resolve_links(docs)
    found, resolved = Counter(), Counter()
    for doc in docs:
        for link in doc.links:
            kind = "wikilink" if link.kind == "wikilink" else shape(link.target)
            found[kind] += 1
            resolved[kind] += link.resolved is not None
    kinds = sorted(set(in_files) | set(found), key=lambda k: -in_files[k])
    report = {"repo": args.repo, "commit": info.commit, "pages": len(docs),
              "in_files": sum(in_files.values()), "found": sum(found.values()), "resolved": sum(resolved.values()),
              "by_shape": {k: {"in_files": in_files[k], "found": found[k], "resolved": resolved[k]} for k in kinds}}
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"{args.repo} @ {info.commit[:12]}: {len(docs)} pages; page links in the files {report['in_files']}, "
          f"found {report['found']}, resolved {report['resolved']}")
    print(f"{'shape':<15} {'in files':>9} {'found':>7} {'resolved':>9}")
    for kind, row in report["by_shape"].items():
        print(f"{kind:<15} {row['in_files']:>9} {row['found']:>7} {row['resolved']:>9}")


if __name__ == "__main__":
    main()
