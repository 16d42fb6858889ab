"""Hostile input files never fail a build (issue 27, findings 1 and 2): each is a recorded skip or a document."""

from __future__ import annotations

import functools
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


# --- finding 2: parse cost linear in the file ------------------------------------------------------

WORST_UNITS = ["[", "[[", "![", "*a", "_a", "`", "<"]
_CHILD = """
import resource, sys, time
from indexer.markdown import parse_markdown
unit = sys.argv[1]
body = (unit * (2 * 1024 * 1024 // len(unit) + 1))[: 2 * 1024 * 1024]
started = time.process_time()
doc = parse_markdown("worst.md", body.encode(), blob_id="0" * 40, max_bytes=4 * 1024 * 1024)
print(time.process_time() - started, len(doc.body))
"""


@pytest.mark.parametrize("unit", WORST_UNITS)
def test_a_2_mib_pathological_file_parses_in_under_5_cpu_seconds(unit: str) -> None:
    """In a child process with a wall-clock limit, so that a quadratic parser fails the test instead of hanging it."""
    import os
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, unit], capture_output=True, text=True, timeout=60,
                              env=env, check=True)
    except subprocess.TimeoutExpired:
        pytest.fail(f"parsing 2 MiB of {unit!r} took over 60 s")
    cpu, length = done.stdout.split()
    assert int(length) == 2 * 1024 * 1024  # the whole text is kept
    assert float(cpu) < 5.0, (unit, cpu)


def test_defused_dense_text_keeps_its_lines_links_and_heading_text() -> None:
    from indexer.markdown import outline

    flood = "*a_b`c<d&e[" * 2000  # 22,000 characters, half of them markup: defused
    body = (f"# Title *x* `y` [z]\n\n{flood} [[Wiki Page|alias *b*]] and [text_here](my_page.md) and "
            f"![[Embed]] {flood}\n")
    parsed = outline(body)
    assert parsed.lines[2] == body.split("\n")[2]  # the indexed text is the body's, every character kept
    assert parsed.headings[0].text == "Title *x* `y` [z]"
    targets = {(link.kind, link.target, link.alias) for link in parsed.links}
    assert ("wikilink", "Wiki Page", "alias *b*") in targets
    assert ("markdown", "my_page.md", "text_here") in targets
    assert ("wikilink", "Embed", None) in targets


def test_wikilink_rule_still_reads_obsidian_links() -> None:
    from indexer.markdown import extract_links

    links = extract_links("a [[One]] b [[Two#Head|Alias]] c [[not [nested]]] d [[\n]] e [[ ]] f [[Three]]")
    assert [(link.target, link.heading, link.alias) for link in links] == [
        ("One", None, None), ("Two", "Head", "Alias"), ("Three", None, None)]


@functools.cache
def _stock_parser():  # type: ignore[no-untyped-def]
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


@functools.cache
def _ours_without_extensions():  # type: ignore[no-untyped-def]
    """markdown-it with only gitrag's link-label scan (no wikilinks, no defusing): to compare with the stock one."""
    from indexer.markdown import _Helpers

    md = _stock_parser()
    md.helpers = _Helpers
    return md




def test_the_remembered_link_label_scan_parses_like_markdown_it_on_known_shapes() -> None:
    cases = ["[a](b)", "[a [b] c](d)", "[[a](b)](c)", "[a `]` b](c)", "[a](b) [c]\n\n[c]: d", "![a [b](c)](d)",
             "[a\\]b](c)", "[[[a]]](b)", "[a <b]> c](d)", "[foo [bar](/uri)][ref]\n\n[ref]: /uri",
             "[![moon](moon.jpg)](/uri)", "*[a*](b)", "[a](<b)c>)", "[" * 30 + "a" + "]" * 30 + "(b)"]
    ours, stock = _ours_without_extensions(), _stock_parser()
    for case in cases:
        assert ours.render(case) == stock.render(case), case


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="[]()!`<>*_a \\\n:/", max_size=60))
def test_the_remembered_link_label_scan_parses_like_markdown_it(text: str) -> None:
    assert _ours_without_extensions().render(text) == _stock_parser().render(text)


# --- finding 8 (small items of the indexer) ------------------------------------------------------------


def test_submodules_and_non_utf8_names_are_recorded_skips(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    import os

    from tests.conftest import git

    repo.write("good.md", "# Good\n\ntext\n")
    for raw in (b"bad\xff.md", b"bad\xfe.md"):
        (repo.path / os.fsdecode(raw)).write_text("# Bad name\n\ntext\n", encoding="utf-8")
    repo.commit("files")
    sha = git(repo.path, "rev-parse", "HEAD").strip()
    git(repo.path, "update-index", "--add", "--cacheinfo", f"160000,{sha},vendor/wiki.md")
    git(repo.path, "commit", "-q", "-m", "submodule")
    result = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    skipped = {(s.path, s.reason) for s in result.manifest.skipped}
    assert skipped == {("bad\\xff.md", "invalid_path"), ("bad\\xfe.md", "invalid_path"),
                       ("vendor/wiki.md", "submodule")}
    docs = [json.loads(line)["path"] for line in (result.bundle_path / "docs.jsonl").read_text().splitlines()]
    assert docs == ["good.md"]


@pytest.mark.parametrize(("date", "year"), [("99999-01-01", None), ("2021-05-04", 2021), ("2021", 2021),
                                            ("12021-01-01", None), ("0999-01-01", 999)])
def test_the_year_of_a_date_is_exactly_four_digits(date: str, year: int | None) -> None:
    doc = parse_markdown("d.md", f"---\ndate: '{date}'\n---\nbody\n".encode(), blob_id="0" * 40, max_bytes=1 << 20)
    assert doc.year == year


@pytest.mark.slow
def test_the_hostile_repository_builds_in_under_60_cpu_seconds_with_every_skip_recorded(  # type: ignore[no-untyped-def]
        repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:
    """Bad encodings, front-matter attacks (the nesting window), 2 MiB of each pathological unit, odd paths,
    a symlink and a submodule: one build, every bad file a recorded skip, under 60 s of CPU."""
    import os
    import resource

    from tests.conftest import git

    expected: dict[str, str] = {}
    for kind in KINDS:
        for n in (200, 260, 450, 600):
            repo.write(f"fm/{kind}-{n}.md", _nested(kind, n))
            expected[f"fm/{kind}-{n}.md"] = "invalid_front_matter"
    levels = ["a: &a [" + ", ".join(["x"] * 9) + "]"]
    for prev, name in zip("abcdef", "bcdefg", strict=True):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    repo.write("fm/alias-bomb.md", "---\n" + "\n".join(levels) + "\n---\nbody\n")  # 9**7 values expanded
    expected["fm/alias-bomb.md"] = "front_matter_too_large"
    repo.write("enc/latin1.md", "# Caf\xe9\n".encode("latin-1"))
    repo.write("enc/utf16.md", "# Title\n".encode("utf-16"))
    repo.write("enc/nul.md", b"# a\x00b\n")
    expected |= {"enc/latin1.md": "not_utf8", "enc/utf16.md": "binary", "enc/nul.md": "binary"}
    size = 2 * 1024 * 1024 - 4096
    for i, unit in enumerate(WORST_UNITS):
        repo.write(f"big/u{i}.md", (unit * (size // len(unit) + 1))[:size])
    repo.write("odd/ spaces and ünïcödé .md", "# Odd\n\nname\n")
    repo.write("odd/#hash?.md", "# Hash\n\nname\n")
    os.symlink("../odd/#hash?.md", repo.path / "odd" / "link.md")
    expected["odd/link.md"] = "symlink"
    (repo.path / os.fsdecode(b"odd/bad\xff.md")).write_text("# x\n", encoding="utf-8")
    expected["odd/bad\\xff.md"] = "invalid_path"
    repo.commit("hostile")
    sha = git(repo.path, "rev-parse", "HEAD").strip()
    git(repo.path, "update-index", "--add", "--cacheinfo", f"160000,{sha},vendor/sub")
    git(repo.path, "commit", "-q", "-m", "submodule")
    expected["vendor/sub"] = "submodule"

    def cpu() -> float:
        usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        return sum(u.ru_utime + u.ru_stime for u in usage)

    started = cpu()
    result = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    spent = cpu() - started
    skipped = {s.path: s.reason for s in result.manifest.skipped}
    print(f"hostile build: {spent:.1f} s CPU, timings {result.manifest.stats.timings}")
    assert skipped == expected
    docs = {json.loads(line)["path"] for line in (result.bundle_path / "docs.jsonl").read_text().splitlines()}
    assert {f"big/u{i}.md" for i in range(len(WORST_UNITS))} <= docs
    assert spent < 60, (spent, result.manifest.stats.timings)


def test_a_sync_from_a_remote_without_the_branch_says_the_branch_does_not_exist(repo: RepoBuilder,
                                                                               tmp_path: Path) -> None:
    from indexer.worker import FetchError, fetch_mirror

    repo.write("a.md", "# A\n")
    repo.commit("a")  # the test repository's branch is main
    with pytest.raises(FetchError) as caught:
        fetch_mirror(tmp_path / "mirror.git", str(repo.path), "master")
    assert "no branch master" in str(caught.value)
    assert fetch_mirror(tmp_path / "mirror.git", str(repo.path), "main")
