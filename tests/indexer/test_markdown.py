"""Tests of indexer.markdown: front matter, normalisation, skips, links and their resolution."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from artifacts.records import Document, Link
from indexer.errors import SKIP_REASONS, IndexerError, SkipFile
from indexer.markdown import extract_links, parse_markdown, resolve_links

LIMIT = 1024 * 1024


def parse(text: str | bytes, path: str = "notes/page.md", max_bytes: int = LIMIT) -> Document:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return parse_markdown(path, data, blob_id="ab" * 20, max_bytes=max_bytes)


def skip_reason(text: str | bytes, **kwargs) -> SkipFile:
    with pytest.raises(SkipFile) as info:
        parse(text, **kwargs)
    return info.value


# --- front matter ---------------------------------------------------------------------------


def test_plain_front_matter_and_record_fields():
    doc = parse("---\ntitle: Hello\ntags: [a]\n---\n# Heading\n\nText.\n")
    assert doc.front_matter == {"title": "Hello", "tags": ["a"]}
    assert doc.body == "# Heading\n\nText.\n"
    assert (doc.path, doc.blob_id, doc.size) == ("notes/page.md", "ab" * 20, 48)
    assert (doc.title, doc.title_source) == ("Hello", "front_matter")


def test_bom_is_stripped_before_front_matter():
    doc = parse(b"\xef\xbb\xbf---\ntitle: Mar\xc3\xada\n---\nBody\n")
    assert doc.front_matter == {"title": "María"}
    assert doc.body == "Body\n"
    assert "\ufeff" not in doc.body


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_crlf_and_lone_cr_are_normalised(newline):
    text = "---\ntitle: Win\ntags: [x, y]\n---\n# H\n\nline one\nline two\n"
    doc = parse(text.replace("\n", newline))
    assert doc.front_matter == {"title": "Win", "tags": ["x", "y"]}
    assert doc.body == "# H\n\nline one\nline two\n"
    assert doc.tags == ["x", "y"]


def test_empty_front_matter_block_is_empty_mapping():
    doc = parse("---\n---\n# Guide\n")
    assert doc.front_matter == {}
    assert doc.body == "# Guide\n"
    assert (doc.title, doc.title_source) == ("Guide", "heading")


def test_comment_only_front_matter_is_empty_mapping():
    doc = parse("---\n# just a comment\n---\nBody\n")
    assert doc.front_matter == {}
    assert doc.body == "Body\n"


def test_unclosed_front_matter_means_whole_file_is_body():
    text = "---\ntitle: Never closed\n\n# Real heading\n"
    doc = parse(text)
    assert doc.front_matter == {}
    assert doc.body == text
    assert doc.title == "Real heading"


@pytest.mark.parametrize(
    "text",
    [
        "---\nJust a line of prose between two rules.\n---\nMore prose.\n",
        "---\n- a list\n- is not a mapping\n---\nText\n",
        "---\n42\n---\nText\n",
        "---\nSome text with: colons: inside it\n---\nText\n",  # fails to parse, not key-like
    ],
)
def test_thematic_break_is_not_front_matter(text):
    doc = parse(text)
    assert doc.front_matter == {}
    assert doc.body == text


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: A\ntags: [a, b\n---\nBody\n",
        "---\ntitle: Andrej\ntaxonomy:\n\tcategory: [bp2020]\n---\nBody\n",  # tab indentation
        "---\n# comment first\nkey: 'unterminated\n---\n",
    ],
)
def test_yaml_looking_block_that_fails_is_invalid_front_matter(text):
    error = skip_reason(text)
    assert error.reason == "invalid_front_matter"
    assert "line" in error.detail
    assert "\n" not in error.detail
    for secret in ("Andrej", "bp2020", "unterminated", "title"):
        assert secret not in error.detail


def test_invalid_front_matter_reports_file_line():
    error = skip_reason("---\ntitle: A\n\tbad: tab\n---\n")
    assert error.detail.endswith("(line 3)")


def test_front_matter_is_json_safe():
    doc = parse(
        "---\n"
        "when: 2021-03-04\n"
        "at: 2021-03-04T10:00:00Z\n"
        "nested: {list: [2020-01-02, 1.5, .nan, .inf, null, true]}\n"
        "2021: numeric key\n"
        "blob: !!binary aGVsbG8=\n"
        "set: !!set {b, a}\n"
        "---\n"
    )
    fm = doc.front_matter
    assert fm["when"] == "2021-03-04"
    assert fm["at"] == "2021-03-04T10:00:00+00:00"
    assert fm["nested"] == {"list": ["2020-01-02", 1.5, "nan", "inf", None, True]}
    assert fm["2021"] == "numeric key"
    assert fm["blob"] == "aGVsbG8="
    assert fm["set"] == ["a", "b"]
    json.dumps(fm, allow_nan=False)  # raises if anything is not JSON-safe


def test_recursive_alias_is_invalid_front_matter():
    assert skip_reason("---\na: &x [*x]\n---\n").reason == "invalid_front_matter"


# --- dates ------------------------------------------------------------------------------------


def test_date_and_datetime_become_iso():
    doc = parse("---\ndate: 2021-03-04\nupdated: 2022-01-02 03:04:05\n---\n")
    assert doc.dates == {"date": "2021-03-04", "updated": "2022-01-02T03:04:05"}
    assert (doc.date, doc.year) == ("2021-03-04", 2021)


def test_date_falls_back_to_first_found_key():
    doc = parse("---\nmodified: 2020-05-06\ncreated: 2019-01-01\n---\n")
    assert doc.dates == {"created": "2019-01-01", "modified": "2020-05-06"}
    assert (doc.date, doc.year) == ("2019-01-01", 2019)


@pytest.mark.parametrize(
    ("value", "date", "year"),
    [
        ("2021-03-04-10-00", "2021-03-04-10-00", 2021),  # cesko-digital style, kept verbatim
        ("2021", "2021", 2021),  # a bare int
        ("2021-02-30", "2021-02-30", 2021),  # impossible date: kept as the given string
        ("'last spring'", "last spring", None),
        ("'٢٠٢١-01-01'", "٢٠٢١-01-01", None),  # non-ASCII digits are not a year
    ],
)
def test_date_strings(value, date, year):
    doc = parse(f"---\ndate: {value}\n---\n")
    assert (doc.date, doc.year) == (date, year)


def test_no_dates():
    doc = parse("---\ndate: [1, 2]\ntitle: x\n---\n")
    assert (doc.date, doc.year, doc.dates) == (None, None, {})


# --- normalised fields ------------------------------------------------------------------------


def test_grav_taxonomy():
    doc = parse(
        "---\ntitle: Ján Holp\npublished: true\n"
        "taxonomy: {category: [dp2021, bp2019], tag: [a, b], author: Someone}\n---\n"
    )
    assert doc.categories == ["dp2021", "bp2019"]
    assert doc.tags == ["a", "b"]
    assert doc.authors == ["Someone"]
    assert doc.published is True


def test_authors_shapes_and_dedupe():
    doc = parse(
        "---\nauthor: ' Alice '\n"
        "authors: [{name: Bob, email: b@x}, Alice, '', {email: nobody}, Carol]\n"
        "taxonomy: {author: [Carol, Dave]}\n---\n"
    )
    assert doc.authors == ["Alice", "Bob", "Carol", "Dave"]


def test_author_string_with_comma_is_not_split():
    assert parse("---\nauthor: Doe, John\n---\n").authors == ["Doe, John"]


def test_tags_and_categories_shapes():
    doc = parse(
        "---\ntags: 'nlp, asr ,, nlp'\ntag: [2021, x]\nkeywords: [' y ', true]\n"
        "categories: thesis\ncategory: [thesis, dp]\ntaxonomy: {tag: [z, nlp], category: bp}\n---\n"
    )
    assert doc.tags == ["nlp", "asr", "2021", "x", "y", "z"]
    assert doc.categories == ["thesis", "dp", "bp"]


@pytest.mark.parametrize(
    ("front", "published"),
    [
        ("published: false", False),
        ("publish: false", False),  # Obsidian Publish
        ("published: no", True),  # YAML 1.2: a string, not a boolean
        ("published: off", True),
        ("published: 'false'", True),  # a string is not an explicit boolean false
        ("published: true", True),
        ("title: x", True),
        ("published: null", True),
    ],
)
def test_published(front, published):
    assert parse(f"---\n{front}\n---\n").published is published


def test_published_when_no_front_matter():
    assert parse("just text").published is True


# --- titles -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "path", "title", "source"),
    [
        ("---\ntitle: '  FM title '\n---\n# H1\n", "a.md", "FM title", "front_matter"),
        ("---\ntitle: 1984\n---\n# H1\n", "a.md", "1984", "front_matter"),
        ("---\ntitle: ''\n---\n# H1 #\n", "a.md", "H1", "heading"),
        ("---\ntitle: [a]\n---\nintro\n# First H1\n# Second\n", "a.md", "First H1", "heading"),
        ("Setext Title\n============\n\ntext\n", "a.md", "Setext Title", "heading"),
        ("```\n# not a heading\n```\n## Only H2\n", "dir/My Note.md", "My Note", "filename"),
        ("#hashtag is not a heading\n", "x/README.md", "README", "filename"),
        ("", "x/index.MD", "index", "filename"),
    ],
)
def test_title_fallbacks(text, path, title, source):
    doc = parse(text, path=path)
    assert (doc.title, doc.title_source) == (title, source)


# --- skips ------------------------------------------------------------------------------------


def test_too_large_is_checked_first():
    error = skip_reason(b"\x00\xff" * 10, max_bytes=19)
    assert error.reason == "too_large"
    assert "20" in error.detail and "19" in error.detail
    assert parse(b"x" * 19, max_bytes=19).body == "x" * 19  # the limit itself is allowed


def test_binary_nul_byte():
    error = skip_reason(b"---\ntitle: x\n---\nab\x00cd")
    assert error.reason == "binary"
    assert isinstance(error, IndexerError)
    assert error.detail == "NUL byte at offset 19"


def test_not_utf8():
    error = skip_reason("café secret".encode("latin-1"))
    assert error.reason == "not_utf8"
    assert "secret" not in error.detail and "3" in error.detail


# --- NFC --------------------------------------------------------------------------------------


def test_nfc_normalisation_of_path_body_title_and_names():
    decomposed = "a\u0301"  # "á" as a + combining acute accent
    composed = "\u00e1"
    text = f"---\ntags: [{decomposed}]\nauthor: J{decomposed}n\n---\nTelo {decomposed}\n"
    doc = parse(text, path=f"pages/{decomposed}/n{decomposed}zov.md")
    assert doc.path == f"pages/{composed}/n{composed}zov.md"
    assert doc.title == f"n{composed}zov"
    assert doc.body == f"Telo {composed}\n"
    assert doc.tags == [composed]
    assert doc.authors == [f"J{composed}n"]
    for value in (doc.path, doc.title, doc.body):
        assert unicodedata.is_normalized("NFC", value)


# --- link extraction --------------------------------------------------------------------------


def test_wikilink_forms():
    links = extract_links(
        "See [[Target]], [[Other|alias]], [[Deep/Page#Some Heading|shown]] and ![[Embedded]].\n"
        "![[photo.png]] ![[doc.pdf#page=3]] [[#Local heading]] [[Note.md]] [[Obsidian 1.5]]\n"
        "| [[Table\\|escaped]] |\n"
    )
    assert [(x.kind, x.target, x.heading, x.alias) for x in links] == [
        ("wikilink", "Target", None, None),
        ("wikilink", "Other", None, "alias"),
        ("wikilink", "Deep/Page", "Some Heading", "shown"),
        ("wikilink", "Embedded", None, None),
        ("wikilink", "Note.md", None, None),
        ("wikilink", "Obsidian 1.5", None, None),
        ("wikilink", "Table", None, "escaped"),
    ]
    assert all(x.resolved is None for x in links)


def test_markdown_link_forms():
    links = extract_links(
        '[Rel](../topics/asr/README.md) [Space](My%20Note.md#Part%20two "title")\n'
        "[Web](https://example.org/x.md) [Mail](mailto:a@b.c) [Scheme](obsidian://open?x.md)\n"
        "[Proto](//host/x.md) [Anchor](#local) [Pic](img.png) ![Img](diagram.md)\n"
        "[Angle](<With Space.md>) [Root](/pages/a.md) [[Wiki]](ignored.md)\n"
        "\n[ref]: refs/Ref.md\n[^1]: footnote.md\n"
    )
    assert [(x.kind, x.target, x.heading, x.alias) for x in links] == [
        ("markdown", "../topics/asr/README.md", None, "Rel"),
        ("markdown", "My Note.md", "Part two", "Space"),
        ("markdown", "With Space.md", None, "Angle"),
        ("markdown", "/pages/a.md", None, "Root"),
        ("wikilink", "Wiki", None, None),
        ("markdown", "refs/Ref.md", None, None),
    ]


def test_links_in_code_are_ignored():
    links = extract_links(
        "Before [[Kept]].\n"
        "```markdown\n[[InFence]] [x](in-fence.md)\n```\n"
        "~~~~\n```\n[[InTilde]]\n~~~~\n"
        "  ```\n  [[InIndentedFence]]\n  ```\n"
        "Inline `[[InCode]]` and ``[y](in-code.md)`` but [z](after.md).\n"
        "```\n[[UnclosedFence]]\n"
    )
    assert [x.target for x in links] == ["Kept", "after.md"]


def test_duplicate_links_are_kept_once_in_order():
    links = extract_links("[[B]] [[A]] [[B]] [[A|other]]")
    assert [(x.target, x.alias) for x in links] == [("B", None), ("A", None), ("A", "other")]


def test_parse_markdown_extracts_links_from_body_only():
    doc = parse("---\ntitle: '[[NotALink]]'\n---\n[[Real]]\n")
    assert [x.target for x in doc.links] == ["Real"]


# --- link resolution --------------------------------------------------------------------------


def make_docs(spec: dict[str, str]) -> list[Document]:
    return [parse(body, path=path) for path, body in spec.items()]


def resolved(docs: list[Document], path: str) -> list[tuple[str, str | None]]:
    doc = next(d for d in docs if d.path == path)
    return [(x.target, x.resolved) for x in doc.links]


def test_markdown_links_resolve_relative_then_root():
    docs = make_docs(
        {
            "pages/students/2016/jan/README.md": (
                "[t](../../../topics/asr/README.md) [root](pages/topics/asr/README.md) "
                "[abs](/pages/topics/asr/README.md) [sib](./notes.md) [gone](../../x/README.md) "
                "[escape](../../../../../outside.md) [case](../../../topics/ASR/README.md)"
            ),
            "pages/students/2016/jan/notes.md": "",
            "pages/topics/asr/README.md": "",
        }
    )
    resolve_links(docs)
    assert resolved(docs, "pages/students/2016/jan/README.md") == [
        ("../../../topics/asr/README.md", "pages/topics/asr/README.md"),
        ("pages/topics/asr/README.md", "pages/topics/asr/README.md"),
        ("/pages/topics/asr/README.md", "pages/topics/asr/README.md"),
        ("./notes.md", "pages/students/2016/jan/notes.md"),
        ("../../x/README.md", None),
        ("../../../../../outside.md", None),
        ("../../../topics/ASR/README.md", None),  # Git paths are case-sensitive
    ]


def test_wikilinks_resolve_obsidian_style():
    docs = make_docs(
        {
            "a/src.md": (
                "[[b/Exact]] [[b/Exact.md]] [[exact]] [[Ünïque]] [[Missing]] [[asr]] "
                "[[./Local]] [[x/deep/Suffix]] [[Folder/]]"
            ),
            "a/Local.md": "",
            "b/Exact.md": "",
            "c/ünïque.md": "",
            "topics/asr/README.md": "",
            "y/x/deep/suffix.md": "",
            "Folder/index.md": "",
        }
    )
    resolve_links(docs)
    assert resolved(docs, "a/src.md") == [
        ("b/Exact", "b/Exact.md"),
        ("b/Exact.md", "b/Exact.md"),
        ("exact", "b/Exact.md"),  # case-insensitive basename
        ("Ünïque", "c/ünïque.md"),
        ("Missing", None),
        ("asr", "topics/asr/README.md"),  # folder note (Grav / thesis wiki)
        ("./Local", "a/Local.md"),
        ("x/deep/Suffix", "y/x/deep/suffix.md"),  # path-suffix match
        ("Folder/", "Folder/index.md"),
    ]


def test_wikilink_resolution_nfc_and_casefold():
    docs = make_docs({"src.md": "[[Na\u0301vod]]", "x/NÁVOD.md": ""})
    resolve_links(docs)
    assert resolved(docs, "src.md") == [("Návod", "x/NÁVOD.md")]


def test_ambiguous_basenames_prefer_same_folder_then_shortest_path():
    spec = {
        "en/guide/Start.md": "[[Settings]] [[Common]] [[Topic]]",
        "de/x/Topic.md": "",
        "en/y/Topic.md": "",
        "de/Settings.md": "",
        "en/guide/Settings.md": "",
        "Settings.md": "",
        "zz/long/path/Common.md": "",
        "b/Common.md": "",
        "a/Common.md": "",
        "de/page.md": "[[Settings]]",
        "other/page.md": "[[Settings]] [[Common]]",
    }
    docs = make_docs(spec)
    resolve_links(docs)
    assert resolved(docs, "en/guide/Start.md") == [
        ("Settings", "en/guide/Settings.md"),  # same folder wins
        ("Common", "a/Common.md"),  # tie on length: smallest path
        ("Topic", "en/y/Topic.md"),  # shares the folder "en" with the linking document
    ]
    assert resolved(docs, "de/page.md") == [("Settings", "de/Settings.md")]
    assert resolved(docs, "other/page.md") == [
        ("Settings", "Settings.md"),  # shortest path
        ("Common", "a/Common.md"),
    ]
    # Deterministic regardless of document order.
    shuffled = make_docs(dict(reversed(list(spec.items()))))
    resolve_links(shuffled)
    for doc in shuffled:
        assert resolved(shuffled, doc.path) == resolved(docs, doc.path)


def test_relative_then_root_path_beat_basename_match():
    docs = make_docs(
        {
            "s.md": "[[Note]]",
            "a/s.md": "[[Note]]",
            "b/s.md": "[[Note]]",
            "Note.md": "",
            "a/Note.md": "",
            "b/c/Note.md": "",
        }
    )
    resolve_links(docs)
    assert resolved(docs, "s.md") == [("Note", "Note.md")]
    assert resolved(docs, "a/s.md") == [("Note", "a/Note.md")]  # linking folder first
    assert resolved(docs, "b/s.md") == [("Note", "Note.md")]  # then root, not b/c/Note.md


def test_resolve_links_on_empty_and_linkless_input():
    resolve_links([])
    docs = make_docs({"a.md": "no links"})
    resolve_links(docs)
    assert docs[0].links == []


def test_link_model_roundtrip_after_resolution():
    docs = make_docs({"a.md": "[[b]]", "b.md": ""})
    resolve_links(docs)
    assert Link.model_validate_json(docs[0].links[0].model_dump_json()).resolved == "b.md"


# --- property test ----------------------------------------------------------------------------

_LINES = [
    "---",
    "title: x",
    "tags: [a, b",
    "tags: [a, 2021]",
    "  - y",
    "date: 2021-02-30",
    "date: 2021-03-04",
    "a: &x [*x]",
    "\t",
    ":",
    "# h",
    "[[L]]",
    "```",
    "key: 'v",
    "!!binary",
    "- 1",
    "?",
    "*x",
    "\r",
    "\ufeff",
    "",
    "taxonomy: {tag: [t], author: [{name: A}]}",
    "published: false",
    "[a](b.md)",
    "x: .nan",
]
_lines = st.lists(st.sampled_from(_LINES) | st.text(max_size=20), max_size=10).map("\n".join)
_documents = st.builds(
    lambda front, body, wrap: (f"---\n{front}\n---\n{body}" if wrap else front + body).encode("utf-8", "surrogatepass"),
    _lines,
    _lines,
    st.booleans(),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=400) | _documents, max_bytes=st.integers(1, 600))
def test_parse_never_raises_anything_but_skipfile(data, max_bytes):
    try:
        doc = parse_markdown("p/x.md", data, blob_id="0" * 40, max_bytes=max_bytes)
    except SkipFile as error:
        assert error.reason in set(SKIP_REASONS)
        return
    json.dumps(doc.model_dump(mode="json"), allow_nan=False)
    assert "\r" not in doc.body and doc.title
    resolve_links([doc])


# --- issue 12: one CommonMark parse, YAML 1.2, TOML, LFS pointers, alias bombs --------------


def test_setext_headings_are_headings_with_paths():
    from indexer.markdown import headings

    body = "Title\n=====\n\nIntro.\n\nPart\n----\n\nText.\n\n### Deep\n\nMore.\n"
    doc = parse(body)
    assert (doc.title, doc.title_source) == ("Title", "heading")
    found = [(h.level, h.text, h.line, h.path) for h in headings(body)]
    assert found == [(1, "Title", 0, ("Title",)), (2, "Part", 5, ("Title", "Part")),
                     (3, "Deep", 10, ("Title", "Part", "Deep"))]


def test_heading_in_html_comment_is_no_heading_and_its_links_are_ignored():
    from indexer.markdown import headings

    body = "<!--\n# Old title\n## Old section\n[[Hidden]]\n-->\n\n## Live\n\n[[Shown]]\n"
    doc = parse(body)
    assert [h.text for h in headings(body)] == ["Live"]
    assert doc.title_source == "filename"
    assert [x.target for x in doc.links] == ["Shown"]


def test_empty_heading_is_not_in_paths():
    from indexer.markdown import headings

    found = headings("#\n\nintro\n\n## Child\n\ntext\n")
    assert [(h.level, h.text, h.path) for h in found] == [(1, "", ()), (2, "Child", ("Child",))]


def test_toml_front_matter_is_parsed_and_never_body():
    doc = parse('+++\ntitle = "T"\ntags = ["a", "b"]\ndate = 2021-03-04\npublished = false\n+++\nBody\n')
    assert doc.front_matter == {"title": "T", "tags": ["a", "b"], "date": "2021-03-04", "published": False}
    assert (doc.title, doc.tags, doc.date, doc.published) == ("T", ["a", "b"], "2021-03-04", False)
    assert doc.body == "Body\n"


def test_invalid_toml_front_matter_is_skipped_without_echoing_it():
    error = skip_reason('+++\ntitle = "unterminated\nx = 1\n+++\nBody\n')
    assert error.reason == "invalid_front_matter"
    assert "unterminated" not in error.detail and "line 2" in error.detail


def test_git_lfs_pointer_is_skipped():
    pointer = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
               "size 12345\n")
    error = skip_reason(pointer)
    assert error.reason == "lfs_pointer" and "12345" in error.detail
    # Prose that merely quotes the first line is a document.
    assert parse("version https://git-lfs.github.com/spec/v1 is the pointer format.\n").body


def test_yaml_1_2_keeps_norway_and_friends_as_strings():
    doc = parse("---\ntitle: No\ntags: [en, no, on, off]\npublished: off\n"
                "n: 123456789012345678901234567890123456789\nsmall: 12\n---\n")
    assert (doc.title, doc.title_source) == ("No", "front_matter")
    assert doc.tags == ["en", "no", "on", "off"]
    assert doc.published is True
    assert doc.front_matter["n"] == "123456789012345678901234567890123456789"
    assert doc.front_matter["small"] == 12
    assert parse("---\npublished: false\n---\n").published is False


def test_alias_bomb_is_skipped_by_expanded_size_at_bounded_memory():
    import tracemalloc

    # ~2.3 KB of YAML that expands to 85,000 copies of a 1,800-character string (~153 MB).
    text = ("---\ns: &s " + "x" * 1800 + "\n"
            "a: &a [" + ", ".join(["*s"] * 10) + "]\n"
            "b: &b [" + ", ".join(["*a"] * 10) + "]\n"
            "c: &c [" + ", ".join(["*b"] * 10) + "]\n"
            "d: [" + ", ".join(["*c"] * 85) + "]\n---\nBody\n")
    assert 2000 < len(text) < 2600
    tracemalloc.start()
    try:
        error = skip_reason(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error.reason == "front_matter_too_large"
    assert peak < 8 * 1024 * 1024, f"peak {peak} bytes"


def test_front_matter_within_the_limit_keeps_its_aliases_expanded():
    doc = parse("---\nbase: &b {x: 1}\nitems: [*b, *b]\n---\n")
    assert doc.front_matter["items"] == [{"x": 1}, {"x": 1}]


def test_office_xml_and_comments_do_not_make_links_or_titles():
    doc = parse("# <!--StartFragment-->Real <w:p>title</w:p>\n\n<!-- [[NotALink]] -->\n"
                "Text `<!-- kept in code -->` [[Real]]\n")
    assert doc.title == "Real title"
    assert [x.target for x in doc.links] == ["Real"]
    assert "StartFragment" in doc.body  # the raw body keeps everything


def test_unescaped_pipe_of_a_wikilink_in_a_table_keeps_the_link():
    body = ("| Name | Meaning |\n|---|---|\n| Views | Rows from the [[Properties|properties]] of notes. |\n"
            "| Escaped | [[Table\\|alias]] |\n")
    links = extract_links(body)
    assert [(x.target, x.alias) for x in links] == [("Properties", "properties"), ("Table", "alias")]
