"""MDX pages (Docusaurus, Astro Starlight) are documents (parser 4): indexed from a real Git tree, their
``import``/``export`` blocks are no text, JSX stays out of the snippets, and doc-site links reach them.
On the evcc docs (Starlight) 67 of the 106 German pages were ``.mdx`` and were not indexed before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from indexer.build import build_bundle
from indexer.markdown import parse_markdown, resolve_links
from query.bundle import open_bundle
from query.search import parse_search_request, search
from tests.conftest import RepoBuilder

GUIDE = """---
title: Ladepunkt einrichten
---
import { Tabs, TabItem } from '@astrojs/starlight/components';
import Hint from '../../components/Hint.astro';

export const meta = {
  draft: false,
};

Die Wallbox meldet sich auf Port 7090.

<Tabs>
  <TabItem label="Docker">
Mit Docker läuft evcc im Container.
  </TabItem>
</Tabs>

```js
import x from 'y';
```
"""


def test_mdx_esm_blocks_are_no_text_and_code_keeps_its_imports() -> None:
    doc = parse_markdown("docs/de/laden.mdx", GUIDE.encode(), blob_id="0", max_bytes=1 << 20)
    assert doc.title == "Ladepunkt einrichten"
    assert "@astrojs" not in doc.body and "export const" not in doc.body and "draft" not in doc.body
    assert "Die Wallbox meldet sich auf Port 7090." in doc.body
    assert "import x from 'y';" in doc.body  # inside a code fence: code, kept
    assert len(doc.body.split("\n")) == len(GUIDE.split("---\n", 2)[2].split("\n"))  # line numbers kept


def test_links_reach_mdx_pages_and_folder_index_mdx() -> None:
    page = parse_markdown("docs/de/start.md", b"[Laden](./laden) [Faq](/de/faq/) [Alt](alt.mdx)\n",
                          blob_id="0", max_bytes=1 << 20)
    others = [parse_markdown(p, b"# P\n\nText.\n", blob_id="1", max_bytes=1 << 20)
              for p in ("docs/de/laden.mdx", "docs/de/faq/index.mdx", "docs/de/alt.mdx")]
    resolve_links([page, *others])
    assert {link.target: link.resolved for link in page.links} == {
        "./laden": "docs/de/laden.mdx", "/de/faq/": "docs/de/faq/index.mdx", "alt.mdx": "docs/de/alt.mdx"}
    assert parse_markdown("docs/x/notes.markdown", b"Text.\n", blob_id="2", max_bytes=1 << 20).title == "notes"


def test_an_mdx_page_is_built_and_found(tmp_path: Path, hash_embedder: Any) -> None:
    repo = RepoBuilder(tmp_path / "repo")
    repo.write("docs/de/laden.mdx", GUIDE)
    repo.write("docs/de/index.md", "# Start\n\nSiehe [Laden](./laden).\n")
    result = build_bundle(repo.path, tmp_path / "store", repo.commit("docs"), embedder=hash_embedder)
    bundle = open_bundle(result.bundle_path, verify=False, embedder=hash_embedder)
    try:
        assert set(bundle.docs) == {"docs/de/laden.mdx", "docs/de/index.md"}
        body = search(bundle, parse_search_request({"query": "Wallbox Port", "limit": 3}))
        hit = body["results"][0]
        assert hit["document_path"] == "docs/de/laden.mdx"
        assert "@astrojs" not in hit["snippet"] and "<Tabs>" not in hit["snippet"]
    finally:
        bundle.close()
