"""Readable results: highlighted best passages, one result per document in the CLI, commit named."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from artifacts.cli import main
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.request import SearchOptions, parse_search_request
from query.search.response import search, snippet_terms
from query.search.snippets import _token_runs, display_text, make_snippet
from tests.conftest import RepoBuilder

FILLER = " ".join(f"Úvodná veta číslo {i} hovorí o počasí a o ničom inom." for i in range(12))
LONG = (f"# Správa o sieťach\n\n{FILLER}\n\nV lete sme merali smerovanie v počítačových sieťach "
        f"a zebraplanktón v jazere; výsledky sú v tabuľke.\n\n{FILLER}\n")


def test_snippet_is_the_matching_passage_with_words_marked() -> None:
    text = LONG.split("\n\n", 1)[1]
    snippet = make_snippet(text, {"zebraplankton": 3.0, "sietach": 1.0}, {"smerov": 2.0})
    # Not the chunk start: the passage around the matches, folded forms matched with diacritics kept.
    assert not snippet.startswith("Úvodná") and snippet.startswith("… ")
    assert "**zebraplanktón**" in snippet and "**sieťach**" in snippet
    assert "**smerovanie**" in snippet  # an inflected form through the stem prefix
    assert len(snippet.replace("**", "")) < 300 and "\n" not in snippet


def test_snippet_without_a_match_is_the_chunk_start() -> None:
    text = "Prvá veta.\n\nDruhá veta, ktorá je dlhá. " * 30
    snippet = make_snippet(text, {"neexistuje": 1.0})
    assert snippet.startswith("Prvá veta. Druhá veta") and snippet.endswith(" …") and "**" not in snippet


def test_snippet_shows_the_words_a_reader_sees_not_markdown_syntax() -> None:
    text = ("## Synchronizácia\n\n> Pozri [návod na sync](https://help.obsidian.md/sync_(setup) \"t\") a "
            "[[Sync/Nastavenia synchronizácie|nastavenia]], [[Sync/Ceny]] a [[Sync#Limity]].\n\n"
            "- [ ] **Zapni** šifrovanie `end-to-end` ~~teraz~~\n\n| plán | cena |\n|---|---:|\n| Plus | 4 € |\n"
            "![Logo synchronizácie](logo.png)")
    snippet = make_snippet(text, {"sifrovanie": 2.0, "navod": 1.0})
    for syntax in ("](", "[[", "]]", "https://", "##", "> ", "[ ]", "`", "~~", "|", "---", "logo.png"):
        assert syntax not in snippet, (syntax, snippet)
    assert "**šifrovanie**" in snippet and "**návod** na sync" in snippet
    assert "nastavenia, Ceny a Sync › Limity" in snippet and "Zapni" in snippet and "Plus 4 €" in snippet
    # Arithmetic, identifiers and autolinks keep their characters; only the brackets of an autolink go.
    assert display_text("2 * 3 * 4, snake_case_name, <https://obsidian.md>") == "2 * 3 * 4, snake_case_name, https://obsidian.md"
    # hard line breaks, thematic breaks and a heading glued to its text (a Decap-CMS blog)
    blog = "## Medailonek organizace\n\nJsme Unie porodních asistentek.\\\n\n- - -\n\n## Co si odnést?\nNic.\n"
    assert make_snippet(blog, {"porodnich": 2.0}) == \
        "Medailonek organizace — Jsme Unie **porodních** asistentek. Co si odnést? Nic"
    # function words are not marked beside content words (a new user saw **pro**, **v**, **the**)
    marked = make_snippet("Datová schránka pro neziskové organizace v Česku.", {"pro": 1.0, "schranka": 3.0})
    assert "**schránka**" in marked and "**pro**" not in marked
    assert "**pro**" in make_snippet("Datová schránka pro neziskové organizace.", {"pro": 1.0})
    # ... however rare in the bundle: an English query over Czech pages finds "for" in "Code for Romania"
    english = make_snippet("Code for Romania pomáhá státu.", {"for": 5.0, "romania": 6.0, "because": 6.0})
    assert "**Romania**" in english and "**for**" not in english
    # only function words matched (stopwords-iso also lists "web"): they are why the chunk was found, so marked
    assert "**web**" in make_snippet("Nový web pro ministerstvo.", {"web": 2.9, "krizovy": 6.3})
    # raw HTML (an embedded player found by the vector arm alone) is no snippet text
    iframe = '<iframe style="border-radius:12px" src="https://open.spotify.com/embed/x" width="100%"></iframe>'
    assert make_snippet(iframe + "\n\nPodcast o dobrovolnictví.", {}) == "Podcast o dobrovolnictví."
    # a chunk that starts or ends inside a link (a new user saw "dotazník](https://docs.google.com/…)")
    cut = "pokud s ním vyplníš tento dotazník](https://docs.google.com/forms/d/e/1FAI/viewform) Na čem pracujeme"
    assert display_text(cut) == "pokud s ním vyplníš tento dotazník Na čem pracujeme"
    assert display_text("viz [tento dotazník](https://docs.goo") == "viz tento dotazník"
    # a zero-width no-break space pasted inside a word ("C\ufeffhceš") is not shown
    assert display_text("C\ufeffhceš pomoct?") == "Chceš pomoct?"


@pytest.fixture
def store(repo: RepoBuilder, tmp_path: Path) -> Path:
    repo.write("posts/siete.md",
               "---\ntitle: Siete\n---\n" + LONG + "\n## Ďalej\n\n" + FILLER + " Zebraplanktón znova.\n")
    for i in range(4):
        repo.write(f"posts/p{i}.md", f"---\ntitle: Príspevok {i}\n---\n# Príspevok {i}\n\n{FILLER}\n")
    repo.commit("posts")
    build_bundle(repo.path, tmp_path / "store", embedder="hash-64")
    return tmp_path / "store"


def test_api_results_gain_a_snippet_and_keep_text(store: Path) -> None:
    from artifacts.store import Store

    bundle = open_bundle(Store(store).current_path())
    body = search(bundle, parse_search_request({"query": "zebraplanktón sieťach", "limit": 3}), SearchOptions())
    first = body["results"][0]
    assert first["document_path"] == "posts/siete.md"
    assert "**zebraplanktón**" in first["snippet"].lower() and "Úvodná veta číslo 0" in first["text"]
    assert not first["snippet"].startswith("Úvodná veta číslo 0")
    words, _ = snippet_terms(bundle, "o zebraplanktón")
    assert "zebraplankton" in words and "o" not in words  # a word in most chunks is never marked


def test_cli_search_shows_one_result_per_document_and_names_the_commit(store: Path) -> None:
    from artifacts.store import Store

    manifest = open_bundle(Store(store).current_path(), load_model=False).manifest
    runner = CliRunner()
    env = {"GITRAG_EMBEDDER": ""} if "GITRAG_EMBEDDER" in os.environ else {}
    out = runner.invoke(main, ["search", "zebraplanktón", "--store", str(store), "--limit", "3"], env=env)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith(f'searched {manifest.commit[:12]} "posts"') and manifest.bundle_id in lines[0]
    ranked = [line for line in lines if line[:3].strip().rstrip(".").isdigit()]
    paths = [line.split()[1] for line in ranked]
    assert paths[0] == "posts/siete.md" and len(paths) == len(set(paths))  # one result per document
    assert "**zebraplanktón**" in out.output.lower()  # not a terminal: marks stay as **
    out = runner.invoke(main, ["search", "zebraplanktón", "--store", str(store), "--max-per-document", "3"])
    paths = [line.split()[1] for line in out.output.splitlines() if line[:3].strip().rstrip(".").isdigit()]
    assert paths.count("posts/siete.md") >= 2


def test_base_url_with_commit_placeholder_links_the_answering_commit(store: Path, repo: RepoBuilder) -> None:
    from artifacts.store import Store
    from query.contract import source_url

    old = open_bundle(Store(store).current_path())
    repo.write("posts/p0.md", "---\ntitle: Nový\n---\n# Nový\n\nZmenený text.\n")
    repo.commit("change")
    build_bundle(repo.path, store, embedder="hash-64")
    new = open_bundle(Store(store).current_path())
    assert old.manifest.commit != new.manifest.commit
    template = "https://git.example.org/wiki/blob/{commit}/"
    for bundle in (old, new):  # each result links the version of the commit that was searched
        body = search(bundle, parse_search_request({"query": "zebraplanktón"}), SearchOptions(base_url=template))
        assert body["results"][0]["source_url"] == \
            f"https://git.example.org/wiki/blob/{bundle.manifest.commit}/posts/siete.md"
    assert source_url("https://x.org/wiki/", "a b/č.md", "abc") == "https://x.org/wiki/a%20b/%C4%8D.md"
    assert source_url(None, "a.md", "abc") is None


def test_heading_paths_in_results_show_link_text_not_syntax(repo: RepoBuilder, tmp_path: Path) -> None:
    from artifacts.store import Store

    repo.write("news.md", "# Audioverze na [poslouchat.digital](https://poslouchat.digital)\n\n"
                          "Newsletter o zeleninovém kompotu a dobrovolnících.\n")
    repo.commit("news")
    build_bundle(repo.path, tmp_path / "store", embedder="hash-64")
    bundle = open_bundle(Store(tmp_path / "store").current_path())
    body = search(bundle, parse_search_request({"query": "zeleninovém kompotu"}), SearchOptions())
    assert body["results"][0]["heading_path"] == ["Audioverze na poslouchat.digital"]
    assert body["results"][0]["title"] == "Audioverze na poslouchat.digital"
    # a title's "|" separators are no table: kept (a newsletter "Novinky | Hledáme experty")
    repo.write("newsletter.md", '---\ntitle: "číst.digital/74: Novinky | Hledáme experty"\n---\nZeleninový kompot.\n')
    repo.commit("newsletter")
    build_bundle(repo.path, tmp_path / "store", embedder="hash-64")
    bundle = open_bundle(Store(tmp_path / "store").current_path())
    titles = [r["title"] for r in search(bundle, parse_search_request({"query": "kompot"}), SearchOptions())["results"]]
    assert "číst.digital/74: Novinky | Hledáme experty" in titles


def test_snippets_titles_and_headings_drop_escapes_and_emphasis_markers(repo: RepoBuilder, tmp_path: Path) -> None:
    """Decap-CMS posts escape punctuation (``Ty\\*ti``) and wrap quotes in ``_..._``; readers see neither."""
    from artifacts.store import Store

    # the unit rules: every CommonMark escape shows its character and is never markup itself
    assert display_text(r"Ty\*ti pracovaly\*pracovali, \# 1, \[x\], a \| b, \_\_ \\") == \
        "Ty*ti pracovaly*pracovali, # 1, [x], a | b, __ \\"
    assert display_text(r"\*not em\*, \> quote, \- item") == "*not em*, > quote, - item"
    assert display_text("__tučně__, *kurzíva*, _kurzíva_ a _„citát‘._") == "tučně, kurzíva, kurzíva a „citát‘."
    # underscores inside words stay: identifiers, file names, URLs' words
    assert display_text("snake_case_name, file_name.md, a__b__c, _a_b_") == \
        "snake_case_name, file_name.md, a__b__c, a_b"
    # an emphasis the chunk cut open: the lone opener (or closer) at a line's edge goes
    assert display_text("_„Osobne vnímam, že Jehlomat\nmá prínos.") == "„Osobne vnímam, že Jehlomat\nmá prínos."
    assert display_text("ich ‚pod kontrolou‘._\nDalší.") == "ich ‚pod kontrolou‘.\nDalší."
    assert display_text("* položka\n***\n2 * 3") == "položka\n\n2 * 3"  # list markers, rules, arithmetic

    quote = ("_„Osobne vnímam, že Jehlomat má celospoločenský prínos. Data o nálezoch injekčných odpadov "
             "budú zaznamenávané elektronicky.“_ shrnuje koordinátorka.")
    repo.write("content/posts/jehlomat.md",
               '---\ntitle: "Předání projektu \\\\*Jehlomat\\\\* a _nové_ začátky"\n---\n'
               "## Co dál s \\#Jehlomat __aplikací__?\n\n" + quote + "\n\nTy\\*ti dobrovolníci\\*dobrovolnice "
               "pracovaly\\*pracovali na mapě stříkaček v souboru data_nalezy.csv.\n")
    repo.commit("post")
    build_bundle(repo.path, tmp_path / "store", embedder="hash-64")
    bundle = open_bundle(Store(tmp_path / "store").current_path())
    for query, expected in (("injekčných odpadov", "„Osobne vnímam"), ("mapě stříkaček", "Ty*ti")):
        result = search(bundle, parse_search_request({"query": query}), SearchOptions())["results"][0]
        assert result["document_path"] == "content/posts/jehlomat.md"
        snippet = result["snippet"].replace("**", "")
        assert expected in snippet and "\\" not in snippet and "_„" not in snippet and "“_" not in snippet, snippet
        assert result["title"] == "Předání projektu *Jehlomat* a nové začátky"
        assert result["heading_path"] == ["Co dál s #Jehlomat aplikací?"]
    assert "Ty*ti dobrovolníci*dobrovolnice pracovaly*pracovali" in snippet


def test_http_search_never_shows_one_passage_of_a_document_twice(repo: RepoBuilder, tmp_path: Path,
                                                                 hash_embedder) -> None:  # type: ignore[no-untyped-def]
    """Overlapping chunks of one section cut around the same words gave two near-identical results
    (the default ``max_per_document`` is 3); the later one is dropped, distinct passages stay."""
    import asyncio

    from artifacts.store import Store
    from query.search.snippets import near_duplicate
    from tests.query.test_server import with_server

    sentences = [f"Věta číslo {i} popisuje běžný den v organizaci a nic dalšího." for i in range(70)]
    sentences[31] = "Představujeme kurz Kapybaristika, koná se v dubnu a registrovat se můžete už dnes."
    repo.write("posts/novinky.md", "---\ntitle: Novinky\n---\n# Novinky\n\n" + " ".join(sentences)
               + "\n\n## Jinde\n\n" + " ".join(sentences[:20]) + " Kurz Kapybaristika znovu, tentokrát na podzim.\n")
    for i in range(3):
        repo.write(f"posts/p{i}.md", f"---\ntitle: P{i}\n---\n# P{i}\n\nDen v organizaci číslo {i}.\n")
    repo.commit("posts")
    build_bundle(repo.path, tmp_path / "store", embedder="hash-64")
    bundle = open_bundle(Store(tmp_path / "store").current_path())
    holding = [c for c in bundle.chunks if c.path == "posts/novinky.md" and "Kapybaristika, koná" in c.text]
    assert len(holding) == 2  # the premise: the sentence sits in the overlap of two chunks of one section
    twins = [make_snippet(c.text, {"kapybaristika": 3.0}) for c in holding]
    assert near_duplicate(*twins)

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.post(base + "/search", json={"query": "kurz Kapybaristika"}) as resp:
            body = await resp.json()
        assert resp.status == 200
        ours = [r for r in body["results"] if r["document_path"] == "posts/novinky.md"]
        ids = {r["chunk_id"] for r in ours}
        assert len(ids & {c.chunk_id for c in holding}) == 1, ids  # one of the overlapping twins, not both
        assert "koná se" in " ".join(r["snippet"] for r in ours) and "na podzim" in " ".join(r["snippet"] for r in ours)
        assert not any(near_duplicate(a["snippet"], b["snippet"]) for a in ours for b in ours if a is not b)
        assert "per_document_limit" in body["truncation_reasons"]
        await asyncio.sleep(0)

    with_server(tmp_path / "store", hash_embedder, scenario)
    # the measure: word pairs, marks and case ignored; different passages of one topic are not duplicates
    assert near_duplicate("… kurz **Nezisk.Digital** – koná se 8. 4., ale registrovat se můžete už dnes! 👇 Hlásíme",
                          "… Představujeme kurz **nezisk.digital** – koná se 8. 4., ale registrovat se můžete už dnes")
    assert not near_duplicate("Akce na obzoru — Představujeme online kurz Nezisk.Digital, otevřené setkání",
                              "Představujeme kurz Nezisk.Digital – koná se 8. 4., registrovat se můžete už dnes")


def _whoosh_passage(text: str, words: dict[str, float], prefixes: dict[str, float], maxchars: int):  # type: ignore[no-untyped-def]
    """The passage Whoosh's own highlighter picks: ContextFragmenter, BasicFragmentScorer, top_fragments."""
    from whoosh.analysis import Token
    from whoosh.highlight import BasicFragmentScorer, ContextFragmenter, top_fragments

    from artifacts.analysis import folding_analyzer

    def tokens():  # type: ignore[no-untyped-def]
        for t in folding_analyzer()(text, chars=True, mode="query", removestops=False):
            weight = words.get(t.text)
            if weight is None:
                weight = next((w for p, w in prefixes.items() if t.text.startswith(p)), None)
            token = Token(positions=False, chars=True, removestops=False, mode="query")
            token.text, token.startchar, token.endchar = t.text, t.startchar, t.endchar
            token.matched, token.boost = weight is not None, weight if weight is not None else 1.0
            yield token

    fragments = ContextFragmenter(maxchars=maxchars, surround=maxchars // 3).fragment_tokens(text, tokens())
    best = top_fragments(fragments, 1, BasicFragmentScorer(), lambda f: f.startchar)
    if not best:
        return None
    return best[0].startchar, best[0].endchar, [(t.startchar, t.endchar) for t in best[0].matches]


def test_best_passage_is_the_one_whooshs_highlighter_picks() -> None:
    """The one-pass passage finder gives Whoosh's fragment, score order and ties included, on varied texts."""
    import random

    from query.search.snippets import best_passage

    rng = random.Random(15)
    vocab = ["sieť", "siete", "sieťach", "Práca", "prace", "o", "a", "zebraplanktón", "Straße", "don't", "x.y",
             "ΟΔΟΣ", "İstanbul", "HTML-Blöcke", "2026", "vlak", "vlaky", "dlhéslovo" * 12, "Obsidian", "obsidian.md",
             "e\u0308", "ab"]
    seps = [" ", " ", " ", ", ", ". ", "\n", "\n\n", " — ", "... ", "; "]
    checked = matched = 0
    for _ in range(600):
        text = "".join(rng.choice(vocab) + rng.choice(seps) for _ in range(rng.randint(0, 160)))
        words = {w: rng.choice([0.5, 1.0, 2.0, 3.0]) for w in rng.sample(["siet", "prace", "o", "zebraplankton",
                                                                           "strasse", "vlak", "obsidian"], 2)}
        prefixes = {p: 1.5 for p in rng.sample(["sie", "vla", "html", "obsid", "οδ"], rng.randint(0, 2))}
        maxchars = rng.choice([9, 40, 120, 240])
        ours = best_passage(text, words, prefixes, maxchars)
        expected = _whoosh_passage(text, words, prefixes, maxchars)
        assert (ours and (ours[0], ours[1], [(s, e) for s, e, _, _ in ours[2]])) == expected, (text, words, prefixes)
        checked += 1
        matched += expected is not None
    assert matched > 400  # most texts hold a match: the comparison is not between two Nones


def test_snippet_without_a_query_word_marks_the_passage_of_related_word_forms() -> None:
    filler = "Úvod do témy bez súvislosti, len výplňový text. " * 12
    text = f"{filler}\n\nBěhem krize jsme nasadili statické stránky a ustáli nápor.\n\n{filler}"
    # "krizový" (folded "krizovy") is not in the text and its stem prefix "krizov" starts no word: no exact match
    snippet = make_snippet(text, {"krizovy": 2.0, "web": 1.0}, {"krizov": 2.0})
    assert "**krize**" in snippet and not snippet.startswith("Úvod do témy")
    # the first 4+ letters decide nothing alone: "statistika" is no form of "statický" (words_match's rule)
    assert "**" not in make_snippet("Statistika návštěv. " * 40, {"staticky": 1.0})
    # function words never relate, and without any related word the snippet is still the chunk start
    assert make_snippet(text, {"neexistuje": 1.0}).startswith("Úvod do témy")


@pytest.fixture
def meaning_store(repo: RepoBuilder, tmp_path: Path) -> Path:
    filler = "Výplňový odstavec o ničom konkrétnom, aby kúsok textu bol dlhší. " * 10
    repo.write("krizovy-web.md", "---\ntitle: Krizový web za pár hodin\n---\n"
               "Postavili jsme krizový web pro ministerstvo.\n")
    repo.write("nasazeni.md", f"---\ntitle: Nasazení\n---\n{filler}\n\nBěhem krize jsme web nasadili do cloudu, "
               f"stránky ustály nápor.\n\n{filler}\n")
    repo.write("kody.md", "---\ntitle: Zdrojové kódy\n---\nPlugin a skript jsme publikovali na GitHub.\n")
    repo.commit("posts")
    build_bundle(repo.path, tmp_path / "store", embedder="hash-64")
    return tmp_path / "store"


def test_results_say_which_arm_found_them_and_vector_only_hits_show_related_passages(meaning_store: Path) -> None:
    from artifacts.store import Store

    bundle = open_bundle(Store(meaning_store).current_path())
    request = parse_search_request({"query": "krizový", "limit": 10, "debug": True})
    results = {r["document_path"]: r for r in search(bundle, request, SearchOptions())["results"]}
    for result in results.values():  # match is what the two arms' ranks say
        arms = result["debug"]
        expected = {(True, True): "both", (True, False): "lexical", (False, True): "semantic"}[
            (arms["bm25_rank"] is not None, arms["vector_rank"] is not None)]
        assert result["match"] == expected
    assert results["krizovy-web.md"]["match"] in ("both", "lexical")
    assert "**krizový**" in results["krizovy-web.md"]["snippet"]
    # BM25 finds no "krizový" (nor a word starting with "krizov") in these two: the vector arm alone found them
    related = results["nasazeni.md"]
    assert related["match"] == "semantic" and related["debug"]["bm25_rank"] is None
    assert "**krize**" in related["snippet"] and not related["snippet"].startswith("Výplňový")
    unrelated = results["kody.md"]
    assert unrelated["match"] == "semantic" and unrelated["snippet"] == "Plugin a skript jsme publikovali na GitHub."
    runner = CliRunner()
    env = {"GITRAG_EMBEDDER": ""} if "GITRAG_EMBEDDER" in os.environ else {}
    out = runner.invoke(main, ["search", "krizový", "--store", str(meaning_store), "--limit", "10"], env=env)
    assert out.exit_code == 0, out.output
    lines = {line.split()[1]: line for line in out.output.splitlines() if line[:3].strip().rstrip(".").isdigit()}
    assert lines["kody.md"].endswith("(matched by meaning)")
    assert "matched by meaning" not in lines["krizovy-web.md"]


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet="abcé _.'’-\n", max_size=60),
       starts=st.lists(st.from_regex(r"\A[abcé](?:[abcé]|[.'’][abcé])*\Z").filter(lambda w: len(w) <= 5),
                       min_size=1, max_size=5))
def test_token_runs_are_the_token_starting_matches_of_the_alternation_pattern(text: str, starts: list[str]) -> None:
    """_token_runs finds, without compiling a pattern per query, the matches of the alternation regex it
    replaced that start a token (the ones the snippet code judged)."""
    alternatives = "|".join(re.escape(w) for w in sorted(set(starts), key=len, reverse=True))
    pattern = re.compile(rf"(?:{alternatives})\w*(?:[.'’]\w+)*")

    def starts_token(i: int) -> bool:
        return not i or not (re.match(r"\w", text[i - 1]) or (
            i > 1 and text[i - 1] in ".'’" and re.match(r"\w", text[i - 2])))

    expected = [m.span() for m in pattern.finditer(text) if starts_token(m.start())]
    assert _token_runs(text, tuple(starts)) == expected
