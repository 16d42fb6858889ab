"""The documentation runs: every ```python block of docs/*.md, its links, and no machine paths.

A page's Python blocks run in order in one namespace (one pasted session), from a folder holding
``my-wiki``: a real Git repository with the sample wiki (``examples/wiki/``) committed, built with the
deterministic ``hash-64`` embedder through ``GITRAG_EMBEDDER`` so that the examples name no test
embedder. After the blocks, a page's check (``CHECKS``) asserts what they produced.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RepoBuilder

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """Return ``(line, code)`` of every ```python block of ``page`` (line: 1-based, of the fence)."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in FENCE.finditer(text)]


def _check_api(ns: dict[str, Any], commit: str) -> None:
    result, store = ns["result"], ns["store"]
    assert result.manifest.commit == commit and result.current and not result.manifest.skipped
    assert store.current_id() == result.bundle_id == ns["info"].bundle_id
    assert ns["verified"].content_digest == result.manifest.content_digest
    found = ns["found"]
    assert found["status"] == "ok" and found["index_version"]["commit"] == commit
    assert found["results"][0]["document_path"] == "students/eva-novakova.md"
    assert found["results"][0]["source_url"] == (
        "https://git.example.org/wiki/src/branch/main/students/eva-novakova.md")
    facts = ns["facts"]
    assert (facts["status"], facts["intent"]) == ("ok", "documents_with_tag")
    assert facts["answer"]["documents"] == ["README.md"] and facts["aggregation"]["count"] == 1
    reply = ns["reply"]
    assert reply["status"] == "ok" and reply["answer"] and reply["claims"]
    cited = {e["document_path"] for claim in reply["claims"] for e in claim["evidence"]}
    assert cited and cited <= {s["document_path"] for s in reply["sources"]}
    assert ns["retrieved"]["evidence"] and ns["retrieved"]["answer"] is None


CHECKS: dict[str, Callable[[dict[str, Any], str], None]] = {"api.md": _check_api}
"""What a page's examples must have produced, by page name (a page without a check only has to run)."""

EXAMPLE_PAGES = [p for p in PAGES if python_blocks(p)]


def test_the_api_page_has_runnable_examples_and_a_check() -> None:
    assert DOCS / "api.md" in EXAMPLE_PAGES and len(python_blocks(DOCS / "api.md")) >= 5
    assert set(CHECKS) <= {p.name for p in EXAMPLE_PAGES}


@pytest.fixture
def sample_wiki(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``tmp_path/my-wiki`` with the sample wiki committed; the working directory is ``tmp_path``."""
    repo = RepoBuilder(tmp_path / "my-wiki")
    shutil.copytree(ROOT / "examples" / "wiki", repo.path, dirs_exist_ok=True)
    commit = repo.commit("sample wiki")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITRAG_EMBEDDER", "hash-64")
    return commit


@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=lambda p: p.name)
def test_python_examples_run(page: Path, sample_wiki: str, capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for line, code in python_blocks(page):
        exec(compile(code, f"{page.relative_to(ROOT)}:{line}", "exec"), namespace)  # noqa: S102 - the examples
    assert capsys.readouterr().out  # the examples show what they return
    check = CHECKS.get(page.name)
    if check is not None:
        check(namespace, sample_wiki)


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _without_fences(page: Path) -> str:
    return re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)


def _prose(page: Path) -> str:
    """The page without code blocks and inline code (links inside them are examples, not links)."""
    return re.sub(r"`[^`\n]*`", "", _without_fences(page))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path) if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md":
            headings = re.findall(r"^#+ (.*)$", _without_fences(linked), flags=re.M)
            if anchor not in {_slug(h) for h in headings}:
                broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_machine_paths(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = re.findall(r"(?:^|[\s`(=])((?:/work|/tmp|\.\./shared)/\S*)", text)
    assert not found, f"{page.name} names paths of a development machine: {found}"
