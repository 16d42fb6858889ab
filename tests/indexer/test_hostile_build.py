"""Hostile input files never fail a build (issue 27, findings 1 and 2): each is a recorded skip or a document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexer.build import build_bundle
from indexer.errors import SkipFile
from indexer.markdown import parse_markdown
from tests.conftest import RepoBuilder

NESTING_WINDOW = range(200, 601, 25)
"""Depths around the old failure window (about 260-450 levels gave a pydantic serialization error)."""


def _nested(kind: str, n: int) -> str:
    """A front matter of ``kind`` nested ``n`` levels deep, then a body."""
    if kind == "yaml_flow":
        return "---\nk: " + "[" * n + "]" * n + "\n---\nbody text\n"
    if kind == "yaml_block":
        return "---\nk:\n  " + "- " * n + "x\n---\nbody text\n"
    if kind == "yaml_mapping":
        return "---\n" + "".join("  " * i + f"k{i}:\n" for i in range(n)) + "  " * n + "v\n---\nbody text\n"
    if kind == "toml_dotted":
        return "+++\n" + ".".join(f"a{i}" for i in range(n)) + " = 1\n+++\nbody text\n"
    if kind == "toml_array":
        return "+++\nk = " + "[" * n + "]" * n + "\n+++\nbody text\n"
    raise AssertionError(kind)


KINDS = ("yaml_flow", "yaml_block", "yaml_mapping", "toml_dotted", "toml_array")


@pytest.mark.parametrize("kind", KINDS)
def test_deep_front_matter_is_a_skip_not_an_error(kind: str) -> None:
    for n in NESTING_WINDOW:
        with pytest.raises(SkipFile) as caught:
            parse_markdown("deep.md", _nested(kind, n).encode(), blob_id="0" * 40, max_bytes=1 << 21)
        assert caught.value.reason == "invalid_front_matter", (kind, n)
        assert "nested" in caught.value.detail


def test_moderate_nesting_is_still_indexed() -> None:
    doc = parse_markdown("ok.md", _nested("yaml_flow", 20).encode(), blob_id="0" * 40, max_bytes=1 << 21)
    depth, value = 0, doc.front_matter["k"]
    while value:
        depth, value = depth + 1, value[0]
    assert depth == 19 and doc.body.strip() == "body text"


def test_a_build_over_the_nesting_window_records_every_file_as_skipped(repo: RepoBuilder, tmp_path: Path,
                                                                        hash_embedder) -> None:
    expected = set()
    for kind in KINDS:
        for n in NESTING_WINDOW:
            repo.write(f"deep/{kind}-{n}.md", _nested(kind, n))
            expected.add(f"deep/{kind}-{n}.md")
    repo.write("good.md", "# Good\n\nplain page about otters\n")
    repo.commit("hostile front matter")
    result = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    skipped = {s.path: s for s in result.manifest.skipped}
    assert set(skipped) == expected
    assert {s.reason for s in skipped.values()} == {"invalid_front_matter"}
    docs = [json.loads(line) for line in (result.bundle_path / "docs.jsonl").read_text().splitlines()]
    assert [d["path"] for d in docs] == ["good.md"]
