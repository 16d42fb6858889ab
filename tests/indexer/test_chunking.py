"""Tests of indexer.chunking: token bounds, fences, tables, headings, merging, overlap, coverage."""

from __future__ import annotations

import hashlib
import re
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from artifacts.config import ChunkConfig
from artifacts.records import Document
from indexer.chunking import _chunk_body, chunk_document, count_tokens, get_encoding
from tests.conftest import SHARED

FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")


def make_doc(body: str, path: str = "notes/page.md") -> Document:
    return Document(
        path=path,
        blob_id="ab" * 20,
        size=len(body.encode("utf-8")),
        title="Stránka",
        title_source="front_matter",
        published=False,
        body=body,
    )


def cfg(max_tokens: int = 48, overlap: int = 0, min_tokens: int = 0) -> ChunkConfig:
    return ChunkConfig(max_tokens=max_tokens, overlap_tokens=overlap, min_tokens=min_tokens)


def ends_inside_fence(text: str) -> bool:
    """Independent fence checker: True when ``text`` leaves a code fence open."""
    fence: tuple[str, int] | None = None
    for line in text.split("\n"):
        m = FENCE_RE.match(line)
        if not m:
            continue
        marker, info = m.group(1), m.group(2)
        if fence is None:
            fence = (marker[0], len(marker))
        elif marker[0] == fence[0] and len(marker) >= fence[1] and not info.strip():
            fence = None
    return fence is not None


def nonws(text: str) -> str:
    return "".join(text.split())


def is_subsequence(needle: str, haystack: str) -> bool:
    it = iter(haystack)
    return all(ch in it for ch in needle)


# --- random Markdown-ish documents -----------------------------------------------------------

SLOVAK = "áäčďéíĺľňóôŕšťúýžÁÄČĎÉÍĹĽŇÓÔŔŠŤÚÝŽ"
ATOMS = [*"abcdefghijklmnopqrstuvwxyzABCXYZ0123456789", *SLOVAK, "🎉", "👍🏽", "🇸🇰", "日本", "€", "—"]
words = st.lists(st.sampled_from(ATOMS), min_size=1, max_size=10).map("".join)
sentences = st.tuples(st.lists(words, min_size=1, max_size=14), st.sampled_from(".!?")).map(
    lambda t: " ".join(t[0]) + t[1]
)
paragraphs = st.tuples(st.lists(sentences, min_size=1, max_size=8), st.sampled_from([" ", "\n"])).map(
    lambda t: t[1].join(t[0])
)
headings = st.tuples(st.integers(1, 6), st.lists(words, min_size=1, max_size=4)).map(
    lambda t: "#" * t[0] + " " + " ".join(t[1])
)
long_lines = st.tuples(
    st.sampled_from(["x", "ž", "ab", "🎉", "ščťžý", "0123456789", "日本語"]), st.integers(40, 500)
).map(lambda t: t[0] * t[1])
code_lines = st.one_of(
    st.just(""),
    st.just("# a comment, not a heading"),
    st.tuples(st.integers(0, 8), st.lists(words, min_size=1, max_size=8)).map(lambda t: " " * t[0] + " ".join(t[1])),
    long_lines,
)
fences = st.tuples(
    st.sampled_from(["```", "~~~", "````"]),
    st.sampled_from(["", "python", 'js title="a.js"']),
    st.lists(code_lines, max_size=30),
).map(lambda t: "\n".join([t[0] + t[1], *t[2], t[0]]))
tables = st.integers(1, 4).flatmap(
    lambda k: st.lists(st.lists(words, min_size=k, max_size=k), min_size=2, max_size=25).map(
        lambda rows: "\n".join(
            ["| " + " | ".join(rows[0]) + " |", "|" + "|".join(["---"] * k) + "|"]
            + ["| " + " | ".join(r) + " |" for r in rows[1:]]
        )
    )
)
lists = st.lists(sentences, min_size=1, max_size=10).map(
    lambda items: "\n".join(f"{'  ' * (i % 2)}- {s}" for i, s in enumerate(items))
)
blocks = st.one_of(headings, paragraphs, fences, tables, lists, long_lines)
bodies = st.lists(st.tuples(blocks, st.sampled_from(["\n", "\n\n", "\n\n\n"])), max_size=10).map(
    lambda parts: "".join(b + sep for b, sep in parts)
)
configs = st.builds(
    cfg,
    max_tokens=st.sampled_from([16, 24, 32, 48, 64]),
    overlap=st.sampled_from([0, 5, 12, 70]),
    min_tokens=st.sampled_from([0, 10, 40]),
)


def check_chunks(body: str, config: ChunkConfig) -> None:
    doc = make_doc(body)
    chunks = chunk_document(doc, config)
    for ordinal, chunk in enumerate(chunks):
        assert chunk.ordinal == ordinal
        assert chunk.chunk_id == f"notes/page.md#{ordinal}"
        assert (chunk.path, chunk.title, chunk.published) == (doc.path, doc.title, False)
        assert chunk.text.strip(), "empty chunk"
        assert chunk.tokens == count_tokens(chunk.text) <= config.max_tokens
        assert chunk.sha256 == hashlib.sha256(chunk.text.encode("utf-8")).hexdigest()
        assert "\ufffd" not in chunk.text
        assert not ends_inside_fence(chunk.text), chunk.text
    pieces = _chunk_body(body, config)
    assert [p.text for p in pieces] == [c.text for c in chunks]
    # Coverage: the cores (text minus overlap and re-inserted frame lines) cover the body in order.
    assert nonws("".join(p.core for p in pieces)) == nonws(body)
    for piece in pieces:
        assert is_subsequence(nonws(piece.core), nonws(piece.text))
    assert chunk_document(doc, config) == chunks  # deterministic


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies, config=configs)
def test_invariants_on_random_markdown(body: str, config: ChunkConfig) -> None:
    check_chunks(body, config)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.lists(st.one_of(headings, paragraphs, lists, long_lines), max_size=10).map("\n\n".join),
    max_tokens=st.sampled_from([16, 32, 64]),
)
def test_plain_concatenation_covers_body_without_overlap(body: str, max_tokens: int) -> None:
    # No fences or tables: nothing is re-inserted, so with overlap 0 the texts alone cover the body.
    chunks = chunk_document(make_doc(body), cfg(max_tokens=max_tokens, overlap=0))
    assert nonws("".join(c.text for c in chunks)) == nonws(body)


@settings(max_examples=150, deadline=None)
@given(text=st.text(min_size=0, max_size=400))
def test_arbitrary_text_never_breaks_invariants(text: str) -> None:
    config = cfg(max_tokens=16, overlap=5)
    for chunk in chunk_document(make_doc(text), config):
        assert chunk.text.strip() and chunk.tokens == count_tokens(chunk.text) <= 16
    # Only an unclosed fence's closing line may be added, at the very end.
    assert nonws("".join(p.core for p in _chunk_body(text, config))).startswith(nonws(text))


# --- encoding ------------------------------------------------------------------------------------


def test_encoding_is_offline_cl100k_and_cached() -> None:
    enc = get_encoding()
    assert enc is get_encoding()
    assert enc.encode("hello world") == [15339, 1917]  # cl100k_base ids
    assert count_tokens("") == 0
    assert count_tokens("<|endoftext|>") > 1  # special tokens are plain text here


# --- structure -----------------------------------------------------------------------------------

NESTED = """Preamble before any heading.

# Guide

Intro.

## Install ##

Steps.

```sh
# not a heading
```

### Linux

Apt.

## Use

#tag is not a heading

# Appendix

#### Deep jump

Bye.
"""


def test_heading_paths_on_nested_example() -> None:
    chunks = chunk_document(make_doc(NESTED), cfg(max_tokens=64, min_tokens=0))
    assert [c.heading_path for c in chunks] == [
        [],
        ["Guide"],
        ["Guide", "Install"],
        ["Guide", "Install", "Linux"],
        ["Guide", "Use"],
        ["Appendix"],
        ["Appendix", "Deep jump"],
    ]
    assert chunks[2].text == "## Install ##\n\nSteps.\n\n```sh\n# not a heading\n```"
    assert chunks[4].text == "## Use\n\n#tag is not a heading"
    assert all(c.title == "Stránka" for c in chunks)


def test_empty_and_blank_bodies_give_no_chunks() -> None:
    assert chunk_document(make_doc(""), cfg()) == []
    assert chunk_document(make_doc("  \n\n\t\n"), cfg()) == []


def test_small_sections_merge_forward_with_common_prefix_path() -> None:
    tail = " ".join(f"Veta {i} je tu." for i in range(6))
    body = f"# Guide\n\nShort intro.\n\n## A\n\nAlso short.\n\n## B\n\n{tail}\n"
    chunks = chunk_document(make_doc(body), cfg(max_tokens=64, min_tokens=20))
    assert len(chunks) == 1
    assert chunks[0].heading_path == ["Guide"]
    assert chunks[0].text == body.strip()
    # Without min_tokens nothing merges.
    chunks = chunk_document(make_doc(body), cfg(max_tokens=64, min_tokens=0))
    assert [c.heading_path for c in chunks] == [["Guide"], ["Guide", "A"], ["Guide", "B"]]


def test_siblings_merge_to_parent_path_and_merge_stops_at_max() -> None:
    fits = " ".join(f"Dlhá veta číslo {i} pokračuje." for i in range(4))
    body = f"# T\n\n## A\n\nx\n\n## B\n\ny\n\n## C\n\n{fits}\n\n## D\n\nz"
    assert 30 < count_tokens(f"## C\n\n{fits}") <= 64  # C fits alone, not with T + A + B
    chunks = chunk_document(make_doc(body), cfg(max_tokens=64, min_tokens=30))
    # "# T" + A + B merge (siblings -> common prefix ["T"]); C does not fit with them and is not
    # small itself; D is small but last, so it stays alone.
    assert [c.heading_path for c in chunks] == [["T"], ["T", "C"], ["T", "D"]]
    assert chunks[0].text == "# T\n\n## A\n\nx\n\n## B\n\ny"
    assert [c.text for c in chunks[1:]] == [f"## C\n\n{fits}", "## D\n\nz"]
    assert all(c.tokens <= 64 for c in chunks)


def test_small_section_before_oversized_one_joins_its_first_piece() -> None:
    prose = " ".join(f"Veta číslo {i} niečo hovorí." for i in range(30))
    body = f"## General\n\n### Details\n\n{prose}\n\n## Next\n\nEnd."
    chunks = chunk_document(make_doc(body), cfg(max_tokens=64, overlap=8, min_tokens=20))
    # No heading-only chunk: "## General" leads the first piece of the oversized "### Details".
    assert chunks[0].text.startswith("## General\n\n### Details\n\nVeta číslo 0")
    assert chunks[0].heading_path == ["General"]  # common prefix of both sections
    assert all(c.heading_path == ["General", "Details"] for c in chunks[1:-1])
    assert chunks[-1].heading_path == ["Next"]
    check_chunks(body, cfg(max_tokens=64, overlap=8, min_tokens=20))


def test_heading_stays_with_the_text_after_it_when_splitting() -> None:
    paragraph = " ".join(f"Odsek {i} má dlhú vetu o ničom konkrétnom." for i in range(9))
    body = f"## Nadpis\n\n{paragraph}\n\n{paragraph}"
    chunks = chunk_document(make_doc(body), cfg(max_tokens=120, overlap=0))
    assert len(chunks) > 1
    assert chunks[0].text.startswith("## Nadpis\n\nOdsek 0") and chunks[0].tokens > 20


def test_long_fence_is_closed_and_reopened_in_every_piece() -> None:
    code = [f"    value_{i} = compute({i})  # ščťž" for i in range(60)]
    opener = '```python title="x.py"'
    body = "## Kód\n\n" + "\n".join([opener, *code, "```"]) + "\n\nPo kóde."
    chunks = chunk_document(make_doc(body), cfg(max_tokens=64, overlap=16))
    pieces = [c for c in chunks if "value_" in c.text]
    assert len(pieces) > 3
    seen = []
    for chunk in pieces:
        lines = chunk.text.split("\n")
        assert opener in lines and "```" in lines[lines.index(opener) :]
        body_lines = lines[lines.index(opener) + 1 : lines.index("```")]
        assert body_lines and all(line in code for line in body_lines)  # indentation kept
        seen.extend(body_lines)
        assert not ends_inside_fence(chunk.text)
    assert sorted(set(seen), key=code.index) == code  # every line, in order (overlap may repeat)
    assert pieces[0].text.startswith("## Kód\n\n" + opener)


def test_unclosed_fence_is_closed_at_end() -> None:
    body = "# A\n\n~~~~text\n" + "\n".join(f"riadok {i}" for i in range(40))
    chunks = chunk_document(make_doc(body), cfg(max_tokens=32))
    assert all(not ends_inside_fence(c.text) for c in chunks)
    assert chunks[-1].text.endswith("\n~~~~")


def test_split_table_repeats_header_and_separator() -> None:
    header, sep = "| Meno | Hodnota |", "|---|---:|"
    rows = [f"| riadok {i} | {i} € |" for i in range(50)]
    body = "# Tabuľka\n\nÚvod.\n\n" + "\n".join([header, sep, *rows]) + "\n\nKoniec."
    for overlap in (0, 12):
        chunks = chunk_document(make_doc(body), cfg(max_tokens=48, overlap=overlap))
        with_rows = [c for c in chunks if "| riadok" in c.text]
        assert len(with_rows) > 3
        seen = []
        for chunk in with_rows:
            lines = chunk.text.split("\n")
            first = next(k for k, line in enumerate(lines) if line.startswith("| riadok"))
            assert lines[first - 2 : first] == [header, sep]
            seen.extend(line for line in lines if line.startswith("| riadok"))
        if overlap == 0:
            assert seen == rows
        else:
            assert sorted(set(seen), key=rows.index) == rows


def test_small_fence_and_table_are_kept_whole() -> None:
    fence = "```js\n" + "\n".join(f"let a{i} = {i};" for i in range(8)) + "\n```"
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {i * i} |" for i in range(6))
    prose = " ".join(f"Veta {i} o ničom." for i in range(40))
    body = f"# S\n\n{prose}\n\n{fence}\n\n{table}\n\n{prose}"
    chunks = chunk_document(make_doc(body), cfg(max_tokens=80, overlap=10))
    assert any(fence in c.text for c in chunks)
    assert any(table in c.text for c in chunks)


@pytest.mark.parametrize("atom", ["x", "ž", "🎉", "ščťžýáíé", "👍🏽", "日本語", "0123456789"])
def test_one_huge_line_without_spaces(atom: str) -> None:
    line = atom * (4000 // len(atom))
    chunks = chunk_document(make_doc(line), cfg(max_tokens=32, overlap=8))
    assert len(chunks) > 5
    for chunk in chunks:
        assert 0 < chunk.tokens <= 32
        assert "\ufffd" not in chunk.text
    assert "".join(c.text for c in chunks) == line  # no word boundary: no overlap, exact cover


def test_overlap_repeats_whole_sentences_from_previous_chunk() -> None:
    prose = " ".join(f"Sentence {i} tells about item {i}." for i in range(40))
    body = f"# Long\n\n{prose}"
    config = cfg(max_tokens=48, overlap=16)
    pieces = _chunk_body(body, config)
    assert len(pieces) > 4
    for prev, cur in zip(pieces, pieces[1:], strict=False):
        assert cur.text.endswith(cur.core)
        overlap = cur.text[: len(cur.text) - len(cur.core)].strip()
        assert overlap, "expected overlap between consecutive pieces"
        assert prev.text.endswith(overlap)
        assert overlap.startswith("Sentence ") and count_tokens(overlap) <= 16
    for chunk in chunk_document(make_doc(body), config):
        assert chunk.tokens <= 48


def test_overlap_never_exceeds_max_and_is_capped() -> None:
    prose = " ".join(f"Položka {i} má hodnotu {i * 7}." for i in range(200))
    for max_tokens, overlap in [(16, 70), (24, 12), (450, 70)]:
        check_chunks(f"# Long\n\n{prose}", cfg(max_tokens=max_tokens, overlap=overlap))


def test_deterministic_across_encoding_cache_reset() -> None:
    body = NESTED + "\n" + "\n\n".join(f"## S{i}\n\n" + "Slovo. " * (i * 9) for i in range(10))
    config = cfg(max_tokens=32, overlap=8, min_tokens=10)
    first = chunk_document(make_doc(body), config)
    get_encoding.cache_clear()
    assert chunk_document(make_doc(body), config) == first


# --- real corpus ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_obsidian_help_vault(tmp_path) -> None:
    bundle = SHARED / "corpora" / "obsidian-help.bundle"
    if not bundle.exists():
        pytest.skip("obsidian-help bundle not available")
    subprocess.run(["git", "clone", "-q", str(bundle), str(tmp_path / "vault")], check=True)
    config = ChunkConfig()
    count = 0  # speed is measured by bench/, not asserted here (the machine's load decides a wall time)
    for path in sorted((tmp_path / "vault").rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
        if text.startswith("---\n") and (end := text.find("\n---", 4)) != -1:
            text = text[end + 4 :]
        for chunk in chunk_document(make_doc(text, path=path.name), config):
            assert 0 < chunk.tokens <= config.max_tokens and chunk.text.strip()
            count += 1
    assert count > 6000


# --- issue 12/13: sections from the one CommonMark parse ---------------------------------------


def test_setext_headings_are_sections_like_atx() -> None:
    body = "Title\n=====\n\nIntro text here.\n\nPart\n----\n\nPart text here.\n"
    atx = "# Title\n\nIntro text here.\n\n## Part\n\nPart text here.\n"
    for text in (body, atx):
        chunks = chunk_document(make_doc(text), cfg(max_tokens=64, min_tokens=0))
        assert [c.heading_path for c in chunks] == [["Title"], ["Title", "Part"]]
    assert chunk_document(make_doc(body), cfg(64))[1].text == "Part\n----\n\nPart text here."


def test_heading_inside_html_comment_is_no_section_and_comment_is_not_indexed() -> None:
    comment = "<!--\n## Old section\n" + "Old secret words. " * 40 + "\n-->"
    body = f"# Doc\n\nIntro.\n\n{comment}\n\n## New\n\nNew text.\n"
    chunks = chunk_document(make_doc(body), cfg(max_tokens=32, min_tokens=0))
    assert [c.heading_path for c in chunks] == [["Doc"], ["Doc", "New"]]
    joined = "\n".join(c.text for c in chunks)
    for hidden in ("<!--", "-->", "Old section", "secret"):
        assert hidden not in joined


def test_unclosed_html_comment_hides_its_block_only() -> None:
    chunks = chunk_document(make_doc("Visible.\n\n<!-- never closed\n## Not a heading\n"), cfg(64))
    assert [(c.text, c.heading_path) for c in chunks] == [("Visible.", [])]


def test_office_xml_and_inline_comments_are_kept_out_of_chunk_text() -> None:
    body = ("# Pasted\n\nBefore <!--StartFragment--><w:p><w:r><w:t>Hello Word</w:t></w:r></w:p>"
            "<o:p></o:p><!--EndFragment--> after.\n\n<!--[if gte mso 9]><xml><w:WordDocument>"
            "<w:View>Normal</w:View></w:WordDocument></xml><![endif]-->\n\n"
            "Code keeps it: `<!-- literal -->` and\n\n```html\n<!-- in a fence -->\n```\n")
    text = "\n".join(c.text for c in chunk_document(make_doc(body), cfg(128)))
    assert "Hello Word" in text and "Before" in text and "after." in text
    for hidden in ("StartFragment", "EndFragment", "<w:", "</w:", "<o:p>", "WordDocument", "mso", "Normal"):
        assert hidden not in text
    assert "`<!-- literal -->`" in text and "<!-- in a fence -->" in text


def test_heading_in_a_fence_inside_a_list_is_no_section() -> None:
    body = "# A\n\n- item\n\n  ```\n  # not a heading\n  ```\n\ntext\n"
    chunks = chunk_document(make_doc(body), cfg(64))
    assert [c.heading_path for c in chunks] == [["A"]]


def test_empty_heading_gives_the_same_paths_as_the_parser() -> None:
    from indexer.markdown import headings

    body = "#\n\nIntro under an empty heading.\n\n## Child\n\nChild text.\n"
    chunks = chunk_document(make_doc(body), cfg(64, min_tokens=0))
    assert [c.heading_path for c in chunks] == [[], ["Child"]]
    assert [list(h.path) for h in headings(body)] == [[], ["Child"]]


@pytest.mark.parametrize(("opener", "closer"), [("- ```python", "```"), ("> ```", "```"), ("> > ~~~~", "~~~~")])
def test_unclosed_fence_in_a_container_is_closed_with_its_own_marker(opener: str, closer: str) -> None:
    body = f"# A\n\n{opener}\n\nAfter.\n"
    text = "\n".join(c.text for c in chunk_document(make_doc(body), cfg(64)))
    # The fence is closed by its own marker (blank lines it holds may come first), never by "-" or ">".
    assert re.search(rf"^{re.escape(opener)}\n(?:[ \t]*\n)*{re.escape(closer)}\n+After\.$", text, re.M), text


def test_front_matter_summaries_are_the_first_chunks_labelled_by_their_key() -> None:
    from indexer.markdown import parse_markdown

    raw = ("---\ntitle: Rozhovor\ndescription: 'Jakub Nešetřil vybudoval a v roce 2017 prodal firmu Apiary.'\n"
           "summary: {enabled: true}\nabstract: '  jakub nešetřil vybudoval a v roce 2017 prodal firmu Apiary. '\n"
           "excerpt: 2019\n---\n# Rozhovor\n\nOtázka a odpověď o komunitě.\n\n## Druhá část\n\nDalší text.\n")
    doc = parse_markdown("p.md", raw.encode(), blob_id="ab" * 20, max_bytes=10**6)
    chunks = chunk_document(doc, cfg(min_tokens=0))
    # one chunk for the description; the abstract repeats it (case, spaces): once; a mapping or a number is no prose
    assert [(c.ordinal, c.heading_path) for c in chunks] == [(0, ["description"]), (1, ["Rozhovor"]),
                                                            (2, ["Rozhovor", "Druhá část"])]
    first = chunks[0]
    assert first.text == "Jakub Nešetřil vybudoval a v roce 2017 prodal firmu Apiary."
    assert (first.chunk_id, first.title) == ("p.md#0", "Rozhovor")
    assert first.sha256 == hashlib.sha256(first.text.encode()).hexdigest() and first.tokens == count_tokens(first.text)
    # without front matter nothing changes
    assert chunk_document(make_doc("# Rozhovor\n\nText.\n"), cfg())[0].heading_path == ["Rozhovor"]


def test_a_summary_the_body_already_says_is_not_indexed_twice() -> None:
    from indexer.markdown import parse_markdown

    def chunks_of(front: str, body: str) -> list[list[str]]:
        doc = parse_markdown("p.md", f"---\n{front}\n---\n{body}".encode(), blob_id="ab" * 20, max_bytes=10**6)
        return [c.heading_path for c in chunk_document(doc, cfg(max_tokens=200))]

    # the first paragraph says it, with a link and emphasis around its words (Obsidian Help pages do this)
    assert chunks_of("description: Obsidian Sync lets you sync notes privately.",
                     "[Obsidian Sync](https://obsidian.md/sync) lets you *sync notes* privately.\n\n## Use\n\nMore."
                     ) == [[], ["Use"]]
    assert chunks_of("description: Sync notes.", "Read [[Obsidian Sync|sync notes]] here.\n") == [[]]
    # a description that says more than the body does is kept
    assert chunks_of("description: Obsidian Sync lets you sync notes privately and safely.",
                     "Obsidian Sync lets you sync notes privately.\n") == [["description"], []]
    # a page with front matter only is found by its description (no title chunk then)
    assert chunks_of("description: Only a description here.", "") == [["description"]]


def test_a_long_abstract_is_split_like_body_text_under_one_label() -> None:
    from indexer.markdown import parse_markdown

    abstract = " ".join(f"Veta číslo {i} opisuje výsledky práce." for i in range(60))
    doc = parse_markdown("t.md", f"---\nabstract: |\n  {abstract}\n\n  Druhý odsek.\n---\nText práce.\n".encode(),
                         blob_id="ab" * 20, max_bytes=10**6)
    chunks = chunk_document(doc, cfg(max_tokens=64, overlap=8))
    labelled = [c for c in chunks if c.heading_path == ["abstract"]]
    assert len(labelled) > 3 and chunks[: len(labelled)] == labelled and chunks[-1].text == "Text práce."
    assert all(c.tokens <= 64 for c in chunks) and "Druhý odsek." in labelled[-1].text
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
