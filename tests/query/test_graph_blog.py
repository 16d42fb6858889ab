"""Graph questions on the real Czech blog (shared corpus), built without flags: authors are slugs
named through ``content/authors.yaml``, posts link to each other by site URLs.  Expected values are
computed here from the files with PyYAML and a regular expression, independently of gitrag's parser."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
import yaml

from tests.conftest import require_shared

pytestmark = pytest.mark.slow

AUTHORS = ["zoul", "jakub.holzer", "radja", "eva", "teryii"]
_SITE_LINK = re.compile(r"\]\((?:https://blog\.cesko\.digital)?/\d{4}/\d{1,2}/([^)\s#?]+)")


@pytest.fixture(scope="module")
def blog(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> dict[str, Any]:
    from indexer.build import build_bundle
    from query.bundle import open_bundle

    source = require_shared("corpora/cesko-digital-blog.bundle")
    tmp = tmp_path_factory.mktemp("blog")
    repo = tmp / "repo"
    subprocess.run(["git", "clone", "-q", str(source), str(repo)], check=True)
    result = build_bundle(repo, tmp / "store", embedder=hash_embedder)
    posts = {}
    for path in sorted(repo.glob("content/**/*.md")):
        text = path.read_text(encoding="utf-8-sig")
        _, front, body = text.split("---", 2)
        posts[str(path.relative_to(repo))] = {"fm": yaml.safe_load(front) or {}, "body": body}
    names = {r["id"]: r.get("name", r["id"]) for r in yaml.safe_load((repo / "content/authors.yaml").read_text())}
    bundle = open_bundle(result.bundle_path, verify=False, load_model=False)
    yield {"bundle": bundle, "posts": posts, "names": names, "result": result}
    bundle.close()


def _ask(blog: dict[str, Any], question: str) -> dict[str, Any]:
    from query.graph.dispatch import answer_graph

    return answer_graph(blog["bundle"], {"query": question, "limit": 1000})


def _written_by(blog: dict[str, Any], slug: str) -> list[str]:
    return sorted(p for p, d in blog["posts"].items() if str(d["fm"].get("author", "")).strip() == slug)


def _tags(blog: dict[str, Any], slug: str) -> set[str]:
    return {t for p in _written_by(blog, slug) for t in blog["posts"][p]["fm"].get("tags") or []}


def test_generic_preset_with_authors_file_and_permalinks(blog: dict[str, Any]) -> None:
    choice = blog["result"].manifest.model_extra["graph_mapping_choice"]
    assert (choice["name"], choice["source"]) == ("generic", "detected")
    mapping = blog["result"].manifest.config.graph_mapping
    assert mapping["author_names"]["file"] == "content/authors.yaml"
    assert mapping["permalinks"] == {"field": "slug", "hosts": ["blog.cesko.digital"]}


@pytest.mark.parametrize("slug", AUTHORS)
def test_author_posts_post_author_and_tags(blog: dict[str, Any], slug: str) -> None:
    name = blog["names"].get(slug, slug)
    mine = _written_by(blog, slug)
    posts = _ask(blog, f"Jaké články napsal(a) {name}?")
    assert (posts["status"], posts["answer"]["documents"]) == ("ok", mine)
    assert posts["aggregation"]["count"] == len(mine)
    title = blog["posts"][mine[0]]["fm"]["title"]
    author = _ask(blog, f"Kdo napsal článek „{title}“?")
    assert (author["status"], author["answer"]["authors"]) == ("ok", [name])
    tags = _ask(blog, f"Jaké štítky má {name}?")
    assert (tags["status"], tags["answer"]["tags"]) == ("ok", sorted(_tags(blog, slug)))


def test_common_tags_of_every_pair(blog: dict[str, Any]) -> None:
    nonempty = 0
    for i, a in enumerate(AUTHORS):
        for b in AUTHORS[i + 1 :]:
            body = _ask(blog, f"Jaké společné štítky mají {blog['names'][a]} a {blog['names'][b]}?")
            expected = sorted(_tags(blog, a) & _tags(blog, b))
            assert (body["status"], body["answer"]["tags"]) == ("ok", expected), (a, b)
            nonempty += bool(expected)
    assert nonempty == 3  # zoul & eva, zoul & teryii, jakub.holzer & radja


def test_pages_linking_to_each_authors_most_linked_post(blog: dict[str, Any]) -> None:
    by_slug: dict[str, list[str]] = {}
    for path, post in blog["posts"].items():
        by_slug.setdefault(str(post["fm"].get("slug", "")).strip(), []).append(path)
    incoming: dict[str, set[str]] = {}
    for path, post in blog["posts"].items():
        for slug in set(_SITE_LINK.findall(post["body"])):
            targets = by_slug.get(slug.strip(), [])
            if len(targets) == 1 and targets[0] != path:
                incoming.setdefault(targets[0], set()).add(path)
    for author in AUTHORS:
        target = min(_written_by(blog, author), key=lambda p: (-len(incoming.get(p, ())), p))
        assert incoming.get(target), author
        title = blog["posts"][target]["fm"]["title"]
        body = _ask(blog, f"Které články odkazují na článek „{title}“?")
        assert (body["status"], body["intent"]) == ("ok", "links_to")
        assert body["answer"]["documents"] == sorted(incoming[target]), author
