"""Doc-site Markdown read right: Hugo shortcode links, site-absolute paths, folder and extension-less links
resolve to pages, and the graph schema detector is not fooled by Hugo's ``aliases`` redirects.

Real parses (markdown-it-py) and a real build over a tiny Git repository shaped like a Hugo and a
VitePress site.
"""

from __future__ import annotations

from pathlib import Path

from artifacts.graphmap import detect_mapping, note_aliases
from indexer.markdown import parse_markdown, resolve_links
from tests.conftest import RepoBuilder

PAGE = b"# P\n\nText.\n"


def _resolved(path: str, body: str, others: list[str]) -> dict[str, str | None]:
    doc = parse_markdown(path, body.encode(), blob_id="0", max_bytes=1 << 20)
    docs = [doc] + [parse_markdown(p, PAGE, blob_id="1", max_bytes=1 << 20) for p in others]
    resolve_links(docs)
    return {link.target: link.resolved for link in doc.links}


def test_hugo_links_resolve_against_the_content_root() -> None:
    body = ('See [intro]({{< relref "guide/intro.md#setup" >}}), [faq]({{% ref "faq" %}}),\n'
            "[profile](/user/profile/), [docs](/docs/), [about](/about), [old](../legacy.html).\n"
            "[pic](/images/a.png), [site](https://gohugo.io/), [top](#top), `[code](/not/a/link/)`.\n")
    pages = ["content/en/docs/guide/intro.md", "content/en/docs/faq.md", "content/en/user/profile.md",
             "content/en/docs/_index.md", "content/en/about/index.md", "content/en/legacy.md", "README.md"]
    got = _resolved("content/en/docs/start.md", body, pages)
    assert got == {
        "guide/intro.md": "content/en/docs/guide/intro.md",  # relref: relative to the page
        "faq": "content/en/docs/faq.md",
        "/user/profile/": "content/en/user/profile.md",  # pretty URL of a page file
        "/docs/": "content/en/docs/_index.md",  # a section
        "/about": "content/en/about/index.md",  # a page bundle
        "../legacy.html": "content/en/legacy.md",
    }  # the image, the URL, the anchor and the code span are no page links


def test_vitepress_folder_and_extensionless_links() -> None:
    body = "[Migration](./Datenmigration/) · [Setup](setup) · [Start](/guide/) · [Readme](../)\n"
    pages = ["docs/handbuch/Datenmigration/index.md", "docs/handbuch/setup.md", "docs/guide/index.md",
             "docs/README.md"]
    got = _resolved("docs/handbuch/uebersicht.md", body, pages)
    assert got == {"./Datenmigration/": "docs/handbuch/Datenmigration/index.md", "setup": "docs/handbuch/setup.md",
                   "/guide/": "docs/guide/index.md", "../": "docs/README.md"}


def test_a_link_to_no_page_stays_unresolved() -> None:
    got = _resolved("docs/a.md", "[x](/missing/) [y](./nope) [z](other.md)\n", ["docs/b.md"])
    assert got == {"/missing/": None, "./nope": None, "other.md": None}


def test_hugo_alias_redirects_are_not_obsidian_aliases() -> None:
    assert note_aliases({"aliases": ["/user/profile/", "/old.html", "https://x.org/a", "docs/setup"]}) == []
    assert note_aliases({"aliases": ["Počítačové siete", "TCP"], "alias": "Siete"}) == ["Počítačové siete", "TCP",
                                                                                      "Siete"]
    hugo = [parse_markdown(f"content/p{i}.md", f"---\ntitle: P{i}\naliases: [/old/p{i}/]\n---\n# P{i}\n".encode(),
                           blob_id=str(i), max_bytes=1 << 20) for i in range(20)]
    mapping, choice = detect_mapping(hugo, {}, {})
    assert choice.name == "generic"
    vault = [parse_markdown(f"n{i}.md", f"---\naliases: [Note {i}]\n---\n# N{i}\n".encode(), blob_id=str(i),
                            max_bytes=1 << 20) for i in range(20)]
    assert detect_mapping(vault, {}, {})[1].name == "obsidian"


def test_the_detector_samples_only_the_included_paths(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    from indexer.build import build_bundle

    for i in range(12):
        repo.write(f"vault/n{i}.md", f"# N{i}\n\nSee [[n{(i + 1) % 12}]].\n")
    for i in range(3):
        repo.write(f"site/p{i}.md", f"# P{i}\n\nPlain page {i}, see [next](p{(i + 1) % 3}.md).\n")
    repo.commit()
    whole = build_bundle(repo.path, tmp_path / "a", embedder=hash_embedder)
    site = build_bundle(repo.path, tmp_path / "b", embedder=hash_embedder, include=["site/"])
    assert whole.manifest.model_extra["graph_mapping_choice"]["name"] == "obsidian"
    assert site.manifest.model_extra["graph_mapping_choice"]["name"] == "generic"
    assert site.manifest.counts.relationships.get("LINKS_TO") == 3


def test_site_addresses_ignore_case_and_other_shortcodes_are_no_links() -> None:
    body = ("[format](/functions/time/format/) [Page](/Methods/Page/) [exact](Guide.md) "
            "[rss]({{% eturl rss %}}) [g](g)\n")
    pages = ["content/en/functions/time/Format.md", "content/en/methods/page/_index.md", "content/en/guide.md"]
    got = _resolved("content/en/start.md", body, pages)
    assert got == {"/functions/time/format/": "content/en/functions/time/Format.md",  # Hugo lowercases addresses
                   "/Methods/Page/": "content/en/methods/page/_index.md",
                   "Guide.md": None,  # a file name stays exact
                   "g": None}  # a glossary shorthand is a link to no page; eturl is no page link at all
