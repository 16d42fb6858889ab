"""Tokenisation shared by indexing and queries: hyphenated compounds match their parts."""

from __future__ import annotations

from pathlib import Path

from artifacts.analysis import fold
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.request import parse_search_request
from query.search.response import search
from tests.conftest import RepoBuilder


def test_hyphens_split_tokens_but_dots_and_apostrophes_join() -> None:
    assert fold("HTML-Blöcke im Pop-out-Fenster") == "html blocke im pop out fenster"
    assert fold("Verzia v1.2 a example.com, don't") == "verzia v1.2 a example.com don't"


def test_compound_and_its_parts_find_each_other(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    repo.write("html.md", "# HTML-Inhalte\n\nAnforderungen an HTML-Blöcke beim Markdown-Rendering.\n")
    repo.write("blocke.md", "# Blöcke\n\nHTML wird in Blöcken gerendert.\n")
    for i in range(5):
        repo.write(f"other{i}.md", f"# Seite {i}\n\nNotizen und Ordner {i}.\n")
    repo.commit()
    bundle = open_bundle(build_bundle(repo.path, tmp_path / "s", embedder=hash_embedder).bundle_path,
                         embedder=hash_embedder)
    try:
        def first(query: str) -> str:
            return search(bundle, parse_search_request({"query": query}))["results"][0]["document_path"]

        assert first("Markdown Rendering") == "html.md"  # the parts find the compound
        assert first("HTML-Inhalte") == "html.md"
        assert first("Blöcke") == "blocke.md"
    finally:
        bundle.close()


def test_folded_spans_are_the_folding_analyzers_tokens() -> None:
    """The fast tokeniser of snippets gives exactly the folding analyzer's tokens, texts and offsets."""
    from artifacts.analysis import folded_spans, folding_analyzer

    texts = [
        "Počítačové siete: smerovanie paketov (TCP/IP) v1.2, don't — Straße in Zürich; ĽŠČŤŽÝÁÍÉ",
        "İstanbul ǅemal ﬁnance Ǆ ß ẞ Ωmega  tabs\tand\nnewlines, x.y.z. 'quoted' l’été __init__ 1,000.5",
        "ΟΔΟΣ..Α ΟΔΟΣ.Α ΟΔΟΣ Σ ΣΑ",
        "HTML-Blöcke im Pop-out-Fenster, [[Wiki|Alias]] **bold** `code` e\u0301cole nai\u0308ve 日本語のテキスト",
        "",
        "....",
    ]
    for text in texts:
        expected = [(t.text, t.startchar, t.endchar)
                    for t in folding_analyzer()(text, chars=True, mode="query", removestops=False)]
        assert list(folded_spans(text)) == expected, text


def test_fold_is_the_folding_analyzers_tokens_joined() -> None:
    """fold() (folded_spans, no Whoosh analyzer per call) gives the string the analyzer's tokens give."""
    from artifacts.analysis import fold, folding_analyzer, normalize_text

    texts = ["Počítačové siete: smerovanie paketov (TCP/IP) v1.2, don't — Straße in Zürich; ĽŠČŤŽÝÁÍÉ",
             "İstanbul ǅemal ﬁnance Ǆ ß ẞ Ωmega  tabs\tand\nnewlines, l’été __init__ 1,000.5", "ΟΔΟΣ..Α ΟΔΟΣ Σ",
             "e\u0301cole nai\u0308ve 日本語のテキスト", "", "....", "odkazujú", "Kráľ"]
    for text in texts:
        assert fold(text) == " ".join(t.text for t in folding_analyzer()(normalize_text(text))), text


def test_whole_text_fold_lines_up_for_every_character_outside_the_unaligned_set() -> None:
    """fold_aligned's guard is complete: every other code point folds to one character of the same class."""
    import re

    from whoosh.support.charset import accent_map

    from artifacts.analysis import UNALIGNED_CHARS, fold_aligned, folded_spans, token_spans

    word, joiners = re.compile(r"\w"), ".'’"
    for code in range(0x110000):
        char = chr(code)
        if 0xD800 <= code < 0xE000 or char in UNALIGNED_CHARS:
            continue
        folded = char.lower().translate(accent_map)
        assert len(folded) == 1, hex(code)
        assert bool(word.match(char)) == bool(word.match(folded)), hex(code)
        assert (char in joiners) == (folded in joiners), hex(code)
    text = "Počítačové SIETE: don't l’été x.y.z ÆØÅ Straße ǅemal ﬁnance"
    assert fold_aligned("Plain ASCII, Sync.md") == "plain ascii, sync.md"
    folded = fold_aligned(text)
    assert folded is not None and len(folded) == len(text)
    assert [(folded[s:e], s, e) for s, e in token_spans(text)] == list(folded_spans(text))
    for unaligned in ("İstanbul", "ΟΔΟΣ", "e\u0308"):  # two characters; context-dependent sigma; mark -> letter
        assert fold_aligned(unaligned) is None
